// Installs when things go wrong: driver failures injected into the simulated cluster (retried with
// last_error shown, or exhausted), renders that cannot succeed, operations that collide on one
// install, cluster deletion while installs remain, and workspace deletion taking installs along.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';
import { InstallFixtures, MANIFEST, SCHEMA, type Caller } from './installs-fixtures.js';

describe('installs: failures and conflicts', () => {
  let t: TestApp;
  let f: InstallFixtures;
  let alice: TestUser;
  let A: Caller;
  let pkg: string;

  before(async () => {
    // More clusters, installs or workspaces per user than free allows: a roomier free, quotas still enforced.
    t = await startTestApp(roomyPlans());
    f = new InstallFixtures(t);
    alice = await t.user('alice');
    A = { user: alice, ws: (await t.workspace(alice, 'A')).id };
    pkg = (await f.packageWithVersion(A)).pkgId;
  });
  after(() => t.close());

  const install = (clusterId: string) => f.createInstall(A, { package_id: pkg, package_version_pin: { kind: 'latest' }, cluster_id: clusterId });
  const stepOf = (op: any, name: string) => op.steps.find((s: { name: string }) => s.name === name);

  test('a deploy that fails twice: last_error names apply while RUNNING, then SUCCEEDED with it cleared', async () => {
    const cluster = await f.cluster(A, [{ action: 'deploy', fail_times: 2, latency_ms: 100 }]);
    const res = await install(cluster);
    assert.equal(res.status, 202, res.text);
    const during = await f.lastErrorWhileRunning(A, res.body.id);
    assert.ok(during, 'last_error was visible while the operation ran');
    assert.equal(during.state, 'RUNNING');
    assert.equal(during.last_error.step_name, 'apply');
    assert.match(during.last_error.message, /injected fault: deploy failed on attempt [12]/);
    const installDuring = await f.getInstall(A, res.body.owner_id);
    assert.equal(installDuring.body.state, 'syncing');
    assert.equal(installDuring.body.reconciling, true);

    const done = await f.waitOp(A, res.body.id);
    assert.equal(done.state, 'SUCCEEDED');
    assert.equal(done.last_error, null, 'cleared by the later success');
    assert.equal(stepOf(done, 'apply').attempts, 3);
    assert.equal((await f.getInstall(A, res.body.owner_id)).body.state, 'healthy');
  });

  test('not healthy for the first checks: last_error names wait_healthy, then SUCCEEDED', async () => {
    const cluster = await f.cluster(A, [{ action: 'health', fail_times: 3, latency_ms: 50 }]);
    const res = await install(cluster);
    const during = await f.lastErrorWhileRunning(A, res.body.id);
    assert.ok(during, 'last_error was visible while the operation ran');
    assert.equal(during.last_error.step_name, 'wait_healthy');
    assert.match(during.last_error.message, /^not healthy yet: injected fault/);
    const done = await f.waitOp(A, res.body.id);
    assert.equal(done.state, 'SUCCEEDED');
    assert.equal(done.last_error, null);
    assert.equal(stepOf(done, 'wait_healthy').attempts, 4);
    assert.deepEqual((await f.getInstall(A, res.body.owner_id)).body.urls.map((u: any) => u.route_key).sort(), ['api', 'web']);
  });

  test('a deploy that keeps failing: FAILED with error.message, install failed; an update may retry it', async () => {
    const cluster = await f.cluster(A, [{ action: 'deploy', fail_times: 100 }]);
    const res = await install(cluster);
    const done = await f.waitOp(A, res.body.id);
    assert.equal(done.state, 'FAILED');
    assert.match(done.error.message, /step apply failed: injected fault: deploy/);
    assert.equal(done.last_error.step_name, 'apply');
    const apply = stepOf(done, 'apply');
    assert.equal(apply.status, 'failed');
    assert.equal(apply.attempts, 5);
    assert.deepEqual(done.steps.map((s: any) => s.status), ['completed', 'completed', 'failed', 'pending', 'pending']);
    const failed = await f.getInstall(A, res.body.owner_id);
    assert.equal(failed.body.state, 'failed');
    assert.equal(failed.body.reconciling, false);
    assert.equal(failed.body.current_render_id, null);
    assert.deepEqual(failed.body.urls, []);
    // The render was made, never current.
    const renders = (await t.request('GET', `/v1/installs/${res.body.owner_id}/renders`, f.opts(A))).body.data;
    assert.equal(renders.length, 1);
    assert.equal(renders[0].current, false);
    assert.equal(renders[0].replaced_at, null);

    // Not reconciling: an update is accepted, and fails the same way; still failed (nothing ever ran).
    const up = await t.request('PATCH', `/v1/installs/${res.body.owner_id}`, f.opts(A, { body: { values: { replicas: 2 } }, headers: { 'if-match': failed.body.etag } }));
    assert.equal(up.status, 202, up.text);
    assert.equal((await f.waitOp(A, up.body.id)).state, 'FAILED');
    assert.equal((await f.getInstall(A, res.body.owner_id)).body.state, 'failed');
    assert.equal((await f.deleteInstall(A, res.body.owner_id)).state, 'SUCCEEDED');
  });

  test('an update whose render cannot succeed fails at once; the install is degraded, still serving its render', async () => {
    const cluster = await f.cluster(A);
    // A package of its own: its broken version must not become the latest of the others' package.
    const own = (await f.packageWithVersion(A)).pkgId;
    const created = await f.healthyInstall(A, own, cluster);
    const id = created.owner_id;
    const broken = { ...MANIFEST, resources: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '{{ values.missing }}' } }] };
    await f.version(A, own, '1.1.0', broken, SCHEMA);
    const up = await t.request('PATCH', `/v1/installs/${id}`, f.opts(A, { body: { package_version_pin: { kind: 'pinned', version: '1.1.0' } }, headers: { 'if-match': '*' } }));
    assert.equal(up.status, 202, up.text);
    const done = await f.waitOp(A, up.body.id);
    assert.equal(done.state, 'FAILED');
    assert.match(done.error.message, /step render failed: .*values\.missing/);
    assert.equal(stepOf(done, 'render').attempts, 1, 'not retried');
    const now = (await f.getInstall(A, id)).body;
    assert.equal(now.state, 'degraded');
    assert.equal(now.reconciling, false);
    assert.equal(now.current_render_id, created.response.render_id);
    assert.equal(now.urls.length, 2, 'the URLs of the current render stay');
    assert.equal(now.semver, '1.1.0', 'the install is set to the version it was asked for');
    // Back to a good version: healthy again.
    const fix = await t.request('PATCH', `/v1/installs/${id}`, f.opts(A, { body: { package_version_pin: { kind: 'pinned', version: '1.0.0' } }, headers: { 'if-match': now.etag } }));
    assert.equal((await f.waitOp(A, fix.body.id)).state, 'SUCCEEDED');
    assert.equal((await f.getInstall(A, id)).body.state, 'healthy');
  });

  test('undeploy: retried with last_error, or skipped when it keeps failing; the install goes either way', async () => {
    const flaky = await f.cluster(A, [{ action: 'undeploy', fail_times: 2, latency_ms: 50 }]);
    const a = (await f.healthyInstall(A, pkg, flaky)).owner_id;
    const etag = (await f.getInstall(A, a)).body.etag;
    const del = await t.request('DELETE', `/v1/installs/${a}`, f.opts(A, { headers: { 'if-match': etag } }));
    const during = await f.lastErrorWhileRunning(A, del.body.id);
    assert.ok(during);
    assert.equal(during.last_error.step_name, 'undeploy');
    const done = await f.waitOp(A, del.body.id);
    assert.equal(done.state, 'SUCCEEDED');
    assert.equal(done.last_error, null);
    assert.equal(stepOf(done, 'undeploy').attempts, 3);
    assert.equal((await f.getInstall(A, a)).status, 404);

    const dead = await f.cluster(A, [{ action: 'undeploy', fail_times: 100 }]);
    const b = (await f.healthyInstall(A, pkg, dead)).owner_id;
    const gone = await f.deleteInstall(A, b);
    assert.equal(gone.state, 'SUCCEEDED');
    assert.equal(stepOf(gone, 'undeploy').status, 'skipped');
    assert.match(stepOf(gone, 'undeploy').error_message, /injected fault: undeploy/);
    assert.equal((await f.getInstall(A, b)).status, 404);
  });

  test('one operation at a time: an update while the create runs is 409; a delete drains the create', async () => {
    const cluster = await f.cluster(A, [{ action: 'deploy', latency_ms: 400 }]);
    const res = await install(cluster);
    const id = res.body.owner_id;
    const up = await t.request('PATCH', `/v1/installs/${id}`, f.opts(A, { body: { values: { replicas: 2 } }, headers: { 'if-match': '*' } }));
    assert.equal(up.status, 409, up.text);
    assert.equal(up.body.error.code, 'ABORTED');
    assert.equal(up.body.error.reason, 'OPERATION_IN_PROGRESS');
    assert.equal(up.body.error.metadata.operation_id, res.body.id);

    const del = await t.request('DELETE', `/v1/installs/${id}`, f.opts(A, { headers: { 'if-match': '*' } }));
    assert.equal(del.status, 202, del.text);
    const deleted = await f.waitOp(A, del.body.id);
    assert.equal(deleted.state, 'SUCCEEDED', JSON.stringify(deleted));
    const create = await f.waitOp(A, res.body.id);
    assert.equal(create.state, 'CANCELLED');
    assert.equal((await f.getInstall(A, id)).status, 404);
    assert.deepEqual(await t.services.db.selectFrom('local_deployments').select('install_id').where('install_id', '=', id).execute(), []);
  });

  test('concurrent deletions start one operation', async () => {
    const cluster = await f.cluster(A);
    const id = (await f.healthyInstall(A, pkg, cluster)).owner_id;
    const results = await Promise.all(Array.from({ length: 5 }, () => t.request('DELETE', `/v1/installs/${id}`, f.opts(A, { headers: { 'if-match': '*' } }))));
    const ids = new Set(results.map((r) => (r.status === 202 ? r.body.id : `${r.status}`)));
    assert.ok([...ids].every((x) => x.startsWith('op_') || x === '404'), JSON.stringify([...ids]));
    assert.equal([...ids].filter((x) => x.startsWith('op_')).length, 1, JSON.stringify(results.map((r) => [r.status, r.body?.id])));
    await f.waitOp(A, [...ids].find((x) => x.startsWith('op_'))!);
  });

  test('a cluster with installs cannot be deleted; without them it can', async () => {
    const cluster = await f.cluster(A);
    const id = (await f.healthyInstall(A, pkg, cluster)).owner_id;
    const before_ = await t.request('GET', `/v1/clusters/${cluster}`, f.opts(A));
    const refused = await t.request('DELETE', `/v1/clusters/${cluster}`, f.opts(A, { headers: { 'if-match': before_.body.etag } }));
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error.code, 'FAILED_PRECONDITION');
    assert.equal(refused.body.error.reason, 'CLUSTER_HAS_INSTALLS');
    const unchanged = await t.request('GET', `/v1/clusters/${cluster}`, f.opts(A));
    assert.deepEqual(unchanged.body, before_.body, 'the cluster is untouched');

    await f.deleteInstall(A, id);
    const del = await t.request('DELETE', `/v1/clusters/${cluster}`, f.opts(A, { headers: { 'if-match': '*' } }));
    assert.equal(del.status, 202, del.text);
    assert.equal((await f.waitOp(A, del.body.id)).state, 'SUCCEEDED');
    // A deleting cluster takes no new installs.
    const slow = await f.cluster(A, [{ action: 'destroy', latency_ms: 300 }]);
    const del2 = await t.request('DELETE', `/v1/clusters/${slow}`, f.opts(A, { headers: { 'if-match': '*' } }));
    assert.equal(del2.status, 202);
    const late = await install(slow);
    assert.ok([400, 422].includes(late.status), late.text);
    assert.ok(['CLUSTER_NOT_ACTIVE', 'CLUSTER_NOT_FOUND'].includes(late.body.error.reason), late.text);
    await f.waitOp(A, del2.body.id);
  });

  test('installs racing a cluster deletion: either the install exists and the deletion is refused, or neither', async () => {
    for (let round = 0; round < 3; round++) {
      const cluster = await f.cluster(A);
      const [created, deleted] = await Promise.all([
        install(cluster),
        (async () => {
          await sleep(round);
          return t.request('DELETE', `/v1/clusters/${cluster}`, f.opts(A, { headers: { 'if-match': '*' } }));
        })(),
      ]);
      if (created.status === 202) {
        assert.equal(deleted.status, 422, deleted.text);
        assert.equal(deleted.body.error.reason, 'CLUSTER_HAS_INSTALLS');
        await f.waitOp(A, created.body.id);
        await f.deleteInstall(A, created.body.owner_id);
      } else {
        assert.equal(deleted.status, 202, deleted.text);
        // The deletion may even have finished (the cluster gone) before the install was checked.
        assert.ok(['CLUSTER_NOT_ACTIVE', 'CLUSTER_NOT_FOUND'].includes(created.body.error.reason), created.text);
        await f.waitOp(A, deleted.body.id);
      }
    }
  });

  test('workspace deletion undeploys and removes every install before the clusters', async () => {
    const bob = await t.user('bob');
    const W: Caller = { user: bob, ws: (await t.workspace(bob, 'Doomed')).id };
    const wpkg = (await f.packageWithVersion(W)).pkgId;
    const cluster = await f.cluster(W);
    const healthy = (await f.healthyInstall(W, wpkg, cluster)).owner_id;
    // And one still being created, on a slow cluster: the deletion cancels it first.
    const slow = await f.cluster(W, [{ action: 'deploy', latency_ms: 300 }]);
    const running = await f.createInstall(W, { package_id: wpkg, package_version_pin: { kind: 'latest' }, cluster_id: slow });
    assert.equal(running.status, 202);

    const etag = (await t.request('GET', `/v1/workspaces/${W.ws}`, { token: bob.token })).body.etag;
    const del = await t.request('DELETE', `/v1/workspaces/${W.ws}`, { token: bob.token, headers: { 'if-match': etag } });
    assert.equal(del.status, 202, del.text);
    assert.deepEqual(del.body.steps.map((s: any) => s.name), ['cancel_operations', 'delete_installs', 'delete_machines', 'delete_clusters', 'revoke_credentials', 'remove_workspace']);
    const late = await f.createInstall(W, { package_id: wpkg, package_version_pin: { kind: 'latest' }, cluster_id: cluster });
    assert.equal(late.status, 422);
    assert.equal(late.body.error.reason, 'WORKSPACE_DELETING');
    const done = await f.waitOp(W, del.body.id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    assert.ok(done.steps.every((s: any) => s.status === 'completed'), JSON.stringify(done.steps));
    assert.equal((await f.waitOp(W, running.body.id)).state, 'CANCELLED');

    const db = t.services.db;
    const ids = [healthy, running.body.owner_id];
    assert.deepEqual(await db.selectFrom('installs').select('id').where('workspace_id', '=', W.ws).execute(), []);
    assert.deepEqual(await db.selectFrom('install_renders').select('id').where('install_id', 'in', ids).execute(), []);
    assert.deepEqual(await db.selectFrom('install_urls').select('hostname').where('install_id', 'in', ids).execute(), []);
    assert.deepEqual(await db.selectFrom('local_deployments').select('install_id').where('install_id', 'in', ids).execute(), [], 'nothing left deployed');
    assert.deepEqual(await db.selectFrom('clusters').select('id').where('workspace_id', '=', W.ws).execute(), []);
  });
});
