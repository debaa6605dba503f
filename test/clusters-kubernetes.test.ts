// Clusters with the kubernetes provider, end to end through HTTP, the workers and the driver,
// against the stand-in Kubernetes API server: registration, capabilities, retries, rejected
// credentials, deletion; and the kubeconfig never leaves the service in any response, row or log line.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { keyringOf } from '../src/platform/keyring.js';
import { KUBECONFIG_SEAL } from '../src/modules/clusters/clusters.repo.js';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';
import { STANDIN_TOKEN, standinKubeconfig, startK8sStandin, type K8sStandin } from './k8s-standin.js';
import { assertOperationInvariants } from './operation-invariants.js';

const WRONG_TOKEN = 'wrong-token-9f8e7d6c5b4a39281706';

describe('clusters (kubernetes provider)', () => {
  let t: TestApp;
  let alice: TestUser;
  let wsA: string;
  let standin: K8sStandin;
  const logLines: string[] = [];
  const responses: string[] = [];

  before(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    t = await startTestApp({}, { logger: pino({ level: 'trace' }, sink) });
    alice = await t.user('alice');
    wsA = (await t.workspace(alice, 'A')).id;
    standin = await startK8sStandin();
  });
  after(async () => {
    await standin.close();
    await t.close();
  });

  async function call(method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}): Promise<Response> {
    const res = await t.request(method, url, { token: alice.token, ...opts, headers: { 'svc-context': wsA, ...opts.headers } });
    responses.push(JSON.stringify(res.headers), res.text);
    return res;
  }

  async function waitOp(id: string) {
    const res = await call('POST', `/v1/operations/${id}:wait?timeout=30`);
    assert.equal(res.status, 200, res.text);
    assertOperationInvariants(res.body);
    return res.body;
  }

  test('register with a kubeconfig: active, capabilities read from the cluster API', async () => {
    const kubeconfig = standinKubeconfig(standin.url);
    const res = await call('POST', '/v1/clusters', { body: { name: 'prod', provider: 'kubernetes', kubeconfig } });
    assert.equal(res.status, 202, res.text);
    assert.equal(JSON.stringify(res.body.metadata).includes('kubeconfig'), false);
    const done = await waitOp(res.body.id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));

    const cluster = await call('GET', `/v1/clusters/${res.body.owner_id}`);
    assert.equal(cluster.body.state, 'active');
    assert.equal(cluster.body.provider, 'kubernetes');
    assert.equal(cluster.body.kubeconfig, undefined);

    const caps = await call('GET', `/v1/clusters/${res.body.owner_id}/capabilities`);
    assert.equal(caps.status, 200, caps.text);
    assert.ok(caps.body.api_groups.includes('gateway.networking.k8s.io/v1'));
    assert.deepEqual(caps.body.gateway_classes, ['eg', 'cilium']);
    assert.deepEqual(caps.body.ingress_classes, ['nginx', 'traefik']);
    assert.deepEqual(caps.body.nodes.map((n: { name: string }) => n.name), ['kind-control-plane', 'kind-worker', 'kind-worker2']);
    assert.equal(caps.body.nodes[0].created_at, '2024-05-14T09:12:31Z');
    assert.deepEqual(caps.body.nodes[0].roles, ['control-plane']);
    assert.equal(caps.body.nodes[2].ready, false);
    assert.equal(caps.body.storage_classes.find((s: { is_default: boolean }) => s.is_default).name, 'standard');
    assert.equal(caps.body.gateways[0].addresses[0].value, '203.0.113.10');
    assert.ok(standin.requests.some((r) => r.path === '/api/v1/nodes' && r.authorization === `Bearer ${STANDIN_TOKEN}`));

    // Stored sealed by the keyring, bound to the cluster: only opening it gives the text back.
    const row = await t.services.db.selectFrom('clusters').selectAll().where('id', '=', res.body.owner_id).executeTakeFirstOrThrow();
    assert.match(row.kubeconfig_sealed!, new RegExp(`^k1\\.${keyringOf(t.config).currentKeyId}\\.`));
    assert.ok(!row.kubeconfig_sealed!.includes(STANDIN_TOKEN));
    assert.equal(keyringOf(t.config).open(row.kubeconfig_sealed!, KUBECONFIG_SEAL.context(row.id)), kubeconfig);
    assert.throws(() => keyringOf(t.config).open(row.kubeconfig_sealed!, KUBECONFIG_SEAL.context('clu_01jf8x3q6m2c4y7n0k5t9r1b3d')));
  });

  test('a server that answers 503 twice: retried, then SUCCEEDED with last_error cleared', async () => {
    standin.failRemaining = 2;
    const res = await call('POST', '/v1/clusters', { body: { name: 'flaky', provider: 'kubernetes', kubeconfig: standinKubeconfig(standin.url, { format: 'json' }) } });
    assert.equal(res.status, 202, res.text);
    const done = await waitOp(res.body.id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    assert.equal(done.last_error, null);
    assert.equal(done.steps.find((s: { name: string }) => s.name === 'provision').attempts, 3);
  });

  test('rejected credentials: FAILED at once, cluster suspended, the token never echoed', async () => {
    const res = await call('POST', '/v1/clusters', { body: { name: 'badcreds', provider: 'kubernetes', kubeconfig: standinKubeconfig(standin.url, { token: WRONG_TOKEN }) } });
    assert.equal(res.status, 202, res.text);
    const done = await waitOp(res.body.id);
    assert.equal(done.state, 'FAILED');
    assert.equal(done.steps.find((s: { name: string }) => s.name === 'provision').attempts, 1, 'a 401 is not retried');
    assert.ok(done.error.message.length > 0);
    const cluster = await call('GET', `/v1/clusters/${res.body.owner_id}`);
    assert.equal(cluster.body.state, 'suspended');

    // Deleting it needs nothing from the cluster: the service created nothing there.
    const del = await call('DELETE', `/v1/clusters/${res.body.owner_id}`, { headers: { 'if-match': cluster.body.etag } });
    assert.equal(del.status, 202);
    assert.equal((await waitOp(del.body.id)).state, 'SUCCEEDED');
    assert.equal((await call('GET', `/v1/clusters/${res.body.owner_id}`)).status, 404);
  });

  test('refresh reads the cluster again; delete unregisters it', async () => {
    const res = await call('POST', '/v1/clusters', { body: { name: 'cycle', provider: 'kubernetes', kubeconfig: standinKubeconfig(standin.url) } });
    const id = res.body.owner_id;
    await waitOp(res.body.id);
    const before = standin.requests.length;
    const refresh = await call('POST', `/v1/clusters/${id}/capabilities:refresh`);
    assert.equal(refresh.status, 202);
    assert.equal((await waitOp(refresh.body.id)).state, 'SUCCEEDED');
    assert.ok(standin.requests.length > before, 'the refresh asked the cluster');

    const cluster = await call('GET', `/v1/clusters/${id}`);
    const del = await call('DELETE', `/v1/clusters/${id}`, { headers: { 'if-match': cluster.body.etag } });
    const done = await waitOp(del.body.id);
    assert.equal(done.state, 'SUCCEEDED');
    assert.ok(done.steps.every((s: { status: string }) => s.status === 'completed'));
    assert.equal((await call('GET', `/v1/clusters/${id}`)).status, 404);
  });

  test('an unacceptable kubeconfig is 400 without echoing its secrets', async () => {
    const doc = JSON.parse(standinKubeconfig(standin.url, { format: 'json' }));
    doc.users[0].user = { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: '/bin/sh', args: ['-c', `echo ${STANDIN_TOKEN}`] } };
    const execConfig = JSON.stringify(doc);
    const res = await call('POST', '/v1/clusters', { body: { name: 'exec', provider: 'kubernetes', kubeconfig: execConfig } });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.reason, 'INVALID_KUBECONFIG');
    assert.equal(res.body.error.field_violations[0].field, 'body.kubeconfig');
    const list = await call('GET', '/v1/clusters?limit=100');
    assert.ok(!list.body.data.some((c: { name: string }) => c.name === 'exec'));
  });

  test('no response, stored row of another table, or log line holds a token of a kubeconfig', async () => {
    for (const secret of [STANDIN_TOKEN, WRONG_TOKEN]) {
      assert.ok(!responses.some((r) => r.includes(secret)), 'a response carried the token');
      assert.ok(!logLines.some((l) => l.includes(secret)), 'a log line carried the token');
    }
    assert.ok(logLines.length > 0, 'the logger was used');
    const db = t.services.db;
    const rows = [
      ...(await db.selectFrom('clusters').selectAll().execute()),
      ...(await db.selectFrom('operations').selectAll().execute()),
      ...(await db.selectFrom('operation_steps').selectAll().execute()),
      ...(await db.selectFrom('jobs').selectAll().execute()),
      ...(await db.selectFrom('idempotency_keys').selectAll().execute()),
    ];
    assert.ok(rows.length > 0);
    const dump = JSON.stringify(rows);
    for (const secret of [STANDIN_TOKEN, WRONG_TOKEN, 'standin-admin', 'current-context']) assert.ok(!dump.includes(secret), `the database holds ${secret} in plaintext`);
  });
});
