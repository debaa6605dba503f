// The machine agent (API.md 8.5): trades a worker bootstrap's one-time token for a machine
// credential once (`POST /v1/machine_joins`), keeps the credential before doing anything else (so a
// restarted agent never needs the used token), then heartbeats (`POST /v1/machine_heartbeats`) as
// often as the service says. It is the core of `svc machine join` and of the `local` compute
// provider's simulated servers, so it imports nothing of the server (no Fastify, Kysely, drivers):
// the CLI must start fast. The transport, the timers and where the credential is kept are given.
//
// - Unreachable service (network error, timeout, 5xx, a rate limit): retried with capped
//   exponential backoff with jitter, logged once per attempt, "connection regained" after.
// - A heartbeat refused with 401 (MACHINE_DELETED, MACHINE_CREDENTIAL_REVOKED, an unknown
//   credential): the credential is forgotten and the agent stops with the service's message.
// - A join refused (JOIN_TOKEN_REJECTED, a full quota, a cluster being deleted): it stops.
// - The signal (SIGTERM, SIGINT): a request in flight is finished (a join's credential is still
//   kept), no new one starts, and the agent returns `stopped`.
import { clock } from '../platform/clock.js';
import type { MachineFactsT, MachineHeartbeatT, MachineJoinT } from '../modules/machines/machines.schemas.js';
import { fileCredentialStore, type CredentialStore, type SavedCredential } from './credential-store.js';
import { hostFacts } from './facts.js';
import { backoffDelay, callService, type AgentFetch, type Answer, type Ok, type Refused } from './transport.js';

export type { AgentFetch } from './transport.js';
export type { CredentialStore, SavedCredential } from './credential-store.js';

/** One line per thing the agent does; pino's logger fits, the CLI gives a plain-text one. */
export interface AgentLogger {
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}

export interface AgentTimers {
  /** resolves after `ms`, or at once when `signal` aborts (never rejects) */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  nowMs(): number;
  /** in [0, 1): the jitter of the backoff */
  random(): number;
}

export interface MachineAgentOptions {
  /** the service's base URL (`https://svc.example.com`) */
  server: string;
  /** the one-time join token (`svcb_...`); needed only when no credential is kept yet */
  token?: string;
  /** a machine credential to use as it is (nothing is read or saved then, unless `store` is given) */
  credential?: string;
  /** where `<stateDir>/credential` is kept (see credential-store.ts) */
  stateDir?: string;
  /** where the credential is kept, instead of a state dir (the local compute provider's database row) */
  store?: CredentialStore;
  fetch: AgentFetch;
  logger: AgentLogger;
  /** aborted on SIGTERM/SIGINT (or by the provider): the agent finishes its request in flight and returns */
  signal: AbortSignal;
  /** heartbeat this often instead of what the service says (tests, benchmarks) */
  heartbeatSeconds?: number;
  /** the facts reported (default: this host's, from node:os) */
  facts?: () => MachineFactsT;
  timers?: Partial<AgentTimers>;
  /** first retry after about `initialMs`, doubling up to `maxMs` (default 1 s to 60 s) */
  backoff?: { initialMs?: number; maxMs?: number };
  /** a request unanswered for this long counts as the service being unreachable (default 30 s) */
  requestTimeoutMs?: number;
  /** called after every answered heartbeat (the local provider renews its lease here) */
  onHeartbeat?: (beat: MachineHeartbeatT) => void | Promise<void>;
}

/** Why the agent stopped. */
export type AgentOutcome =
  | { kind: 'stopped' }
  /** a heartbeat was refused: the machine was deleted, the credential revoked or unknown; the credential was forgotten */
  | { kind: 'credential_refused'; reason: string; message: string; machineId: string | null }
  /** the join was refused: token unknown, used, revoked or expired, a full quota, a cluster being deleted */
  | { kind: 'join_refused'; status: number; reason: string | null; message: string };

/** Raised for what the agent cannot work without (no credential and no token, an unreadable state dir). */
export class AgentSetupError extends Error {
  /** `missingToken`: nothing to authenticate with (a usage error of the command) */
  constructor(message: string, readonly missingToken = false) {
    super(message);
    this.name = 'AgentSetupError';
  }
}

const DEFAULT_INTERVAL_S = 15;

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

export async function runMachineAgent(opts: MachineAgentOptions): Promise<AgentOutcome> {
  const timers: AgentTimers = { sleep: abortableSleep, nowMs: () => clock.nowMs(), random: Math.random, ...opts.timers };
  const { logger, signal } = opts;
  const facts = opts.facts ?? hostFacts;
  const store = opts.store ?? (opts.stateDir !== undefined ? fileCredentialStore(opts.stateDir) : null);
  const initialMs = opts.backoff?.initialMs ?? 1000;
  const maxMs = opts.backoff?.maxMs ?? 60_000;
  const timeoutMs = opts.requestTimeoutMs ?? 30_000;
  const call = (path: string, body: unknown, credential?: string) => callService(opts.fetch, opts.server, path, body, credential, timeoutMs);

  /**
   * Calls until the service answers (a refusal `retryRefusal` does not want retried, or success);
   * null when the signal stopped the wait. Each failed attempt is one log line saying when the next one is.
   */
  async function untilAnswered(what: string, send: () => Promise<Answer>, retryRefusal: (a: Refused) => boolean): Promise<Ok | Refused | null> {
    let failures = 0;
    let downSince = 0;
    for (;;) {
      if (signal.aborted) return null;
      const answer = await send();
      if (answer.kind === 'ok' || (answer.kind === 'refused' && !retryRefusal(answer))) {
        if (failures > 0) logger.info({ attempts: failures + 1 }, `connection regained: ${what} answered after ${failures + 1} attempts (${seconds(timers.nowMs() - downSince)} without the service)`);
        return answer;
      }
      if (failures === 0) downSince = timers.nowMs();
      failures++;
      const delay = backoffDelay(failures, initialMs, maxMs, timers.random(), answer.kind === 'unreachable' ? answer.retryAfterMs : null);
      const why = answer.kind === 'unreachable' ? answer.why : `${answer.status} ${answer.message}`;
      const line = failures === 1 ? `connection lost: ${what} failed (${why}); retrying in ${seconds(delay)}` : `still without the service: ${what} failed (${why}); retry ${failures} in ${seconds(delay)}`;
      logger.warn({ attempt: failures, retry_in_ms: delay }, line);
      await timers.sleep(delay, signal);
    }
  }

  // ---- the credential: given, kept, or traded for the token once ----
  let saved: SavedCredential | null = opts.credential ? { server: opts.server, machine_id: null, credential: opts.credential } : null;
  if (!saved && store) {
    try {
      saved = await store.load();
    } catch (err) {
      throw new AgentSetupError(`cannot read the machine credential: ${(err as Error).message}`);
    }
    if (saved) logger.info({ machine_id: saved.machine_id }, `using the machine credential kept in ${store.where}${saved.machine_id ? ` (machine ${saved.machine_id})` : ''}; no join token needed`);
  }
  let machineId: string | null = saved?.machine_id ?? null;
  let interval = opts.heartbeatSeconds ?? DEFAULT_INTERVAL_S;
  /** the facts the service has, as JSON: a heartbeat sends them again only when they change */
  let reported: string | null = null;
  if (!saved) {
    if (!opts.token) throw new AgentSetupError(`no machine credential${store ? ` in ${store.where}` : ''} and no join token: give the token of a worker bootstrap`, true);
    const token = opts.token;
    // A state dir that cannot hold the credential is found out before the token is spent.
    try {
      await store?.prepare?.();
    } catch (err) {
      throw new AgentSetupError(`cannot keep a machine credential in ${store!.where}: ${(err as Error).message}`);
    }
    const joinFacts = facts();
    logger.info({ server: opts.server }, `joining ${opts.server} as ${joinFacts.hostname}`);
    // A 4xx other than a rate limit is the service's final word on this token.
    const answer = await untilAnswered('join', () => call('/v1/machine_joins', { token, facts: joinFacts }), () => false);
    if (!answer) return stopped();
    if (answer.kind === 'refused') {
      logger.error({ status: answer.status, reason: answer.reason }, `join refused: ${answer.message}`);
      return { kind: 'join_refused', status: answer.status, reason: answer.reason, message: answer.message };
    }
    const joined = answer.body as MachineJoinT;
    if (typeof joined.credential !== 'string' || typeof joined.machine_id !== 'string') throw new AgentSetupError('the service answered the join without a machine credential');
    saved = { server: opts.server, machine_id: joined.machine_id, credential: joined.credential };
    // Kept before anything else, also when stopping: the token is spent now.
    if (store) {
      try {
        await store.save(saved);
      } catch (err) {
        throw new AgentSetupError(`joined as ${joined.machine_id}, but the credential could not be kept in ${store.where}: ${(err as Error).message}`);
      }
    }
    reported = JSON.stringify(joinFacts);
    if (opts.heartbeatSeconds === undefined) interval = joined.heartbeat_interval_seconds;
    logger.info({ machine_id: joined.machine_id, cluster_id: joined.cluster_id, node_name: joined.node_name }, `joined as ${joined.machine_id}: node ${joined.node_name} of cluster ${joined.cluster_id}${store ? `; credential kept in ${store.where}` : ''}`);
  }
  const credential = saved.credential;
  machineId = saved.machine_id;

  // ---- heartbeats ----
  let last: MachineHeartbeatT | null = null;
  for (;;) {
    if (signal.aborted) return stopped();
    const startedAt = timers.nowMs();
    const now = facts();
    const nowJson = JSON.stringify(now);
    const body = nowJson === reported ? {} : { facts: now };
    // Only a 401 ends the agent; any other refusal (a proxy's 404, a 400 from a version mismatch) is retried.
    const answer = await untilAnswered('heartbeat', () => call('/v1/machine_heartbeats', body, credential), (a) => a.status !== 401);
    if (!answer) return stopped();
    if (answer.kind === 'refused') {
      const reason = answer.reason ?? 'UNAUTHENTICATED';
      const what = reason === 'MACHINE_DELETED' ? 'the machine was deleted' : reason === 'MACHINE_CREDENTIAL_REVOKED' ? 'the machine credential was revoked' : 'the service does not know this machine credential';
      await store?.remove().catch((err: Error) => logger.warn({}, `could not remove ${store.where}: ${err.message}`));
      logger.error({ machine_id: machineId, reason }, `stopping: ${what} (${answer.message})${store ? `; forgot the credential in ${store.where}` : ''}`);
      return { kind: 'credential_refused', reason, message: answer.message, machineId };
    }
    const beat = answer.body as MachineHeartbeatT;
    reported = nowJson;
    if (opts.heartbeatSeconds === undefined && beat.heartbeat_interval_seconds !== interval) {
      if (last) logger.info({ interval_seconds: beat.heartbeat_interval_seconds }, `heartbeat interval now ${beat.heartbeat_interval_seconds} s`);
      interval = beat.heartbeat_interval_seconds;
    }
    if (!last) {
      machineId = beat.machine_id;
      logger.info({ machine_id: beat.machine_id, state: beat.state, schedulable: beat.schedulable }, `heartbeating every ${interval} s: machine ${beat.machine_id} is ${beat.state}${beat.schedulable ? '' : ', cordoned'}`);
    } else {
      if (beat.state !== last.state) logger.info({ machine_id: beat.machine_id, state: beat.state }, `machine ${beat.machine_id} is now ${beat.state} (was ${last.state})`);
      if (beat.schedulable !== last.schedulable) {
        logger.info({ machine_id: beat.machine_id, schedulable: beat.schedulable }, beat.schedulable ? 'uncordoned: new work may land on this machine again' : 'cordoned: no new work lands on this machine');
      }
    }
    last = beat;
    await opts.onHeartbeat?.(beat);
    // Within [0, interval]: a clock moved back (tests move it) must not stall the heartbeats.
    await timers.sleep(Math.min(interval * 1000, Math.max(0, startedAt + interval * 1000 - timers.nowMs())), signal);
  }

  function stopped(): AgentOutcome {
    logger.info({ machine_id: machineId ?? null }, 'stopped: signal received');
    return { kind: 'stopped' };
  }
}
