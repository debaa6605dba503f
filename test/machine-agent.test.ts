// The machine agent's core (src/machine-agent/agent.ts) against a local stand-in of the service's
// two agent routes over real HTTP (machine-agent-standin.ts): it joins once and keeps its credential
// (0600) before heartbeating, reuses it after a restart, backs off while the service is unreachable
// and says when it is back, stops on a refused credential or join with the service's message, and
// leaves on its signal after finishing the request in flight. Its sleeps are shortened (the waits it
// asks for are recorded), so nothing here waits the real intervals; nothing asserts a duration.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { runMachineAgent, type AgentOutcome, type CredentialStore, type MachineAgentOptions } from '../src/machine-agent/agent.js';
import { backoffDelay } from '../src/machine-agent/transport.js';
import { freePort } from './harness.js';
import { AgentRoutesStandIn } from './machine-agent-standin.js';

const dirs: string[] = [];
const standins: AgentRoutesStandIn[] = [];
after(async () => {
  for (const s of standins) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function stateDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'svc-agent-'));
  dirs.push(d);
  return join(d, 'state');
}

async function standIn(port = 0): Promise<{ routes: AgentRoutesStandIn; url: string }> {
  const routes = new AgentRoutesStandIn(port);
  standins.push(routes);
  return { routes, url: await routes.start() };
}

/** Waits until `check` holds, polling; fails after a generous timeout with `what`. */
async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(5);
  }
}

/** Runs an agent with shortened sleeps; its log lines and the waits it asked for are kept. */
function start(opts: Partial<MachineAgentOptions> & { server: string }) {
  const lines: string[] = [];
  const waits: number[] = [];
  const controller = new AbortController();
  const line = (level: string) => (_f: Record<string, unknown>, msg: string) => void lines.push(`${level} ${msg}`);
  const done: Promise<AgentOutcome> = runMachineAgent({
    fetch,
    logger: { info: line('info'), warn: line('warn'), error: line('error') },
    signal: controller.signal,
    timers: {
      sleep: async (ms, signal) => {
        waits.push(ms);
        if (!signal.aborted) await delay(Math.min(ms, 10), undefined, { signal }).catch(() => undefined);
      },
    },
    ...opts,
  });
  const saw = (re: RegExp) => lines.some((l) => re.test(l));
  return {
    lines, waits, done,
    stop: () => controller.abort(),
    waitForLog: (re: RegExp) => until(`a log line ${re}; got:\n${lines.join('\n')}`, () => saw(re)),
  };
}

/** No log line holds the token or a credential the stand-in handed out. */
function assertNoSecrets(lines: string[], routes: AgentRoutesStandIn): void {
  const secrets = [...routes.tokens, ...routes.machines.map((m) => m.credential)];
  for (const l of lines) for (const s of secrets) assert.ok(!l.includes(s), `a log line holds a secret: ${l}`);
}

describe('machine agent', () => {
  test('joins once, keeps the credential (0600) before heartbeating, and heartbeats with it', async () => {
    const { routes, url } = await standIn();
    const token = routes.newToken();
    const dir = stateDir();
    const agent = start({ server: url, token, stateDir: dir });
    await until('three heartbeats', () => routes.count('/v1/machine_heartbeats') >= 3);
    agent.stop();
    assert.deepEqual(await agent.done, { kind: 'stopped' });

    assert.equal(routes.count('/v1/machine_joins'), 1);
    const join0 = routes.requests.find((r) => r.path === '/v1/machine_joins')!;
    assert.equal(join0.body.token, token);
    assert.equal(join0.authorization, undefined);
    assert.equal(join0.body.facts.hostname, hostname().slice(0, 253));
    assert.ok(join0.body.facts.cpu_count >= 1 && join0.body.facts.memory_bytes > 0 && join0.body.facts.agent_version);
    const machine = routes.machines[0]!;
    const beats = routes.requests.filter((r) => r.path === '/v1/machine_heartbeats');
    assert.ok(beats.every((b) => b.authorization === `Bearer ${machine.credential}`));
    // The facts went with the join; heartbeats repeat them only when they change.
    assert.ok(beats.every((b) => b.body.facts === undefined));

    const file = join(dir, 'credential');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).credential, machine.credential);
    assert.ok(agent.lines.some((l) => l === `info joined as ${machine.id}: node ${hostname().slice(0, 253)}-x1 of cluster clu_standin; credential kept in ${file}`), agent.lines.join('\n'));
    assert.ok(agent.lines.some((l) => l === `info heartbeating every 1 s: machine ${machine.id} is ACTIVE`), agent.lines.join('\n'));
    // The waits between heartbeats are what the service said (1 s), less the time a heartbeat took.
    assert.ok(agent.waits.every((w) => w <= 1000));
    assert.ok(agent.lines.at(-1)!.startsWith('info stopped'));
    assertNoSecrets(agent.lines, routes);

    // Restarted (systemd, a reboot): the kept credential is used, the spent token is never sent again.
    const again = start({ server: url, token, stateDir: dir });
    const before = routes.count('/v1/machine_heartbeats');
    await until('a heartbeat after the restart', () => routes.count('/v1/machine_heartbeats') > before);
    again.stop();
    assert.deepEqual(await again.done, { kind: 'stopped' });
    assert.equal(routes.count('/v1/machine_joins'), 1);
    assert.ok(again.lines[0]!.startsWith(`info using the machine credential kept in ${file} (machine ${machine.id})`), again.lines.join('\n'));
    // A restarted agent reports its facts once (its version may have changed).
    assert.ok(routes.requests.filter((r) => r.path === '/v1/machine_heartbeats')[before]!.body.facts);
    assertNoSecrets(again.lines, routes);
  });

  test('logs state changes and cordons from the heartbeat answers', async () => {
    const { routes, url } = await standIn();
    const agent = start({ server: url, token: routes.newToken() });
    await agent.waitForLog(/is ACTIVE/);
    const m = routes.machines[0]!;
    m.state = 'SUSPENDED';
    m.schedulable = false;
    await agent.waitForLog(/^info cordoned: no new work lands on this machine$/);
    await agent.waitForLog(new RegExp(`^info machine ${m.id} is now SUSPENDED \\(was ACTIVE\\)$`));
    m.state = 'ACTIVE';
    m.schedulable = true;
    await agent.waitForLog(/^info uncordoned/);
    routes.heartbeatIntervalSeconds = 2;
    await agent.waitForLog(/^info heartbeat interval now 2 s$/);
    agent.stop();
    await agent.done;
  });

  test('backs off while heartbeats get 503, says so, and says when the service is back', async () => {
    const { routes, url } = await standIn();
    const agent = start({ server: url, token: routes.newToken() });
    await agent.waitForLog(/is ACTIVE/);
    routes.failNext = 4;
    await agent.waitForLog(/^info connection regained: heartbeat answered after 5 attempts/);
    agent.stop();
    await agent.done;
    const lost = agent.lines.filter((l) => l.startsWith('warn '));
    assert.equal(lost.length, 4);
    assert.match(lost[0]!, /^warn connection lost: heartbeat failed \(503 the service is shutting down\); retrying in /);
    assert.match(lost[3]!, /^warn still without the service: heartbeat failed \(503 the service is shutting down\); retry 4 in /);
  });

  test('retries a join while the connection is refused, then joins once the service listens', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const routes = new AgentRoutesStandIn(port);
    standins.push(routes);
    const token = routes.newToken();
    const agent = start({ server: url, token, stateDir: stateDir() });
    await agent.waitForLog(/^warn still without the service: join failed \(connection refused\); retry 3 in /);
    assert.match(agent.lines.find((l) => l.startsWith('warn'))!, /^warn connection lost: join failed \(connection refused\); retrying in /);
    await routes.start();
    await agent.waitForLog(/^info joined as mch_/);
    await agent.waitForLog(/^info connection regained: join answered after \d+ attempts/);
    await agent.waitForLog(/is ACTIVE/);
    agent.stop();
    assert.deepEqual(await agent.done, { kind: 'stopped' });
    assert.equal(routes.count('/v1/machine_joins'), 1);
    assertNoSecrets(agent.lines, routes);
  });

  test('a request that gets no answer counts as the service being unreachable', async () => {
    const { routes, url } = await standIn();
    const agent = start({ server: url, token: routes.newToken(), requestTimeoutMs: 300 });
    await agent.waitForLog(/is ACTIVE/);
    routes.silentNext = 1;
    await agent.waitForLog(/^warn connection lost: heartbeat failed \(no answer within 0.3 s\); retrying in /);
    await agent.waitForLog(/^info connection regained/);
    agent.stop();
    await agent.done;
  });

  for (const [reason, says] of [
    ['MACHINE_DELETED', /^error stopping: the machine was deleted \(machine mch_\w+ was deleted\); forgot the credential in /],
    ['MACHINE_CREDENTIAL_REVOKED', /^error stopping: the machine credential was revoked \(the machine credential was revoked\); forgot/],
  ] as const) {
    test(`stops on a heartbeat refused with ${reason}, with the service's message, and forgets its credential`, async () => {
      const { routes, url } = await standIn();
      const dir = stateDir();
      const agent = start({ server: url, token: routes.newToken(), stateDir: dir });
      await agent.waitForLog(/is ACTIVE/);
      assert.ok(existsSync(join(dir, 'credential')));
      routes.machines[0]!.revokedReason = reason;
      const outcome = await agent.done;
      assert.equal(outcome.kind, 'credential_refused');
      assert.equal(outcome.kind === 'credential_refused' && outcome.reason, reason);
      assert.equal(outcome.kind === 'credential_refused' && outcome.machineId, routes.machines[0]!.id);
      assert.match(agent.lines.at(-1)!, says);
      assert.ok(!existsSync(join(dir, 'credential')));
      assertNoSecrets(agent.lines, routes);
    });
  }

  test('stops on a credential the service does not know', async () => {
    const { routes, url } = await standIn();
    const agent = start({ server: url, credential: 'svcm_unknownunknownunknownunknownunknownunkno' });
    const outcome = await agent.done;
    assert.equal(outcome.kind, 'credential_refused');
    assert.equal(outcome.kind === 'credential_refused' && outcome.reason, 'UNAUTHENTICATED');
    assert.match(agent.lines.at(-1)!, /^error stopping: the service does not know this machine credential \(unknown machine credential\)$/);
    assert.equal(routes.count('/v1/machine_joins'), 0);
  });

  test('a refused join stops with the service\'s message: a used token, a full quota', async () => {
    const { routes, url } = await standIn();
    const token = routes.newToken();
    const first = start({ server: url, token });
    await first.waitForLog(/joined as/);
    first.stop();
    await first.done;

    const dir = stateDir();
    const second = start({ server: url, token, stateDir: dir });
    assert.deepEqual(await second.done, { kind: 'join_refused', status: 401, reason: 'JOIN_TOKEN_REJECTED', message: 'the join token was used already' });
    assert.equal(second.lines.at(-1), 'error join refused: the join token was used already');
    assert.ok(!existsSync(join(dir, 'credential')));

    routes.quotaFull = true;
    const third = start({ server: url, token: routes.newToken() });
    assert.deepEqual(await third.done, { kind: 'join_refused', status: 429, reason: 'QUOTA_EXCEEDED', message: 'quota compute/machines is full (2 of 2)' });
    assertNoSecrets([...second.lines, ...third.lines], routes);
  });

  test('no credential and no token: a setup error before any request', async () => {
    const { routes, url } = await standIn();
    await assert.rejects(start({ server: url, stateDir: stateDir() }).done, { name: 'AgentSetupError', missingToken: true, message: /no machine credential in .*credential and no join token/ });
    assert.equal(routes.requests.length, 0);
  });

  test('a state dir that cannot hold the credential stops it before the token is spent', async () => {
    const { routes, url } = await standIn();
    const dir = stateDir();
    mkdirSync(dirname(dir), { recursive: true });
    writeFileSync(dir, 'a file where the state dir should be');
    await assert.rejects(start({ server: url, token: routes.newToken(), stateDir: join(dir, 'state') }).done, { name: 'AgentSetupError', missingToken: false, message: /^cannot read the machine credential: ENOTDIR/ });
    // Readable but not writable (a read-only disk; root ignores file modes, so a store says so here).
    const readOnly: CredentialStore = { where: '/ro/credential', load: async () => null, prepare: async () => { throw new Error('EROFS: read-only file system'); }, save: async () => undefined, remove: async () => undefined };
    await assert.rejects(start({ server: url, token: routes.newToken(), store: readOnly }).done, { name: 'AgentSetupError', message: 'cannot keep a machine credential in /ro/credential: EROFS: read-only file system' });
    assert.equal(routes.requests.length, 0);
  });

  test('on its signal it finishes the request in flight (a join\'s credential is kept) and stops', async () => {
    const { routes, url } = await standIn();
    const dir = stateDir();
    const held = routes.hold();
    const agent = start({ server: url, token: routes.newToken(), stateDir: dir });
    await held;
    agent.stop();
    let settled = false;
    void agent.done.then(() => (settled = true));
    await delay(50);
    assert.equal(settled, false, 'the agent must wait for the request in flight');
    routes.release();
    assert.deepEqual(await agent.done, { kind: 'stopped' });
    assert.equal(JSON.parse(readFileSync(join(dir, 'credential'), 'utf8')).credential, routes.machines[0]!.credential);
    assert.equal(routes.count('/v1/machine_heartbeats'), 0);

    // Stopped while waiting for the next heartbeat: it returns without another request.
    // (a sleep that ends only with the signal: at once when it was given before the sleep began,
    // as the agent's timers promise, or the stop below could come first and leave it asleep)
    const untilSignal = (_ms: number, signal: AbortSignal) =>
      new Promise<void>((r) => (signal.aborted ? r() : signal.addEventListener('abort', () => r(), { once: true })));
    const again = start({ server: url, stateDir: dir, timers: { sleep: untilSignal } });
    await until('the first heartbeat', () => routes.count('/v1/machine_heartbeats') === 1);
    again.stop();
    assert.deepEqual(await again.done, { kind: 'stopped' });
    assert.equal(routes.count('/v1/machine_heartbeats'), 1);
  });
});

describe('backoff', () => {
  test('doubles from the first wait up to the cap, each wait between half and all of its step', () => {
    const steps = [1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => [backoffDelay(n, 1000, 60_000, 0, null), backoffDelay(n, 1000, 60_000, 0.999999, null)]);
    assert.deepEqual(steps.map(([lo]) => lo), [500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
    assert.deepEqual(steps.map(([, hi]) => hi), [1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000]);
  });

  test('waits at least what retry-after asks, within five caps', () => {
    assert.equal(backoffDelay(1, 1000, 60_000, 0, 10_000), 10_000);
    assert.equal(backoffDelay(1, 1000, 60_000, 0, 3_600_000), 300_000);
    assert.equal(backoffDelay(8, 1000, 60_000, 0, 1000), 30_000);
  });
});
