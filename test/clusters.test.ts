// Clusters with the local driver through HTTP: create -> active with capabilities, retries and
// failures injected into the simulated cluster, etags, deletion, refresh conflicts, tenancy.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';
import { assertOperationInvariants } from './operation-invariants.js';

describe('clusters (local driver)', () => {
  let t: TestApp;
  let alice: TestUser;
  let wsA: string;
  const ctxA = () => ({ 'svc-context': wsA });

  before(async () => {
    // More clusters, installs or workspaces per user than free allows: a roomier free, quotas still enforced.
    t = await startTestApp(roomyPlans());
    alice = await t.user('alice');
    wsA = (await t.workspace(alice, 'A')).id;
  });
  after(() => t.close());

  async function createCluster(body: Record<string, unknown>, headers: Record<string, string> = {}) {
    return t.request('POST', '/v1/clusters', { token: alice.token, headers: { ...ctxA(), ...headers }, body });
  }

  async function waitOp(id: string) {
    const res = await t.request('POST', `/v1/operations/${id}:wait?timeout=20`, { token: alice.token, headers: ctxA() });
    assert.equal(res.status, 200, res.text);
    assertOperationInvariants(res.body, { publicUrl: 'http://svc.test' });
    return res.body;
  }

  async function getOp(id: string) {
    const res = await t.request('GET', `/v1/operations/${id}`, { token: alice.token, headers: ctxA() });
    assert.equal(res.status, 200, res.text);
    assertOperationInvariants(res.body, { publicUrl: 'http://svc.test' });
    return res.body;
  }

  const getCluster = (id: string) => t.request('GET', `/v1/clusters/${id}`, { token: alice.token, headers: ctxA() });

  /** A cluster that reached `active`. */
  async function activeCluster(name: string, local?: unknown) {
    const res = await createCluster({ name, ...(local ? { local } : {}) });
    assert.equal(res.status, 202, res.text);
    const op = await waitOp(res.body.id);
    assert.equal(op.state, 'SUCCEEDED', JSON.stringify(op));
    const cluster = await getCluster(op.owner_id);
    assert.equal(cluster.body.state, 'active');
    return cluster.body;
  }

  test('create a local cluster: 202 operation, then active with every capability field', async () => {
    const res = await createCluster({ name: 'dev' });
    assert.equal(res.status, 202, res.text);
    const op = res.body;
    assertOperationInvariants(op, { publicUrl: 'http://svc.test' });
    assert.equal(op.state, 'RUNNING');
    assert.equal(op.owner_type, 'cluster');
    assert.match(op.owner_id, /^clu_[0-9a-z]{26}$/);
    assert.equal(op.metadata.type, 'cluster.create');
    assert.equal(op.metadata.cluster_id, op.owner_id);
    assert.equal(op.workspace_id, wsA);
    assert.deepEqual(op.steps.map((s: { name: string }) => s.name), ['provision', 'read_capabilities', 'activate']);

    const early = await getCluster(op.owner_id);
    assert.equal(early.status, 200);
    assert.ok(['pending', 'provisioning', 'active'].includes(early.body.state), early.body.state);

    const done = await waitOp(op.id);
    assert.equal(done.state, 'SUCCEEDED');
    assert.equal(done.response.type, 'cluster.create');
    assert.equal(done.response.cluster_id, op.owner_id);
    assert.equal(done.last_error, null);
    assert.ok(done.steps.every((s: { status: string }) => s.status === 'completed'));

    const cluster = await getCluster(op.owner_id);
    assert.equal(cluster.status, 200);
    assert.equal(cluster.headers.etag, `"${cluster.body.etag}"`);
    assert.deepEqual(Object.keys(cluster.body).sort(), [
      'created_at', 'etag', 'gateway_url', 'html_url', 'id', 'name', 'provider', 'reconciling', 'state', 'updated_at', 'workspace_id',
    ]);
    assert.equal(cluster.body.state, 'active');
    assert.equal(cluster.body.gateway_url, null, 'a local cluster has no gateway');
    assert.equal(cluster.body.reconciling, false);
    assert.equal(cluster.body.provider, 'local');
    assert.equal(cluster.body.name, 'dev');
    assert.equal(cluster.body.workspace_id, wsA);
    assert.equal(cluster.body.html_url, `http://svc.test/clusters/${op.owner_id}`);
    assert.notEqual(cluster.body.etag, early.body.etag, 'state changes made by the workflow change the etag');

    const caps = await t.request('GET', `/v1/clusters/${op.owner_id}/capabilities`, { token: alice.token, headers: ctxA() });
    assert.equal(caps.status, 200, caps.text);
    const c = caps.body;
    assert.deepEqual(Object.keys(c).sort(), ['api_groups', 'gateway_classes', 'gateways', 'ingress_classes', 'nodes', 'observed_at', 'storage_classes']);
    assert.ok(Number.isInteger(c.observed_at));
    assert.ok(c.api_groups.includes('v1') && c.api_groups.includes('apps/v1') && c.api_groups.includes('gateway.networking.k8s.io/v1'));
    assert.equal(c.storage_classes.filter((s: { is_default: boolean }) => s.is_default).length, 1);
    for (const s of c.storage_classes) {
      for (const k of ['name', 'provisioner', 'reclaim_policy', 'volume_binding_mode']) assert.equal(typeof s[k], 'string');
      assert.equal(typeof s.is_default, 'boolean');
    }
    assert.deepEqual(c.gateway_classes, ['svc-local']);
    assert.deepEqual(c.ingress_classes, ['nginx']);
    assert.equal(c.gateways.length, 1);
    const gw = c.gateways[0];
    for (const k of ['namespace', 'name', 'gateway_class_name', 'status_message']) assert.equal(typeof gw[k], 'string');
    assert.deepEqual(gw.listeners.map((l: { protocol: string; port: number }) => [l.protocol, l.port]), [['HTTP', 80], ['HTTPS', 443]]);
    for (const l of gw.listeners) assert.equal(typeof l.hostname, 'string');
    assert.equal(gw.addresses[0].type, 'IPAddress');
    assert.match(gw.addresses[0].value, /^10\.96\.\d+\.\d+$/);
    assert.equal(c.nodes.length, 3);
    assert.deepEqual(c.nodes.map((n: { roles: string[] }) => n.roles), [['control-plane'], ['worker'], ['worker']]);
    for (const n of c.nodes) {
      for (const k of ['name', 'version', 'cpu_capacity', 'memory_capacity', 'os_image', 'architecture', 'status_message', 'created_at']) {
        assert.equal(typeof n[k], 'string', k);
      }
      assert.match(n.version, /^v1\.30\.\d$/);
      assert.equal(n.cpu_capacity, '4');
      assert.equal(n.memory_capacity, '16Gi');
      assert.ok(!Number.isNaN(Date.parse(n.created_at)) && n.created_at.endsWith('Z'), 'node created_at is an ISO string');
      assert.equal(n.ready, true);
    }

    // Deterministic: a refresh reads the same snapshot.
    const refresh = await t.request('POST', `/v1/clusters/${op.owner_id}/capabilities:refresh`, { token: alice.token, headers: ctxA() });
    assert.equal(refresh.status, 202, refresh.text);
    assert.equal(refresh.body.metadata.type, 'cluster.capabilities.refresh');
    assert.equal((await waitOp(refresh.body.id)).state, 'SUCCEEDED');
    const again = await t.request('GET', `/v1/clusters/${op.owner_id}/capabilities`, { token: alice.token, headers: ctxA() });
    const { observed_at: _a, ...before } = c;
    const { observed_at: _b, ...after } = again.body;
    assert.deepEqual(after, before);
  });

  test('capabilities before any observation: 422; refresh while create runs: 409 with the running operation', async () => {
    const res = await createCluster({ name: 'slow', local: { faults: [{ action: 'provision', latency_ms: 600 }] } });
    assert.equal(res.status, 202);
    const id = res.body.owner_id;
    const caps = await t.request('GET', `/v1/clusters/${id}/capabilities`, { token: alice.token, headers: ctxA() });
    assert.equal(caps.status, 422);
    assert.equal(caps.body.error.code, 'FAILED_PRECONDITION');
    assert.equal(caps.body.error.reason, 'CAPABILITIES_NOT_OBSERVED');

    const refresh = await t.request('POST', `/v1/clusters/${id}/capabilities:refresh`, { token: alice.token, headers: ctxA() });
    assert.equal(refresh.status, 409);
    assert.equal(refresh.body.error.code, 'ABORTED');
    assert.equal(refresh.body.error.reason, 'OPERATION_IN_PROGRESS');
    assert.equal(refresh.body.error.metadata.operation_id, res.body.id);

    // While the worker provisions, the cluster says so.
    let seen = '';
    for (let i = 0; i < 50 && seen !== 'provisioning'; i++) {
      seen = (await getCluster(id)).body.state;
      if (seen !== 'provisioning') await sleep(10);
    }
    assert.equal(seen, 'provisioning');
    assert.equal((await waitOp(res.body.id)).state, 'SUCCEEDED');
  });

  test('a step that fails twice then succeeds: last_error names it while RUNNING, cleared after', async () => {
    const res = await createCluster({ name: 'flaky', local: { faults: [{ action: 'capabilities', fail_times: 2, latency_ms: 250 }] } });
    assert.equal(res.status, 202);
    const opId = res.body.id;
    let during: any = null;
    for (let i = 0; i < 300 && !during; i++) {
      const op = await getOp(opId);
      if (op.done) break;
      if (op.last_error) during = op;
      else await sleep(10);
    }
    assert.ok(during, 'last_error was visible while the operation ran');
    assert.equal(during.state, 'RUNNING');
    assert.equal(during.last_error.step_name, 'read_capabilities');
    assert.match(during.last_error.message, /injected fault: capabilities failed on attempt [12]/);
    const step = during.steps.find((s: { name: string }) => s.name === 'read_capabilities');
    assert.ok(['failed', 'running'].includes(step.status));

    const done = await waitOp(opId);
    assert.equal(done.state, 'SUCCEEDED');
    assert.equal(done.last_error, null, 'cleared by the later success');
    const rc = done.steps.find((s: { name: string }) => s.name === 'read_capabilities');
    assert.equal(rc.attempts, 3);
    assert.equal(rc.status, 'completed');
    assert.equal((await getCluster(res.body.owner_id)).body.state, 'active');
  });

  test('a step that keeps failing: FAILED with error.message, cluster suspended', async () => {
    const res = await createCluster({ name: 'broken', local: { faults: [{ action: 'provision', fail_times: 100 }] } });
    assert.equal(res.status, 202);
    const done = await waitOp(res.body.id);
    assert.equal(done.state, 'FAILED');
    assert.match(done.error.message, /provision/);
    assert.equal(done.last_error.step_name, 'provision');
    const provision = done.steps.find((s: { name: string }) => s.name === 'provision');
    assert.equal(provision.status, 'failed');
    assert.equal(provision.attempts, 5);
    assert.match(provision.error_message, /injected fault/);
    const cluster = await getCluster(res.body.owner_id);
    assert.equal(cluster.body.state, 'suspended');
    assert.equal(cluster.body.reconciling, false);

    // Never provisioned: a refresh cannot read anything and fails at once; the cluster stays suspended.
    const refresh = await t.request('POST', `/v1/clusters/${res.body.owner_id}/capabilities:refresh`, { token: alice.token, headers: ctxA() });
    assert.equal(refresh.status, 202);
    const r = await waitOp(refresh.body.id);
    assert.equal(r.state, 'FAILED');
    assert.match(r.error.message, /not provisioned/);
    assert.equal((await getCluster(res.body.owner_id)).body.state, 'suspended');
  });

  test('cancelled create leaves the cluster suspended; a refresh that reads it makes it active', async () => {
    const res = await createCluster({ name: 'cancelme', local: { faults: [{ action: 'provision', latency_ms: 300 }] } });
    assert.equal(res.status, 202);
    await sleep(50);
    const cancel = await t.request('POST', `/v1/operations/${res.body.id}:cancel`, { token: alice.token, headers: ctxA() });
    assert.equal(cancel.status, 202, cancel.text);
    const done = await waitOp(res.body.id);
    assert.equal(done.state, 'CANCELLED');
    const id = res.body.owner_id;
    const suspended = await getCluster(id);
    assert.equal(suspended.body.state, 'suspended');
    assert.equal(suspended.body.reconciling, false);

    const refresh = await t.request('POST', `/v1/clusters/${id}/capabilities:refresh`, { token: alice.token, headers: ctxA() });
    assert.equal(refresh.status, 202);
    const claimed = await getCluster(id);
    assert.equal(claimed.body.reconciling, true);
    assert.equal((await waitOp(refresh.body.id)).state, 'SUCCEEDED');
    const active = await getCluster(id);
    assert.equal(active.body.state, 'active');
    assert.equal(active.body.reconciling, false);
    const caps = await t.request('GET', `/v1/clusters/${id}/capabilities`, { token: alice.token, headers: ctxA() });
    assert.equal(caps.status, 200);
  });

  test('list newest first with keyset pages; get; patch with if-match', async () => {
    const a = await activeCluster('list-a');
    const b = await activeCluster('list-b');
    const page1 = await t.request('GET', '/v1/clusters?limit=1', { token: alice.token, headers: ctxA() });
    assert.equal(page1.status, 200);
    assert.equal(page1.body.data.length, 1);
    assert.equal(page1.body.data[0].id, b.id, 'newest first');
    assert.equal(page1.body.has_more, true);
    const page2 = await t.request('GET', `/v1/clusters?limit=1&cursor=${page1.body.next_cursor}`, { token: alice.token, headers: ctxA() });
    assert.equal(page2.body.data[0].id, a.id);
    const all = await t.request('GET', '/v1/clusters?limit=100', { token: alice.token, headers: ctxA() });
    const ids = all.body.data.map((c: { id: string }) => c.id);
    assert.deepEqual(ids, [...ids].sort().reverse());
    assert.equal(all.body.has_more, false);
    assert.equal(all.body.next_cursor, null);

    const missing = await t.request('PATCH', `/v1/clusters/${a.id}`, { token: alice.token, headers: ctxA(), body: { name: 'renamed' } });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.code, 'INVALID_ARGUMENT');

    const ok = await t.request('PATCH', `/v1/clusters/${a.id}`, { token: alice.token, headers: { ...ctxA(), 'if-match': `"${a.etag}"` }, body: { name: 'renamed' } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.name, 'renamed');
    assert.notEqual(ok.body.etag, a.etag);
    assert.equal(ok.headers.etag, `"${ok.body.etag}"`);

    const stale = await t.request('PATCH', `/v1/clusters/${a.id}`, { token: alice.token, headers: { ...ctxA(), 'if-match': a.etag }, body: { name: 'again' } });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.code, 'ABORTED');
    assert.equal(stale.body.error.metadata.etag, ok.body.etag);

    const taken = await t.request('PATCH', `/v1/clusters/${a.id}`, { token: alice.token, headers: { ...ctxA(), 'if-match': ok.body.etag }, body: { name: 'list-b' } });
    assert.equal(taken.status, 409);
    assert.equal(taken.body.error.code, 'ALREADY_EXISTS');

    const dup = await createCluster({ name: 'list-b' });
    assert.equal(dup.status, 409);
    assert.equal(dup.body.error.code, 'ALREADY_EXISTS');
  });

  test('delete: if-match required, 202 operation, a second DELETE returns it, then 404', async () => {
    const c = await activeCluster('doomed', { faults: [{ action: 'destroy', latency_ms: 400 }] });
    const noMatch = await t.request('DELETE', `/v1/clusters/${c.id}`, { token: alice.token, headers: ctxA() });
    assert.equal(noMatch.status, 400);
    const stale = await t.request('DELETE', `/v1/clusters/${c.id}`, { token: alice.token, headers: { ...ctxA(), 'if-match': '"1"' } });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.metadata.etag, c.etag);

    const del = await t.request('DELETE', `/v1/clusters/${c.id}`, { token: alice.token, headers: { ...ctxA(), 'if-match': c.etag } });
    assert.equal(del.status, 202, del.text);
    assertOperationInvariants(del.body, { publicUrl: 'http://svc.test' });
    assert.equal(del.body.metadata.type, 'cluster.delete');
    assert.equal(del.body.owner_id, c.id);
    assert.deepEqual(del.body.steps.map((s: { name: string }) => s.name), ['drain_operations', 'release', 'remove']);
    assert.equal(del.body.steps.find((s: { name: string }) => s.name === 'release').skippable, true);

    const deleting = await getCluster(c.id);
    assert.equal(deleting.body.state, 'deleting');
    assert.equal(deleting.body.reconciling, true);
    const second = await t.request('DELETE', `/v1/clusters/${c.id}`, { token: alice.token, headers: { ...ctxA(), 'if-match': c.etag } });
    assert.equal(second.status, 202);
    assert.equal(second.body.id, del.body.id, 'the same operation, even with a stale etag');
    const patch = await t.request('PATCH', `/v1/clusters/${c.id}`, { token: alice.token, headers: { ...ctxA(), 'if-match': '*' }, body: { name: 'x' } });
    assert.equal(patch.status, 422);
    assert.equal(patch.body.error.reason, 'CLUSTER_DELETING');
    const refresh = await t.request('POST', `/v1/clusters/${c.id}/capabilities:refresh`, { token: alice.token, headers: ctxA() });
    assert.equal(refresh.status, 422);
    assert.equal(refresh.body.error.reason, 'CLUSTER_DELETING');
    const cancel = await t.request('POST', `/v1/operations/${del.body.id}:cancel`, { token: alice.token, headers: ctxA() });
    assert.equal(cancel.status, 422, 'cluster.delete is not cancellable');

    const done = await waitOp(del.body.id);
    assert.equal(done.state, 'SUCCEEDED');
    assert.equal(done.response.cluster_id, c.id);
    assert.equal((await getCluster(c.id)).status, 404);
    const after = await t.request('DELETE', `/v1/clusters/${c.id}`, { token: alice.token, headers: { ...ctxA(), 'if-match': '*' } });
    assert.equal(after.status, 404);
    const simulated = await t.services.db.selectFrom('local_clusters').selectAll().where('cluster_id', '=', c.id).execute();
    assert.equal(simulated.length, 0, 'the simulated cluster is released');
    const list = await t.request('GET', '/v1/clusters?limit=100', { token: alice.token, headers: ctxA() });
    assert.ok(!list.body.data.some((x: { id: string }) => x.id === c.id));
  });

  test('deleting a cluster while its create runs cancels the create, then removes the cluster', async () => {
    const res = await createCluster({ name: 'racing', local: { faults: [{ action: 'provision', latency_ms: 300 }] } });
    assert.equal(res.status, 202);
    const del = await t.request('DELETE', `/v1/clusters/${res.body.owner_id}`, { token: alice.token, headers: { ...ctxA(), 'if-match': '*' } });
    assert.equal(del.status, 202, del.text);
    const deleted = await waitOp(del.body.id);
    assert.equal(deleted.state, 'SUCCEEDED');
    const create = await waitOp(res.body.id);
    assert.equal(create.state, 'CANCELLED');
    assert.equal((await getCluster(res.body.owner_id)).status, 404);
  });

  test('a release that keeps failing is skipped: the cluster is removed anyway', async () => {
    const c = await activeCluster('stuck', { faults: [{ action: 'destroy', fail_times: 100 }] });
    const del = await t.request('DELETE', `/v1/clusters/${c.id}`, { token: alice.token, headers: { ...ctxA(), 'if-match': c.etag } });
    const done = await waitOp(del.body.id);
    assert.equal(done.state, 'SUCCEEDED');
    const release = done.steps.find((s: { name: string }) => s.name === 'release');
    assert.equal(release.status, 'skipped');
    assert.match(release.error_message, /injected fault: destroy/);
    assert.equal((await getCluster(c.id)).status, 404);
  });

  test('idempotency-key: a replay returns the same operation; another body under the key is 422', async () => {
    const first = await createCluster({ name: 'idem' }, { 'idempotency-key': 'create-idem-1' });
    assert.equal(first.status, 202);
    const replay = await createCluster({ name: 'idem' }, { 'idempotency-key': 'create-idem-1' });
    assert.equal(replay.status, 202);
    assert.equal(replay.body.id, first.body.id);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    const other = await createCluster({ name: 'idem-other' }, { 'idempotency-key': 'create-idem-1' });
    assert.equal(other.status, 422);
    assert.equal(other.body.error.reason, 'IDEMPOTENCY_KEY_REUSED');
    await waitOp(first.body.id);
    const list = await t.request('GET', '/v1/clusters?limit=100', { token: alice.token, headers: ctxA() });
    assert.equal(list.body.data.filter((c: { name: string }) => c.name === 'idem').length, 1);

    const r1 = await t.request('POST', `/v1/clusters/${first.body.owner_id}/capabilities:refresh`, { token: alice.token, headers: { ...ctxA(), 'idempotency-key': 'refresh-1' } });
    assert.equal(r1.status, 202);
    const r2 = await t.request('POST', `/v1/clusters/${first.body.owner_id}/capabilities%3Arefresh`, { token: alice.token, headers: { ...ctxA(), 'idempotency-key': 'refresh-1' } });
    assert.equal(r2.status, 202);
    assert.equal(r2.body.id, r1.body.id);
    await waitOp(r1.body.id);
  });

  test('validation: names, providers and their options, unknown fields, ids', async () => {
    const bad = async (body: unknown, field?: string) => {
      const res = await t.request('POST', '/v1/clusters', { token: alice.token, headers: ctxA(), body });
      assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 100)} -> ${res.status} ${res.text}`);
      assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
      if (field) assert.ok(res.body.error.field_violations.some((v: { field: string }) => v.field.startsWith(field)), res.text);
      return res;
    };
    for (const name of ['', 'Upper', '-lead', 'trail-', 'under_score', 'a'.repeat(64), 'sp ace']) await bad({ name }, 'body.name');
    await bad({});
    await bad({ name: 'ok', extra: 1 });
    await bad({ name: 'ok', provider: 'gke' });
    await bad({ name: 'ok', provider: 'kubernetes' }, 'body.kubeconfig');
    await bad({ name: 'ok', kubeconfig: 'apiVersion: v1' }, 'body.kubeconfig');
    await bad({ name: 'ok', provider: 'kubernetes', kubeconfig: 'not: [valid' }, 'body.kubeconfig');
    await bad({ name: 'ok', provider: 'kubernetes', kubeconfig: 'apiVersion: v1\nkind: Config\n' }, 'body.kubeconfig');
    const k = await bad({ name: 'ok', provider: 'kubernetes', kubeconfig: 'x', local: { faults: [] } });
    assert.ok(k.body.error.field_violations.some((v: { field: string }) => v.field === 'body.local' || v.field === 'body.kubeconfig'));
    await bad({ name: 'ok', local: { faults: [{ action: 'provision', fail_times: 101 }] } });
    await bad({ name: 'ok', local: { faults: [{ action: 'provision', latency_ms: 60_001 }] } });
    await bad({ name: 'ok', local: { faults: [{ action: 'explode' }] } });
    await bad({ name: 'ok', local: { faults: [{ action: 'provision', bogus: 1 }] } });
    await bad({ name: 'ok', local: { other: true } });
    await bad({ name: 'ok', local: { faults: [{ action: 'provision' }, { action: 'provision' }] } }, 'body.local.faults');
    await bad({ name: 'ok', local: { faults: [{ action: 'provision' }, { action: 'capabilities' }, { action: 'destroy' }, { action: 'destroy' }] } });
    await bad({ name: 5 });

    for (const id of ['nope', 'ws_01jf8x3q6m2c4y7n0k5t9r1b3d', 'clu_01jf8x3q6m2c4y7n0k5t9r1b3d']) {
      assert.equal((await getCluster(id)).status, 404, id);
      const caps = await t.request('GET', `/v1/clusters/${id}/capabilities`, { token: alice.token, headers: ctxA() });
      assert.equal(caps.status, 404);
      const refresh = await t.request('POST', `/v1/clusters/${id}/capabilities:refresh`, { token: alice.token, headers: ctxA() });
      assert.equal(refresh.status, 404);
      const del = await t.request('DELETE', `/v1/clusters/${id}`, { token: alice.token, headers: { ...ctxA(), 'if-match': '*' } });
      assert.equal(del.status, 404);
      const patch = await t.request('PATCH', `/v1/clusters/${id}`, { token: alice.token, headers: { ...ctxA(), 'if-match': '*' }, body: { name: 'zz' } });
      assert.equal(patch.status, 404);
    }
    const patchBad = await t.request('PATCH', '/v1/clusters/clu_01jf8x3q6m2c4y7n0k5t9r1b3d', { token: alice.token, headers: { ...ctxA(), 'if-match': '*' }, body: { name: 'ok', state: 'active' } });
    assert.equal(patchBad.status, 400);
  });
});
