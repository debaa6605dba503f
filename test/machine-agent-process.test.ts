// A real `svc machine join` process against a real `svc serve` (heartbeats every second): it joins
// with a worker bootstrap's token given in the environment (never on its command line), heartbeats
// (the machine is ACTIVE through the API), goes UNREACHABLE when killed, comes back with its kept
// credential and no token, leaves with exit 0 on SIGTERM, and, when its machine is deleted while it
// runs, exits by itself with its message and exit code 3; a used token exits 4.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, DIALECT, type TestDatabase } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';
import { dbEnv, spawnSvc, startSvc, svcCaller, type RunningSvc } from './processes.js';

const TOKEN = 'Machine0Agent0Process0Bootstrap0';
const call = svcCaller(TOKEN);

interface Agent {
  child: ChildProcess;
  lines: string[];
  waitFor(re: RegExp): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function agent(server: string, stateDir: string, env: Record<string, string> = {}): Agent {
  const child = spawnSvc(['machine', 'join', '--server', server, '--state-dir', stateDir], env);
  const lines: string[] = [];
  let partial = '';
  child.stderr!.on('data', (d: Buffer) => {
    partial += d.toString();
    const parts = partial.split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  });
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }));
  let done = false;
  void exited.then(() => (done = true));
  return {
    child, lines, exited,
    async waitFor(re) {
      const deadline = Date.now() + 120_000;
      for (;;) {
        const hit = lines.find((l) => re.test(l));
        if (hit) return hit;
        if (done || Date.now() > deadline) throw new Error(`no line ${re} (${done ? 'the agent exited' : 'timed out'}):\n${lines.join('\n')}`);
        await delay(50);
      }
    },
  };
}

describe(`svc machine join against svc serve (${DIALECT})`, () => {
  let db: TestDatabase;
  let svc: RunningSvc;
  let ws: string;
  let cluster: string;
  const dirs: string[] = [];
  const agents: Agent[] = [];
  const h = () => ({ 'svc-context': ws });

  before(async () => {
    db = await createTestDatabase();
    svc = await startSvc(dbEnv(db, {
      SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: TOKEN,
      SVC_JOB_POLL_MS: '100', SVC_MACHINE_HEARTBEAT_S: '1', ...roomyPlans(),
    }));
    ws = (await call(svc.url, 'POST', '/v1/workspaces', { body: { name: 'Agents' } })).body.id;
    const created = await call(svc.url, 'POST', '/v1/clusters', { headers: h(), body: { name: 'edge' } });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const op = await call(svc.url, 'POST', `/v1/operations/${created.body.id}:wait?timeout=30`, { headers: h() });
    assert.equal(op.body.state, 'SUCCEEDED');
    cluster = op.body.owner_id;
  });
  after(async () => {
    for (const a of agents) if (a.child.exitCode === null && a.child.signalCode === null) a.child.kill('SIGKILL');
    await svc?.stop();
    await db?.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const start = (stateDir: string, env: Record<string, string> = {}) => {
    const a = agent(svc.url, stateDir, env);
    agents.push(a);
    return a;
  };
  const machine = async (id: string) => (await call(svc.url, 'GET', `/v1/machines/${id}`, { headers: h() })).body;
  async function untilState(id: string, state: string): Promise<void> {
    const deadline = Date.now() + 120_000;
    while ((await machine(id)).state !== state) {
      if (Date.now() > deadline) throw new Error(`machine ${id} never became ${state}`);
      await delay(200);
    }
  }

  test('joins, heartbeats, is UNREACHABLE when killed, resumes with its kept credential, leaves on SIGTERM, stops by itself when deleted', { timeout: 300_000 }, async () => {
    const b = await call(svc.url, 'POST', `/v1/clusters/${cluster}/worker_bootstraps`, { headers: h(), body: {} });
    assert.equal(b.status, 201, JSON.stringify(b.body));
    const token: string = b.body.token;
    const dir = mkdtempSync(join(tmpdir(), 'svc-machine-'));
    dirs.push(dir);
    const stateDir = join(dir, 'state');

    const first = start(stateDir, { SVC_JOIN_TOKEN: token });
    const joined = await first.waitFor(/ info joined as mch_/);
    const machineId = /joined as (mch_\w+)/.exec(joined)![1]!;
    await first.waitFor(/ info heartbeating every 1 s: machine mch_\w+ is ACTIVE$/);
    assert.equal((await machine(machineId)).state, 'ACTIVE');
    // The token came from the environment: not on the command line `ps` shows.
    if (existsSync(`/proc/${first.child.pid}/cmdline`)) assert.ok(!readFileSync(`/proc/${first.child.pid}/cmdline`, 'utf8').includes('svcb_'));

    first.child.kill('SIGKILL');
    await first.exited;
    await untilState(machineId, 'UNREACHABLE');

    // Restarted without a token (as systemd would after the token file is gone): the kept credential.
    const second = start(stateDir);
    await second.waitFor(new RegExp(` info using the machine credential kept in .*credential \\(machine ${machineId}\\); no join token needed$`));
    await untilState(machineId, 'ACTIVE');
    second.child.kill('SIGTERM');
    assert.deepEqual(await second.exited, { code: 0, signal: null });
    assert.match(second.lines.at(-1)!, / info stopped: signal received$/);

    const third = start(stateDir);
    await third.waitFor(/ info heartbeating every 1 s/);
    const etag = (await machine(machineId)).etag;
    const del = await call(svc.url, 'DELETE', `/v1/machines/${machineId}`, { headers: { ...h(), 'if-match': etag } });
    assert.equal(del.status, 202, JSON.stringify(del.body));
    assert.deepEqual(await third.exited, { code: 3, signal: null });
    assert.match(third.lines.at(-1)!, / error stopping: the machine was deleted \(.+\); forgot the credential in .*credential$/);
    assert.ok(!existsSync(join(stateDir, 'credential')));

    // The spent token joins nothing: exit 4 with the service's message.
    const again = start(join(dir, 'other'), { SVC_JOIN_TOKEN: token });
    assert.deepEqual(await again.exited, { code: 4, signal: null });
    assert.match(again.lines.at(-1)!, / error join refused: .*used/);

    const all = [first, second, third, again].flatMap((a) => a.lines).join('\n');
    assert.ok(!all.includes(token), 'no line holds the token');
    assert.ok(!/svcm_[A-Za-z0-9]{10}/.test(all), 'no line holds the credential');
  });
});
