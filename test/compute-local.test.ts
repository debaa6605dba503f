// The `local` compute provider (src/drivers/compute/local.ts) over the test database: a server is a
// row whose machine agent runs in-process and joins with the token of its user data, its
// credential kept sealed on the row; power off stops the agent, power on starts it again with the
// kept credential; a lease makes one process run each agent, and a dead instance's servers are
// taken over once their leases expire. The agents call a stand-in of the two agent routes over
// HTTP (machine-agent-standin.ts); machines-local.test.ts runs them against the real routes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import pino from 'pino';
import { createLocalComputeProvider, joinCommandFromUserData, type LocalComputeProvider } from '../src/drivers/compute/local.js';
import { cloudInit, joinCommand } from '../src/modules/machines/join-tokens.js';
import { ComputeProviderError } from '../src/drivers/compute/driver.js';
import { clock } from '../src/platform/clock.js';
import { Keyring } from '../src/platform/keyring.js';
import { rotateKeys } from '../src/modules/secrets/rotate-keys.js';
import { startTestApp, type TestApp } from './harness.js';
import { AgentRoutesStandIn } from './machine-agent-standin.js';

const ctx = { signal: new AbortController().signal };
const LEASE_MS = 60_000;

let t: TestApp;
let routes: AgentRoutesStandIn;
let url: string;
const providers: LocalComputeProvider[] = [];

before(async () => {
  t = await startTestApp();
  routes = new AgentRoutesStandIn();
  url = await routes.start();
});
after(async () => {
  for (const p of providers) await p.stop();
  clock.offsetMs = 0;
  await routes.close();
  await t.close();
});

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(10);
  }
}

/** A provider over the test database whose agents heartbeat every 50 ms; `attached: false` is an instance that never runs them. */
function provider(opts: { attached?: boolean; keyring?: Keyring } = {}): LocalComputeProvider {
  const p = createLocalComputeProvider({
    db: t.services.db, keyring: opts.keyring ?? t.services.keyring, logger: pino({ level: 'silent' }), publicUrl: 'http://unused.test',
    leaseMs: LEASE_MS, recheckMs: 3_600_000, agent: { heartbeatSeconds: 0.05, backoff: { initialMs: 10, maxMs: 50 } },
  });
  if (opts.attached !== false) p.attach({ fetch });
  providers.push(p);
  return p;
}

/** A provider that runs agents (started; it re-checks only when a test says). */
async function started(opts: Parameters<typeof provider>[0] = {}): Promise<LocalComputeProvider> {
  const p = provider(opts);
  await p.start();
  return p;
}

let machines = 0;
function request(token = routes.newToken()) {
  const machineId = `mch_local${++machines}`;
  const userData = cloudInit({ agentCommand: 'svc', server: `${url}/` }, token);
  return { machineId, name: `svc-${machineId}`, instanceType: 'local-small', userData, token };
}

/** A server created through `p`, once its agent joined: the server, the request and the stand-in's machine. */
async function booted(p: LocalComputeProvider) {
  const req = request();
  const { serverId } = await p.createServer(req, ctx);
  let machine: AgentRoutesStandIn['machines'][number] | undefined;
  await until('the machine joined', () => Boolean(machine = routes.machines.find((m) => m.token === req.token)));
  return { serverId, req, machine: machine! };
}

const row = (id: string) => t.services.db.selectFrom('local_servers').selectAll().where('id', '=', id).executeTakeFirst();
const beatsOf = (credential: string) => routes.requests.filter((r) => r.path === '/v1/machine_heartbeats' && r.authorization === `Bearer ${credential}`).length;

describe('local compute provider', () => {
  test('a created server boots an agent that joins with its user data\'s token; its credential is kept sealed on the row', async () => {
    const p = await started();
    const req = request();
    const joinsBefore = routes.count('/v1/machine_joins');
    const server = await p.createServer(req, ctx);
    assert.equal(server.status, 'running');
    await until('the machine joined', () => routes.usedTokens.has(req.token));
    const machine = routes.machines.find((m) => m.token === req.token)!;
    await until('two heartbeats', () => beatsOf(machine.credential) >= 2);
    const join = routes.requests.filter((r) => r.path === '/v1/machine_joins').at(-1)!;
    assert.deepEqual(join.body.facts, { hostname: req.name, os: 'linux', arch: 'x64', cpu_count: 1, memory_bytes: 2 ** 31, kernel: '6.1.0-svc-local', agent_version: join.body.facts.agent_version });

    const stored = (await row(server.serverId))!;
    assert.equal(stored.machine_id, req.machineId);
    assert.equal(stored.lease_owner, p.instanceId);
    assert.ok(stored.credential_sealed && !stored.credential_sealed.includes(machine.credential));
    assert.ok(!stored.user_data_sealed.includes(req.token));
    assert.equal(JSON.parse(t.services.keyring.open(stored.credential_sealed, `local-server:${server.serverId}:credential`)).credential, machine.credential);

    // Idempotent by machine: the same server, no second row, agent or join.
    assert.deepEqual(await p.createServer(req, ctx), { serverId: server.serverId, status: 'running' });
    assert.deepEqual(p.running(), [server.serverId]);
    assert.equal(routes.count('/v1/machine_joins'), joinsBefore + 1);
    assert.deepEqual(await p.getServer(server.serverId, ctx), { serverId: server.serverId, status: 'running' });
    await p.deleteServer(server.serverId, ctx);
  });

  test('power off stops the agent; power on starts it again with the kept credential, without a second join', async () => {
    const p = await started();
    const { serverId, machine } = await booted(p);
    await until('a heartbeat', () => beatsOf(machine.credential) >= 1);
    await p.powerOff(serverId, ctx);
    await p.powerOff(serverId, ctx);
    assert.deepEqual(p.running(), []);
    assert.deepEqual(await p.getServer(serverId, ctx), { serverId, status: 'off' });
    assert.equal((await row(serverId))!.lease_owner, null);
    const joins = routes.count('/v1/machine_joins');
    const beats = beatsOf(machine.credential);
    await p.powerOn(serverId, ctx);
    await p.powerOn(serverId, ctx);
    assert.deepEqual(p.running(), [serverId]);
    await until('heartbeats again', () => beatsOf(machine.credential) > beats);
    assert.equal(routes.count('/v1/machine_joins'), joins);
    await p.deleteServer(serverId, ctx);
    assert.deepEqual(p.running(), []);
    assert.deepEqual(await p.getServer(serverId, ctx), { serverId, status: 'gone' });
    await p.deleteServer(serverId, ctx);
    await assert.rejects(p.powerOn(serverId, ctx), (err: ComputeProviderError) => err instanceof ComputeProviderError && !err.retryable);
  });

  test('a dead instance\'s server is taken over once its lease expired, by one instance only', async () => {
    const dead = await started({ attached: false });
    const req = request();
    const { serverId } = await dead.createServer(req, ctx);
    const [b, c] = await Promise.all([started(), started()]);
    await Promise.all([b.recheck(), c.recheck()]);
    assert.deepEqual([...b.running(), ...c.running()], [], 'the lease is still held');
    clock.offsetMs += LEASE_MS + 1000;
    try {
      await Promise.all([b.recheck(), c.recheck()]);
    } finally {
      clock.offsetMs -= LEASE_MS + 1000;
    }
    const owners = [b, c].filter((p) => p.running().includes(serverId));
    assert.equal(owners.length, 1);
    assert.equal((await row(serverId))!.lease_owner, owners[0]!.instanceId);
    await until('the machine joined', () => routes.usedTokens.has(req.token));

    // Powered off through another instance: the owner stops its agent at its next re-check.
    await dead.powerOff(serverId, ctx);
    await owners[0]!.recheck();
    assert.deepEqual(owners[0]!.running(), []);
    await dead.deleteServer(serverId, ctx);
  });

  test('stop() frees the leases, so another instance boots the servers at once', async () => {
    const a = await started();
    const { serverId, machine } = await booted(a);
    await a.stop();
    assert.deepEqual(a.running(), []);
    const b = provider();
    await b.start();
    assert.deepEqual(b.running(), [serverId]);
    const beats = beatsOf(machine.credential);
    await until('heartbeats from the other instance', () => beatsOf(machine.credential) > beats);
    await b.deleteServer(serverId, ctx);
  });

  test('an agent told its machine was deleted stops for good: the lease is kept, the credential forgotten, nothing reboots it', async () => {
    const p = await started();
    const { serverId, machine } = await booted(p);
    machine.revokedReason = 'MACHINE_DELETED';
    await until('the credential forgotten', async () => (await row(serverId))!.credential_sealed === null);
    const joins = routes.count('/v1/machine_joins');
    await p.recheck();
    assert.deepEqual(p.running(), [serverId]);
    assert.equal(routes.count('/v1/machine_joins'), joins);
    await p.deleteServer(serverId, ctx);
  });

  test('a provider that was not started (a worker-only process) leaves new servers to one that runs agents', async () => {
    const worker = provider();
    const req = request();
    const { serverId } = await worker.createServer(req, ctx);
    assert.deepEqual(worker.running(), []);
    assert.equal((await row(serverId))!.lease_owner, null);
    const api = await started();
    assert.deepEqual(api.running(), [serverId]);
    await until('the machine joined', () => routes.usedTokens.has(req.token));
    await api.deleteServer(serverId, ctx);
  });

  test('refuses an instance type it does not offer and user data without a token', async () => {
    const p = await started();
    assert.deepEqual(p.instanceTypes, ['local-small', 'local-medium', 'local-large']);
    for (const bad of [{ ...request(), instanceType: 'cx22' }, { ...request(), userData: '#cloud-config\n' }]) {
      await assert.rejects(p.createServer(bad, ctx), (err: ComputeProviderError) => err instanceof ComputeProviderError && !err.retryable);
    }
  });

  test('svc admin rotate-keys re-seals the servers\' user data and credentials', async () => {
    const old = new Keyring(Buffer.alloc(32, 7));
    const p = await started({ keyring: old, attached: false });
    const { serverId } = await p.createServer(request(), ctx);
    const fresh = new Keyring(Buffer.alloc(32, 9), [Buffer.alloc(32, 7)]);
    const report = await rotateKeys(t.services.db, fresh);
    assert.equal(report['local server user data']!.rewrapped, 1);
    const stored = (await row(serverId))!;
    assert.ok(fresh.isCurrent(stored.user_data_sealed));
    await p.deleteServer(serverId, ctx);
  });
});

describe('join command in user data', () => {
  test('finds the token and the server in the cloud-init and the command the service writes', () => {
    const token = 'svcb_4Zq0YvT1nJb8mW2-Kc6Lr9Ps3Df7Gh5Aa1Bb2Cc3_d4';
    const launch = { agentCommand: 'npx -y svc', server: 'https://svc.example.com' };
    for (const text of [cloudInit(launch, token), joinCommand(launch, token), `svc machine join --server=https://svc.example.com/ --token ${token}`]) {
      assert.deepEqual(joinCommandFromUserData(text), { server: 'https://svc.example.com', token });
    }
    assert.deepEqual(joinCommandFromUserData('#cloud-config\n'), { server: null, token: null });
  });
});
