// The hcloud compute provider against a local stand-in of Hetzner Cloud's API (test/hcloud-standin.ts):
// what it sends, that one machine never gets two servers (a repeated create, a lost answer, two racing
// workers), the server's life (boot, power off and on, delete), and every failure a step must tell
// apart: rate limited, server error, rejected token, a server that never boots, a hang, an abort.
// Also the SVC_COMPUTE_PROVIDER / SVC_HCLOUD_* settings. No database here: the same on both dialects.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { after, before, beforeEach, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { ComputeProviderError, type ComputeCallContext, type ComputeProvider } from '../src/drivers/compute/driver.js';
import { createHcloudProvider, HCLOUD_SERVER_TYPES, hcloudServerName, type HcloudOptions } from '../src/drivers/compute/hcloud.js';
import { HCLOUD_STANDIN_TOKEN, startHcloudStandin, type HcloudStandin } from './hcloud-standin.js';
import { createTestDatabase, freePort } from './harness.js';
import { dbEnv, runSvc, startSvc } from './processes.js';

const ctx = (signal = new AbortController().signal): ComputeCallContext => ({ signal });
const USER_DATA = '#cloud-config\nruncmd:\n  - [sh, -c, "svc machine join --server https://svc.example.com --token wbt_onetime"]\n';
const request = (machineId = 'mch_01jabcdefghjkmnpqrstvwxyz0') => ({ machineId, name: `svc-${machineId}`, instanceType: 'cx23', userData: USER_DATA });

/** Awaits a call that must fail, and returns its ComputeProviderError. */
async function failure(p: Promise<unknown>): Promise<ComputeProviderError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ComputeProviderError, `expected ComputeProviderError, got ${String(err)}`);
    return err;
  }
  assert.fail('the call succeeded');
}

describe('hcloud compute provider', () => {
  let standin: HcloudStandin;
  let options: HcloudOptions;
  let hcloud: ComputeProvider;
  const posts = () => standin.calls.filter((c) => c.method === 'POST' && c.path === '/v1/servers');

  before(async () => {
    standin = await startHcloudStandin();
  });
  after(() => standin.close());
  beforeEach(() => {
    standin.calls.length = 0;
    standin.servers.clear();
    standin.token = HCLOUD_STANDIN_TOKEN;
    Object.assign(standin.faults, { rateLimited: 0, retryAfterSeconds: 7, serverErrors: 0, neverBoots: false, dropAnswers: 0, dropAnswersOf: null });
    options = { token: HCLOUD_STANDIN_TOKEN, endpoint: standin.endpoint, location: 'nbg1', image: 'debian-12', sshKeys: ['ops@laptop'], requestTimeoutMs: 2000 };
    hcloud = createHcloudProvider(options);
  });

  test('offers the current server types', () => {
    assert.equal(hcloud.name, 'hcloud');
    const types: readonly string[] = hcloud.instanceTypes;
    assert.deepEqual([...types], [...HCLOUD_SERVER_TYPES]);
    for (const t of ['cx23', 'cpx22', 'cax11', 'ccx13']) assert.ok(types.includes(t), t);
    for (const gone of ['cx22', 'cpx11']) assert.ok(!types.includes(gone), `${gone} is no longer sold`);
  });

  test('createServer sends what Hetzner expects, labelled with the machine id, after looking for one first', async () => {
    const made = await hcloud.createServer(request(), ctx());
    assert.equal(made.status, 'starting');
    assert.match(made.serverId, /^\d+$/);
    assert.deepEqual(standin.calls.map((c) => `${c.method} ${c.path}`), ['GET /v1/servers', 'POST /v1/servers']);
    assert.equal(standin.calls[0]!.query.label_selector, 'svc-machine==mch_01jabcdefghjkmnpqrstvwxyz0');
    for (const c of standin.calls) assert.equal(c.authorization, `Bearer ${HCLOUD_STANDIN_TOKEN}`);
    assert.deepEqual(posts()[0]!.body, {
      name: 'svc-mch-01jabcdefghjkmnpqrstvwxyz0', // underscores are not valid in a hostname
      server_type: 'cx23',
      image: 'debian-12',
      location: 'nbg1',
      start_after_create: true,
      labels: { 'svc-machine': 'mch_01jabcdefghjkmnpqrstvwxyz0' },
      user_data: USER_DATA,
      ssh_keys: ['ops@laptop'],
    });
    const stored = standin.servers.get(Number(made.serverId))!;
    assert.equal(stored.userData, USER_DATA);
    assert.equal(stored.location, 'nbg1');
  });

  test('a create repeated after a crash finds the first server: one POST, one server', async () => {
    const first = await hcloud.createServer(request(), ctx());
    // A new provider, as a restarted worker builds it.
    const again = await createHcloudProvider(options).createServer(request(), ctx());
    assert.deepEqual(again, { serverId: first.serverId, status: 'starting' });
    assert.equal(posts().length, 1);
    assert.equal(standin.servers.size, 1);
  });

  test('a create whose answer was lost is retryable, and the retry finds the server it made', async () => {
    standin.faults.dropAnswers = 1;
    standin.faults.dropAnswersOf = 'POST /v1/servers'; // Hetzner makes the server; its answer never comes
    const err = await failure(createHcloudProvider({ ...options, token: HCLOUD_STANDIN_TOKEN, requestTimeoutMs: 1500 }).createServer(request(), ctx()));
    assert.equal(err.retryable, true);
    assert.match(err.message, /did not answer within 1\.5 s/);
    assert.equal(standin.servers.size, 1);
    const retried = await hcloud.createServer(request(), ctx());
    assert.equal(retried.serverId, String([...standin.servers.keys()][0]));
    assert.equal(posts().length, 1);
  });

  test('two workers racing to create one machine make one server (the loser resolves the name conflict by the label)', async () => {
    standin.holdLists(2); // both look-ups find nothing, then both POST
    const [a, b] = await Promise.all([hcloud.createServer(request(), ctx()), createHcloudProvider(options).createServer(request(), ctx())]);
    assert.equal(a.serverId, b.serverId);
    assert.equal(posts().length, 2);
    assert.equal(standin.servers.size, 1);
  });

  test('a name taken by a server that is not the machine\'s fails for good, naming it', async () => {
    standin.addServer({ name: 'svc-mch-01jabcdefghjkmnpqrstvwxyz0', labels: { team: 'web' } });
    const err = await failure(hcloud.createServer(request(), ctx()));
    assert.equal(err.retryable, false);
    assert.match(err.message, /a server named svc-mch-01jabcdefghjkmnpqrstvwxyz0 already exists .* without the label svc-machine=mch_01jabcdefghjkmnpqrstvwxyz0/);
  });

  test('a name held by the machine\'s previous server, still being deleted, is worth waiting for', async () => {
    standin.addServer({ name: 'svc-mch-01jabcdefghjkmnpqrstvwxyz0', status: 'deleting', labels: { 'svc-machine': 'mch_01jabcdefghjkmnpqrstvwxyz0' } });
    const err = await failure(hcloud.createServer(request(), ctx()));
    assert.equal(err.retryable, true);
    assert.match(err.message, /still being deleted/);
  });

  test('bad requests fail before any call: a machine id that is no label value, user data over 32 KiB', async () => {
    assert.equal((await failure(hcloud.createServer(request('mch_bad id'), ctx()))).retryable, false);
    const big = { ...request(), userData: 'x'.repeat(32 * 1024 + 1) };
    assert.match((await failure(hcloud.createServer(big, ctx()))).message, /32769 bytes; Hetzner accepts at most 32768/);
    assert.equal((await failure(hcloud.getServer('../servers', ctx()))).retryable, false);
    assert.equal(standin.calls.length, 0);
    assert.equal(hcloudServerName('Svc_Machine.Example_'), 'svc-machine.example');
  });

  test('getServer follows the boot, and says gone for a server that does not exist', async () => {
    const { serverId } = await hcloud.createServer(request(), ctx());
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push((await hcloud.getServer(serverId, ctx())).status);
    assert.deepEqual(seen, ['starting', 'starting', 'running']); // initializing, starting, running
    assert.deepEqual(await hcloud.getServer('99999999', ctx()), { serverId: '99999999', status: 'gone' });
  });

  test('a server that never boots keeps saying starting', async () => {
    standin.faults.neverBoots = true;
    const { serverId } = await hcloud.createServer(request(), ctx());
    for (let i = 0; i < 5; i++) assert.equal((await hcloud.getServer(serverId, ctx())).status, 'starting');
  });

  test('power off and on: each asks once, and does nothing when the server is there already', async () => {
    const s = standin.addServer({ name: 'svc-mch-x', labels: { 'svc-machine': 'mch_x' } });
    const id = String(s.id);
    const actions = () => standin.calls.filter((c) => c.path.includes('/actions/')).map((c) => c.path.split('/').pop());
    await hcloud.powerOff(id, ctx());
    assert.equal((await hcloud.getServer(id, ctx())).status, 'stopping');
    assert.equal((await hcloud.getServer(id, ctx())).status, 'off');
    await hcloud.powerOff(id, ctx());
    assert.deepEqual(actions(), ['poweroff']);
    await hcloud.powerOn(id, ctx());
    assert.equal((await hcloud.getServer(id, ctx())).status, 'starting');
    assert.equal((await hcloud.getServer(id, ctx())).status, 'running');
    await hcloud.powerOn(id, ctx());
    assert.deepEqual(actions(), ['poweroff', 'poweron']);
  });

  test('a power action on a server still being created is locked: retryable', async () => {
    const { serverId } = await hcloud.createServer(request(), ctx());
    const err = await failure(hcloud.powerOff(serverId, ctx()));
    assert.equal(err.retryable, true);
    assert.match(err.message, /power off server \d+: Hetzner Cloud answered server is locked by another action \(locked, HTTP 423\)/);
  });

  test('powering on a server that was deleted outside the service fails for good', async () => {
    const err = await failure(hcloud.powerOn('424242', ctx()));
    assert.equal(err.retryable, false);
    assert.match(err.message, /does not exist/);
    await hcloud.powerOff('424242', ctx()); // gone is as off as it gets
  });

  test('deleteServer removes the server; deleting a gone server is done', async () => {
    const { serverId } = await hcloud.createServer(request(), ctx());
    await hcloud.deleteServer(serverId, ctx());
    assert.equal(standin.servers.size, 0);
    assert.equal((await hcloud.getServer(serverId, ctx())).status, 'gone');
    await hcloud.deleteServer(serverId, ctx());
    assert.deepEqual(standin.calls.filter((c) => c.method === 'DELETE').length, 2);
  });

  test('rate limited: retryable, with the wait Retry-After asks for, else RateLimit-Reset', async () => {
    standin.faults.rateLimited = 1;
    const err = await failure(hcloud.getServer('1', ctx()));
    assert.equal(err.retryable, true);
    assert.equal(err.retryAfterMs, 7000);
    assert.match(err.message, /rate limited by Hetzner Cloud: limit of 3600 requests per hour reached \(rate_limit_exceeded, HTTP 429\)/);
    standin.faults.rateLimited = 1;
    standin.faults.retryAfterSeconds = null;
    const byReset = await failure(hcloud.createServer(request(), ctx()));
    assert.ok(byReset.retryAfterMs !== null && byReset.retryAfterMs > 0 && byReset.retryAfterMs <= 31_000, String(byReset.retryAfterMs));
    assert.equal(posts().length, 0);
    await hcloud.createServer(request(), ctx()); // the budget is back
  });

  test('a server error is retryable and says what Hetzner said', async () => {
    standin.faults.serverErrors = 1;
    const err = await failure(hcloud.createServer(request(), ctx()));
    assert.equal(err.retryable, true);
    assert.equal(err.retryAfterMs, null);
    assert.match(err.message, /an internal error occurred, please try again later \(server_error, HTTP 500\)/);
    assert.equal(standin.servers.size, 0);
  });

  test('an invalid token is not retryable, says which setting, and never shows the token', async () => {
    standin.token = 'a-token-the-project-has-now';
    const err = await failure(hcloud.createServer(request(), ctx()));
    assert.equal(err.retryable, false);
    assert.match(err.message, /Hetzner Cloud rejected the API token \(SVC_HCLOUD_TOKEN is invalid or was revoked\): unable to authenticate \(unauthorized, HTTP 401\)/);
    assert.ok(!err.message.includes(HCLOUD_STANDIN_TOKEN));
    assert.ok(!inspect(err).includes(HCLOUD_STANDIN_TOKEN));
  });

  test('other refusals are not retryable and carry Hetzner\'s message', async () => {
    const err = await failure(hcloud.createServer({ ...request(), instanceType: 'cx99' }, ctx()));
    assert.equal(err.retryable, false);
    assert.match(err.message, /Hetzner Cloud refused: invalid input in field 'server_type' \(invalid_input, HTTP 400\)/);
  });

  test('a request that hangs past the timeout is retryable', async () => {
    const quick = createHcloudProvider({ ...options, token: HCLOUD_STANDIN_TOKEN, requestTimeoutMs: 300 });
    standin.faults.dropAnswers = 1;
    const err = await failure(quick.getServer('1', ctx()));
    assert.equal(err.retryable, true);
    assert.match(err.message, /Hetzner Cloud did not answer within 0\.3 s/);
  });

  test('an unreachable endpoint is retryable', async () => {
    const port = await freePort(); // nothing listens there
    const nowhere = createHcloudProvider({ ...options, token: HCLOUD_STANDIN_TOKEN, endpoint: `http://127.0.0.1:${port}/v1` });
    const err = await failure(nowhere.getServer('1', ctx()));
    assert.equal(err.retryable, true);
    assert.equal(err.message, `hcloud: get server 1: could not reach Hetzner Cloud at 127.0.0.1:${port} (ECONNREFUSED)`);
  });

  test('an aborted signal sends nothing; an abort during a hang ends the call at once', async () => {
    const aborted = new AbortController();
    aborted.abort();
    assert.match((await failure(hcloud.createServer(request(), ctx(aborted.signal)))).message, /aborted/);
    assert.equal(standin.calls.length, 0);
    const slow = createHcloudProvider({ ...options, token: HCLOUD_STANDIN_TOKEN, requestTimeoutMs: 600_000 });
    standin.faults.dropAnswers = 1;
    const stop = new AbortController();
    const call = slow.getServer('1', ctx(stop.signal));
    while (standin.calls.length === 0) await new Promise((r) => setImmediate(r));
    stop.abort();
    const err = await failure(call);
    assert.equal(err.retryable, true);
    assert.match(err.message, /get server 1: aborted/);
  });
});

describe('SVC_COMPUTE_PROVIDER and SVC_HCLOUD_* settings', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-hcloud-config-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));
  const base = { SVC_DATA_DIR: dataDir, SVC_SECRET_KEY: 'ab'.repeat(32) };
  const TOKEN = 'jEheVytlAoFl7F8MqUQ7jAo2hOXASztXjEheVytlAoFl7F8MqUQ7jAo2hOXASztX';

  test('local by default; hcloud with its defaults; the token never shows when the config is printed', () => {
    assert.deepEqual(loadConfig(base).compute, { provider: 'local', hcloud: null });
    const config = loadConfig({ ...base, SVC_COMPUTE_PROVIDER: 'hcloud', SVC_HCLOUD_TOKEN: TOKEN, SVC_HCLOUD_SSH_KEYS: 'ops, deploy key ,' });
    assert.equal(config.compute.provider, 'hcloud');
    const hcloud = config.compute.hcloud!;
    assert.equal(hcloud.token, TOKEN);
    assert.deepEqual({ ...hcloud }, { endpoint: 'https://api.hetzner.cloud/v1', location: 'fsn1', image: 'debian-12', sshKeys: ['ops', 'deploy key'] });
    assert.ok(!JSON.stringify(config.compute).includes(TOKEN));
    assert.ok(!inspect(config, { depth: 10 }).includes(TOKEN));
    createHcloudProvider(hcloud); // what the lead wires: the token is read
  });

  test('bad settings stop the start with a message naming the variable, never the token', () => {
    const bad = (env: Record<string, string>, message: RegExp) => {
      assert.throws(() => loadConfig({ ...base, SVC_COMPUTE_PROVIDER: 'hcloud', SVC_HCLOUD_TOKEN: TOKEN, ...env }), (err: Error) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, message);
        assert.ok(!err.message.includes(TOKEN));
        return true;
      });
    };
    bad({ SVC_COMPUTE_PROVIDER: 'aws' }, /SVC_COMPUTE_PROVIDER must be one of local, hcloud, got "aws"/);
    bad({ SVC_HCLOUD_TOKEN: '' }, /SVC_COMPUTE_PROVIDER=hcloud needs SVC_HCLOUD_TOKEN/);
    bad({ SVC_HCLOUD_TOKEN: `${TOKEN} x` }, /SVC_HCLOUD_TOKEN must be printable ASCII without spaces \(its value is not shown\)/);
    bad({ SVC_HCLOUD_ENDPOINT: 'ftp://api.example' }, /SVC_HCLOUD_ENDPOINT must be an http\(s\) URL/);
    bad({ SVC_HCLOUD_LOCATION: 'Falkenstein 1' }, /SVC_HCLOUD_LOCATION/);
    bad({ SVC_HCLOUD_IMAGE: 'debian 12' }, /SVC_HCLOUD_IMAGE/);
  });

  test('svc serve with hcloud configured never prints the token', async () => {
    const db = await createTestDatabase();
    try {
      const svc = await startSvc(dbEnv(db, { LOG_LEVEL: 'trace', SVC_COMPUTE_PROVIDER: 'hcloud', SVC_HCLOUD_TOKEN: TOKEN }));
      await svc.stop();
      assert.ok(!JSON.stringify(svc.logs).includes(TOKEN) && !svc.stderr().includes(TOKEN));
    } finally {
      await db.drop();
    }
  });

  test('svc serve with hcloud and no token exits 2 saying what is missing', async () => {
    const run = await runSvc(['serve'], { ...base, PORT: '0', SVC_COMPUTE_PROVIDER: 'hcloud' }, 60_000);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /configuration error: SVC_COMPUTE_PROVIDER=hcloud needs SVC_HCLOUD_TOKEN/);
  });
});
