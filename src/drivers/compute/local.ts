// The `local` compute provider (the default, API.md 8.5): a server is a row of `local_servers`, and
// "booting" it runs the machine agent (src/machine-agent/agent.ts) inside the service process,
// which joins with the token of the server's cloud-init user data like any other machine. What a
// real server keeps on its disk is kept sealed on the row: the user data, then the credential the
// agent was given. The agent reaches the service through a transport given at creation (the
// composition root's in-process API) or later (`attach`, for tests), e.g. one over app.inject, so no
// listening socket is needed.
//
// A server's agent runs in exactly one process: the row carries a lease (`lease_owner`,
// `lease_expires_at` in ms). A process takes a powered-on server only when its lease is free or
// expired, with one conditional update, and renews the leases of the agents it runs on every
// re-check (one update for all); a lease it finds lost (the server was powered off, deleted or
// taken elsewhere) stops its agent there. So when an instance dies, another picks its servers up
// within a lease and a re-check. Only a started provider runs agents: one in a process that never
// calls start() (a worker-only process) creates and powers on servers but leaves their leases free.
import { hostname } from 'node:os';
import pino, { type Logger } from 'pino';
import type { Db } from '../../db/database.js';
import { runMachineAgent, type AgentFetch, type AgentOutcome, type CredentialStore, type MachineAgentOptions } from '../../machine-agent/agent.js';
import { clock } from '../../platform/clock.js';
import { randomString } from '../../platform/crypto.js';
import { newId } from '../../platform/ids.js';
import { svcVersion } from '../../platform/version.js';
import type { Keyring } from '../../platform/keyring.js';
import { ComputeProviderError, type ComputeProvider, type CreateServerRequest, type ServerInfo } from './driver.js';
import { joinCommandFromUserData } from './user-data.js';

export { joinCommandFromUserData } from './user-data.js';

/** The simulated servers' sizes: what their agents report as facts. */
export const LOCAL_INSTANCE_TYPES = {
  'local-small': { cpu_count: 1, memory_bytes: 2 * 2 ** 30 },
  'local-medium': { cpu_count: 2, memory_bytes: 4 * 2 ** 30 },
  'local-large': { cpu_count: 4, memory_bytes: 8 * 2 ** 30 },
} as const;

/** Where the sealed columns of a local server are sealed (rotate-keys re-seals them). */
export const LOCAL_SERVER_SEALS = {
  userData: { context: (id: string) => `local-server:${id}:user-data`, legacyPurpose: undefined },
  credential: { context: (id: string) => `local-server:${id}:credential`, legacyPurpose: undefined },
} as const;

export interface LocalComputeOptions {
  db: Db;
  keyring: Keyring;
  /** the provider's and its agents' log (or given to attach(), when the process logger comes later) */
  logger?: Logger;
  /** the transport the agents call the service through; without it they wait for attach() */
  transport?: { fetch: AgentFetch };
  /** the service the agents join when the user data names none */
  publicUrl: string;
  /** this process in leases (default host:pid:random) */
  instanceId?: string;
  /** how long a lease lasts unrenewed (default 30 s) */
  leaseMs?: number;
  /** how often leases are renewed and free ones taken (default 10 s) */
  recheckMs?: number;
  /** passed to every agent (tests shorten its waits) */
  agent?: Pick<MachineAgentOptions, 'heartbeatSeconds' | 'backoff' | 'timers' | 'requestTimeoutMs'>;
}

export interface LocalComputeProvider extends ComputeProvider {
  readonly instanceId: string;
  /** the transport the agents call the service through (and the log, if not given before); agents wait for it before their first call */
  attach(transport: { fetch: AgentFetch; logger?: Logger }): void;
  /** boots the powered-on servers whose lease is free or expired, then re-checks every `recheckMs` */
  start(): Promise<void>;
  /** renews the leases of this process's agents, stops those whose lease was lost, takes free ones */
  recheck(): Promise<void>;
  /** stops every agent here (each finishes its request in flight) and frees their leases */
  stop(): Promise<void>;
  /** ids of the servers whose agents this process runs (also those whose agent stopped by itself) */
  running(): string[];
}

interface Running {
  controller: AbortController;
  done: Promise<void>;
  /** the agent stopped by itself (its machine was deleted, its join refused): the lease is kept, nothing restarts it */
  outcome: AgentOutcome | null;
}

const statusOf = (power: string): ServerInfo['status'] => (power === 'on' ? 'running' : 'off');

export function createLocalComputeProvider(opts: LocalComputeOptions): LocalComputeProvider {
  const { db, keyring } = opts;
  let logger = opts.logger ?? pino({ level: 'silent' });
  const instanceId = opts.instanceId ?? `${hostname()}:${process.pid}:${randomString(6)}`;
  const leaseMs = opts.leaseMs ?? 30_000;
  const recheckMs = opts.recheckMs ?? 10_000;
  const agents = new Map<string, Running>();
  let transport: { fetch: AgentFetch } | null = opts.transport ?? null;
  let attached: () => void = () => undefined;
  const ready = transport ? Promise.resolve() : new Promise<void>((resolve) => (attached = resolve));
  let timer: NodeJS.Timeout | null = null;
  let rechecking: Promise<void> | null = null;
  let stopping = false;
  /** start() was called: only then does this process run agents (and renew their leases) */
  let started = false;

  /** The server's kept credential, as a real server keeps it on its disk. */
  function rowStore(id: string): CredentialStore {
    const seal = LOCAL_SERVER_SEALS.credential;
    return {
      where: `local server ${id}`,
      async load() {
        const row = await db.selectFrom('local_servers').select('credential_sealed').where('id', '=', id).executeTakeFirst();
        return row?.credential_sealed ? JSON.parse(keyring.open(row.credential_sealed, seal.context(id))) : null;
      },
      async save(saved) {
        await db.updateTable('local_servers').set({ credential_sealed: keyring.seal(JSON.stringify(saved), seal.context(id)) }).where('id', '=', id).execute();
      },
      async remove() {
        await db.updateTable('local_servers').set({ credential_sealed: null }).where('id', '=', id).execute();
      },
    };
  }

  /** Runs the server's agent here; the caller holds its lease. */
  function boot(id: string): void {
    if (agents.has(id) || stopping || !started) return;
    const controller = new AbortController();
    const entry: Running = { controller, outcome: null, done: Promise.resolve() };
    agents.set(id, entry);
    // Only this boot's entry: a server powered off and on again has a new one.
    const forget = () => { if (agents.get(id) === entry) agents.delete(id); };
    entry.done = (async () => {
      const row = await db.selectFrom('local_servers').selectAll().where('id', '=', id).executeTakeFirst();
      if (!row) return forget();
      const { server, token } = joinCommandFromUserData(keyring.open(row.user_data_sealed, LOCAL_SERVER_SEALS.userData.context(id)));
      const size = LOCAL_INSTANCE_TYPES[row.instance_type as keyof typeof LOCAL_INSTANCE_TYPES] ?? LOCAL_INSTANCE_TYPES['local-small'];
      // Checked as the agent's MachineFacts where runMachineAgent takes them (a driver names no module's schema).
      const facts = { hostname: row.name, os: 'linux', arch: 'x64', ...size, kernel: '6.1.0-svc-local', agent_version: svcVersion() };
      // No transport yet: wait for attach(), or for a stop.
      await Promise.race([ready, new Promise((resolve) => controller.signal.addEventListener('abort', resolve, { once: true }))]);
      if (controller.signal.aborted) return forget();
      const log = logger.child({ local_server_id: id });
      log.info(`local server ${row.name} booted: its machine agent starts`);
      const outcome = await runMachineAgent({
        ...opts.agent,
        server: server ?? opts.publicUrl,
        token: token ?? undefined,
        store: rowStore(id),
        fetch: (url, init) => transport!.fetch(url, init),
        logger: log,
        signal: controller.signal,
        facts: () => facts,
      });
      if (outcome.kind === 'stopped') forget();
      else entry.outcome = outcome;
    })().catch((err: Error) => {
      // Its lease is no longer renewed: after it expires the server boots again (here or elsewhere).
      forget();
      logger.error({ err, local_server_id: id }, `local server ${id}: its machine agent failed; it boots again once its lease expires`);
    });
  }

  async function halt(id: string): Promise<void> {
    const entry = agents.get(id);
    if (!entry) return;
    entry.controller.abort();
    await entry.done;
    if (agents.get(id) === entry) agents.delete(id);
  }

  /** Takes the server's lease if it is powered on and its lease free or expired; true when taken. */
  async function claim(id: string, now: number): Promise<boolean> {
    const res = await db.updateTable('local_servers')
      .set({ lease_owner: instanceId, lease_expires_at: now + leaseMs })
      .where('id', '=', id).where('power', '=', 'on')
      .where((eb) => eb.or([eb('lease_owner', 'is', null), eb('lease_expires_at', '<', now)]))
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  async function recheckOnce(): Promise<void> {
    const now = clock.nowMs();
    const mine = [...agents.keys()];
    if (mine.length > 0) {
      const kept = new Set((await db.updateTable('local_servers').set({ lease_expires_at: now + leaseMs })
        .where('lease_owner', '=', instanceId).where('power', '=', 'on').where('id', 'in', mine)
        .returning('id').execute()).map((r) => r.id));
      for (const id of mine.filter((m) => !kept.has(m))) {
        logger.info({ local_server_id: id }, `local server ${id} was powered off, deleted or taken by another instance: its agent stops here`);
        await halt(id);
      }
    }
    if (stopping) return;
    const free = await db.selectFrom('local_servers').select('id').where('power', '=', 'on')
      .where((eb) => eb.or([eb('lease_owner', 'is', null), eb('lease_expires_at', '<', now)]))
      .orderBy('id').limit(100).execute();
    for (const { id } of free) if (!agents.has(id) && (await claim(id, now))) boot(id);
  }

  const recheck = () => (rechecking ??= recheckOnce().finally(() => { rechecking = null; }));

  async function findServer(serverId: string) {
    return db.selectFrom('local_servers').select(['id', 'power']).where('id', '=', serverId).executeTakeFirst();
  }

  return {
    name: 'local',
    instanceTypes: Object.keys(LOCAL_INSTANCE_TYPES),
    instanceId,

    async createServer(req: CreateServerRequest, ctx): Promise<ServerInfo> {
      if (!(req.instanceType in LOCAL_INSTANCE_TYPES)) {
        throw new ComputeProviderError(`instance type ${req.instanceType} is not offered by the local provider (${Object.keys(LOCAL_INSTANCE_TYPES).join(', ')})`, false);
      }
      if (!joinCommandFromUserData(req.userData).token) throw new ComputeProviderError('the user data holds no `svc machine join` token for the local server to join with', false);
      const existing = await this.findServer(req.machineId, ctx);
      if (existing) return existing;
      const id = newId('localServer');
      await db.insertInto('local_servers').values({
        id, machine_id: req.machineId, name: req.name, instance_type: req.instanceType, power: 'on',
        user_data_sealed: keyring.seal(req.userData, LOCAL_SERVER_SEALS.userData.context(id)), credential_sealed: null,
        // Not started here (a worker-only process): left free, an instance that runs agents boots it at its next re-check.
        lease_owner: started ? instanceId : null, lease_expires_at: started ? clock.nowMs() + leaseMs : null, created_at: clock.now(),
      }).onConflict((oc) => oc.column('machine_id').doNothing()).execute();
      // A concurrent call for the same machine may have won: report the one row there is.
      const row = await db.selectFrom('local_servers').select(['id', 'power']).where('machine_id', '=', req.machineId).executeTakeFirstOrThrow();
      if (row.id === id) boot(id);
      return { serverId: row.id, status: statusOf(row.power) };
    },

    async findServer(machineId) {
      const row = await db.selectFrom('local_servers').select(['id', 'power']).where('machine_id', '=', machineId).executeTakeFirst();
      return row ? { serverId: row.id, status: statusOf(row.power) } : null;
    },

    async getServer(serverId) {
      const row = await findServer(serverId);
      return { serverId, status: row ? statusOf(row.power) : 'gone' };
    },

    async powerOff(serverId) {
      if (!(await findServer(serverId))) throw new ComputeProviderError(`local server ${serverId} does not exist`, false);
      await db.updateTable('local_servers').set({ power: 'off', lease_owner: null, lease_expires_at: null }).where('id', '=', serverId).execute();
      // Here at once; an agent running in another instance stops at that one's next re-check.
      await halt(serverId);
    },

    async powerOn(serverId) {
      if (!(await findServer(serverId))) throw new ComputeProviderError(`local server ${serverId} does not exist`, false);
      await db.updateTable('local_servers').set({ power: 'on' }).where('id', '=', serverId).where('power', '=', 'off').execute();
      if (started && (await claim(serverId, clock.nowMs()))) boot(serverId);
    },

    async deleteServer(serverId) {
      await halt(serverId);
      await db.deleteFrom('local_servers').where('id', '=', serverId).execute();
    },

    attach(t) {
      transport = t;
      if (t.logger) logger = t.logger;
      attached();
    },

    async start() {
      stopping = false;
      started = true;
      await recheck();
      timer ??= setInterval(() => void recheck().catch((err: Error) => logger.warn({ err }, 'local servers: re-check failed')), recheckMs);
      timer.unref();
    },

    recheck,

    async stop() {
      stopping = true;
      started = false;
      if (timer) clearInterval(timer);
      timer = null;
      await rechecking;
      const ids = [...agents.keys()];
      await Promise.all(ids.map(halt));
      // Freed at once, so another instance boots them without waiting for the leases to expire.
      if (ids.length) await db.updateTable('local_servers').set({ lease_owner: null, lease_expires_at: null }).where('lease_owner', '=', instanceId).where('id', 'in', ids).execute();
    },

    running: () => [...agents.keys()],
  };
}
