// Installs through HTTP with the local driver: the whole path (package, version, cluster, install,
// operation, list with URLs, renders, update, delete), values that violate the input schema,
// version resolution, idempotent replays, pagination, roles and workspace isolation.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';
import { InstallFixtures, PUBLIC_URL, type Caller } from './installs-fixtures.js';

const ULID = '[0-9a-hjkmnp-tv-z]{26}';

describe('installs', () => {
  let t: TestApp;
  let f: InstallFixtures;
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  let dave: TestUser;
  let A: Caller;
  let B: Caller;
  /** bob, a member of A */
  let M: Caller;
  let pkgA: string;
  let clusterA: string;

  before(async () => {
    t = await startTestApp();
    f = new InstallFixtures(t);
    alice = await t.user('alice');
    bob = await t.user('bob');
    carol = await t.user('carol');
    dave = await t.user('dave');
    A = { user: alice, ws: (await t.workspace(alice, 'A')).id };
    B = { user: carol, ws: (await t.workspace(carol, 'B')).id };
    await t.addMember(alice, A.ws, bob, 'member');
    M = { user: bob, ws: A.ws };
    pkgA = (await f.packageWithVersion(A)).pkgId;
    // Undeploys take a while, so a second DELETE meets the running deletion.
    clusterA = await f.cluster(A, [{ action: 'undeploy', latency_ms: 300 }]);
  });
  after(() => t.close());

  test('the whole path: install, operation, list with URLs, renders, update, delete', async () => {
    const res = await f.createInstall(A, { package_id: pkgA, package_version_pin: { kind: 'latest' }, cluster_id: clusterA, initial_values: { replicas: 2 } });
    assert.equal(res.status, 202, res.text);
    const op = res.body;
    assert.equal(op.state, 'RUNNING');
    assert.equal(op.owner_type, 'install');
    assert.match(op.owner_id, new RegExp(`^inst_${ULID}$`));
    assert.ok(op.owner_id.length <= 55);
    assert.equal(op.metadata.type, 'install.create');
    assert.equal(op.metadata.cluster_id, clusterA);
    assert.equal(op.metadata.install_id, op.owner_id);
    assert.equal(op.metadata.package_id, pkgA);
    assert.equal(op.metadata.semver, '1.0.0');
    assert.deepEqual(op.steps.map((s: { name: string }) => s.name), ['resolve_version', 'render', 'apply', 'wait_healthy', 'publish_urls']);
    const id = op.owner_id;

    const early = await f.getInstall(A, id);
    assert.equal(early.status, 200, early.text);
    assert.ok(['pending', 'rendering', 'syncing', 'healthy'].includes(early.body.state), early.body.state);
    if (early.body.state !== 'healthy') assert.equal(early.body.reconciling, true);

    const done = await f.waitOp(A, op.id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    assert.equal(done.last_error, null);
    assert.equal(done.response.type, 'install.create');
    assert.equal(done.response.cluster_id, clusterA);
    assert.equal(done.response.install_id, id);
    assert.match(done.response.render_id, new RegExp(`^rnd_${ULID}$`));
    const body = id.slice('inst_'.length);
    const urlOf = (key: string) => `http://${key}-${body}.preview.localhost:8081`;
    assert.deepEqual(done.response.urls, [{ route_key: 'web', url: urlOf('web') }, { route_key: 'api', url: urlOf('api') }]);

    // The list: every field of spec 2.2 and ours, with URL entries.
    const list = await f.listAll(A);
    const item = list.find((i) => i.id === id);
    assert.ok(item, 'listed');
    assert.deepEqual(Object.keys(item).sort(), [
      'cluster_id', 'created_at', 'current_render_id', 'etag', 'html_url', 'id', 'package_id', 'package_version_id', 'package_version_pin',
      'product_id', 'reconciling', 'semver', 'state', 'updated_at', 'urls', 'workspace_id',
    ]);
    assert.equal(item.workspace_id, A.ws);
    assert.equal(item.cluster_id, clusterA);
    assert.equal(item.product_id, pkgA);
    assert.equal(item.package_id, pkgA);
    assert.match(item.package_version_id, /^pkv_/);
    assert.equal(item.semver, '1.0.0');
    assert.deepEqual(item.package_version_pin, { kind: 'latest' });
    assert.equal(item.state, 'healthy');
    assert.equal(item.reconciling, false);
    assert.equal(item.current_render_id, done.response.render_id);
    assert.equal(item.html_url, `${PUBLIC_URL}/installs/${id}`);
    assert.ok(Number.isInteger(item.created_at) && Number.isInteger(item.updated_at));
    assert.equal(typeof item.etag, 'string');
    assert.deepEqual(item.urls.map((u: any) => u.route_key).sort(), ['api', 'web']);
    for (const u of item.urls) {
      assert.deepEqual(Object.keys(u).sort(), ['error', 'hostname', 'last_observed_at', 'route_key', 'updated_at', 'url']);
      assert.equal(u.hostname, `${u.route_key}-${body}.preview.localhost`);
      assert.equal(u.url, urlOf(u.route_key));
      assert.equal(u.error, '');
      assert.ok(Number.isInteger(u.updated_at) && Number.isInteger(u.last_observed_at));
    }

    // The get: the same fields plus the values, defaults applied; the ETag header.
    const got = await f.getInstall(A, id);
    assert.equal(got.status, 200);
    assert.equal(got.headers.etag, `"${got.body.etag}"`);
    assert.deepEqual(got.body.values, { replicas: 2, greeting: 'hello' });
    const { values: _values, ...withoutValues } = got.body;
    assert.deepEqual(withoutValues, item);

    // The render: placeholders substituted, values with their JSON type.
    const renders = await t.request('GET', `/v1/installs/${id}/renders`, f.opts(A));
    assert.equal(renders.status, 200, renders.text);
    assert.equal(renders.body.data.length, 1);
    const first = renders.body.data[0];
    assert.deepEqual(Object.keys(first).sort(), ['content_hash', 'created_at', 'current', 'id', 'install_id', 'package_version_id', 'replaced_at', 'semver', 'workspace_id']);
    assert.equal(first.id, done.response.render_id);
    assert.equal(first.current, true);
    assert.equal(first.replaced_at, null);
    assert.match(first.content_hash, /^[0-9a-f]{64}$/);
    const r1 = await t.request('GET', `/v1/installs/${id}/renders/${first.id}`, f.opts(A));
    assert.equal(r1.status, 200, r1.text);
    const [deployment, configMap] = r1.body.manifest.resources;
    assert.equal(deployment.spec.replicas, 2);
    assert.equal(deployment.metadata.labels['svc.dev/render'], first.id);
    assert.deepEqual(configMap.data, { greeting: 'say hello', ns: `svc-${body}` });
    assert.deepEqual(r1.body.manifest.routes.map((r: any) => r.route_key), ['web', 'api']);
    const deployed = await t.services.db.selectFrom('local_deployments').selectAll().where('install_id', '=', id).execute();
    assert.deepEqual(deployed.map((d) => [d.cluster_id, d.render_id, d.resource_count]), [[clusterA, first.id, 2]]);

    // PATCH: if-match required and checked; then a second render replaces the first.
    const noMatch = await t.request('PATCH', `/v1/installs/${id}`, f.opts(A, { body: { values: { replicas: 3 } } }));
    assert.equal(noMatch.status, 400);
    assert.equal(noMatch.body.error.field_violations[0].field, 'header.if-match');
    const stale = await t.request('PATCH', `/v1/installs/${id}`, f.opts(A, { body: { values: { replicas: 3 } }, headers: { 'if-match': '"1"' } }));
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.reason, 'ETAG_MISMATCH');
    assert.equal(stale.body.error.metadata.etag, got.body.etag);
    const empty = await t.request('PATCH', `/v1/installs/${id}`, f.opts(A, { body: {}, headers: { 'if-match': got.body.etag } }));
    assert.equal(empty.status, 400);
    const patch = await t.request('PATCH', `/v1/installs/${id}`, f.opts(A, { body: { values: { replicas: 3 } }, headers: { 'if-match': `"${got.body.etag}"` } }));
    assert.equal(patch.status, 202, patch.text);
    assert.equal(patch.body.metadata.type, 'install.update');
    assert.equal(patch.body.owner_id, id);
    assert.deepEqual(patch.body.steps.map((s: { name: string }) => s.name), ['resolve_version', 'render', 'apply', 'wait_healthy', 'publish_urls']);
    const updated = await f.waitOp(A, patch.body.id);
    assert.equal(updated.state, 'SUCCEEDED', JSON.stringify(updated));
    assert.equal(updated.response.type, 'install.update');
    const second = updated.response.render_id;
    assert.notEqual(second, first.id);

    const after1 = await t.request('GET', `/v1/installs/${id}/renders`, f.opts(A));
    assert.deepEqual(after1.body.data.map((r: any) => [r.id, r.current]), [[second, true], [first.id, false]], 'newest first');
    assert.equal(after1.body.data[0].replaced_at, null);
    assert.ok(Number.isInteger(after1.body.data[1].replaced_at), 'the previous render was replaced');
    assert.notEqual(after1.body.data[0].content_hash, first.content_hash, 'other values, other content');
    const now = await f.getInstall(A, id);
    assert.equal(now.body.current_render_id, second);
    assert.deepEqual(now.body.values, { replicas: 3, greeting: 'hello' });
    assert.equal(now.body.state, 'healthy');
    assert.notEqual(now.body.etag, got.body.etag);
    assert.deepEqual(now.body.urls.map((u: any) => u.url).sort(), [urlOf('api'), urlOf('web')]);

    // The same inputs again: a new render with the same content hash (the render id is not part of it).
    const again = await t.request('PATCH', `/v1/installs/${id}`, f.opts(A, { body: { values: { replicas: 3 } }, headers: { 'if-match': '*' } }));
    assert.equal(again.status, 202, again.text);
    const third = (await f.waitOp(A, again.body.id)).response.render_id;
    const after2 = await t.request('GET', `/v1/installs/${id}/renders?limit=1`, f.opts(A));
    assert.equal(after2.body.data[0].id, third);
    assert.equal(after2.body.data[0].content_hash, after1.body.data[0].content_hash);
    assert.equal(after2.body.has_more, true);
    const page2 = await t.request('GET', `/v1/installs/${id}/renders?limit=2&cursor=${after2.body.next_cursor}`, f.opts(A));
    assert.deepEqual(page2.body.data.map((r: any) => r.id), [second, first.id]);

    // DELETE: if-match required; the deletion's operation; a second DELETE returns it.
    const etag = (await f.getInstall(A, id)).body.etag;
    assert.equal((await t.request('DELETE', `/v1/installs/${id}`, f.opts(A))).status, 400);
    const staleDel = await t.request('DELETE', `/v1/installs/${id}`, f.opts(A, { headers: { 'if-match': '"1"' } }));
    assert.equal(staleDel.status, 409);
    assert.equal(staleDel.body.error.metadata.etag, etag);
    const del = await t.request('DELETE', `/v1/installs/${id}`, f.opts(A, { headers: { 'if-match': etag } }));
    assert.equal(del.status, 202, del.text);
    assert.equal(del.body.metadata.type, 'install.delete');
    assert.equal(del.body.owner_type, 'install');
    assert.equal(del.body.owner_id, id);
    assert.equal(del.body.metadata.cluster_id, clusterA);
    assert.deepEqual(del.body.steps.map((s: any) => [s.name, s.skippable]), [['drain_operations', false], ['undeploy', true], ['remove', false]]);
    const during = await f.getInstall(A, id);
    assert.equal(during.body.reconciling, true);
    const second_ = await t.request('DELETE', `/v1/installs/${id}`, f.opts(A, { headers: { 'if-match': etag } }));
    assert.equal(second_.status, 202);
    assert.equal(second_.body.id, del.body.id, 'the same operation, even with a stale etag');
    const patchDuring = await t.request('PATCH', `/v1/installs/${id}`, f.opts(A, { body: { values: {} }, headers: { 'if-match': '*' } }));
    assert.equal(patchDuring.status, 422);
    assert.equal(patchDuring.body.error.reason, 'INSTALL_DELETING');
    const cancel = await t.request('POST', `/v1/operations/${del.body.id}:cancel`, f.opts(A));
    assert.equal(cancel.status, 422, 'install.delete is not cancellable');

    const deleted = await f.waitOp(A, del.body.id);
    assert.equal(deleted.state, 'SUCCEEDED', JSON.stringify(deleted));
    assert.deepEqual(deleted.response, { type: 'install.delete', cluster_id: clusterA, install_id: id });
    assert.ok(deleted.steps.every((s: any) => s.status === 'completed'));
    assert.equal((await f.getInstall(A, id)).status, 404);
    assert.equal((await t.request('GET', `/v1/installs/${id}/renders`, f.opts(A))).status, 404);
    assert.equal((await t.request('GET', `/v1/installs/${id}/renders/${first.id}`, f.opts(A))).status, 404);
    assert.equal((await t.request('DELETE', `/v1/installs/${id}`, f.opts(A, { headers: { 'if-match': '*' } }))).status, 404);
    assert.ok(!(await f.listAll(A)).some((i) => i.id === id));
    const db = t.services.db;
    assert.deepEqual(await db.selectFrom('install_urls').select('hostname').where('install_id', '=', id).execute(), [], 'URLs gone');
    assert.deepEqual(await db.selectFrom('install_renders').select('id').where('install_id', '=', id).execute(), [], 'renders gone');
    assert.deepEqual(await db.selectFrom('local_deployments').select('render_id').where('install_id', '=', id).execute(), [], 'undeployed');
  });

  test('values that violate the input schema: 400 with field violations, nothing created or changed', async () => {
    const installs = await f.listAll(A);
    const ops = await f.operationIds(A);
    const bad = async (initial_values: unknown, field: string) => {
      const res = await f.createInstall(A, { package_id: pkgA, package_version_pin: { kind: 'latest' }, cluster_id: clusterA, initial_values });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
      assert.equal(res.body.error.reason, 'VALUES_INVALID');
      assert.ok(res.body.error.field_violations.some((v: { field: string }) => v.field === field), res.text);
    };
    await bad({ replicas: 11 }, 'body.initial_values.replicas');
    await bad({ replicas: 0 }, 'body.initial_values.replicas');
    await bad({ replicas: 'two' }, 'body.initial_values.replicas');
    await bad({ greeting: 'x'.repeat(51) }, 'body.initial_values.greeting');
    const unknown = await f.createInstall(A, { package_id: pkgA, package_version_pin: { kind: 'latest' }, cluster_id: clusterA, initial_values: { nope: 1 } });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error.reason, 'VALUES_INVALID');
    const notObject = await f.createInstall(A, { package_id: pkgA, package_version_pin: { kind: 'latest' }, cluster_id: clusterA, initial_values: [1] });
    assert.equal(notObject.status, 400);
    assert.deepEqual(await f.listAll(A), installs, 'no install created');
    assert.deepEqual(await f.operationIds(A), ops, 'no operation started');

    // On PATCH the violations name body.values, and the install is left as it was.
    const created = await f.healthyInstall(A, pkgA, clusterA);
    const before_ = await f.getInstall(A, created.owner_id);
    const opsBefore = await f.operationIds(A);
    const res = await t.request('PATCH', `/v1/installs/${created.owner_id}`, f.opts(A, { body: { values: { replicas: 99 } }, headers: { 'if-match': before_.body.etag } }));
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.reason, 'VALUES_INVALID');
    assert.equal(res.body.error.field_violations[0].field, 'body.values.replicas');
    assert.deepEqual((await f.getInstall(A, created.owner_id)).body, before_.body);
    assert.deepEqual(await f.operationIds(A), opsBefore);
  });

  test('version resolution: latest is the highest release, pinned is exact; missing versions and bad pins', async () => {
    const pkg = await f.pkg(A);
    const v100 = await f.version(A, pkg, '1.0.0');
    const v120 = await f.version(A, pkg, '1.2.0');
    const rc = await f.version(A, pkg, '2.0.0-rc.1');
    const install = (pin: unknown) => f.createInstall(A, { package_id: pkg, package_version_pin: pin, cluster_id: clusterA });

    const latest = await install({ kind: 'latest' });
    assert.equal(latest.status, 202, latest.text);
    assert.equal(latest.body.metadata.semver, '1.2.0', 'prereleases are never latest');
    assert.equal(latest.body.metadata.package_version_id, v120.id);
    const pinned = await install({ kind: 'pinned', version: '1.0.0' });
    assert.equal(pinned.status, 202, pinned.text);
    assert.equal(pinned.body.metadata.package_version_id, v100.id);
    const pre = await install({ kind: 'pinned', version: '2.0.0-rc.1' });
    assert.equal(pre.status, 202, pre.text);
    assert.equal(pre.body.metadata.package_version_id, rc.id);
    for (const op of [latest, pinned, pre]) assert.equal((await f.waitOp(A, op.body.id)).state, 'SUCCEEDED');
    const item = (await f.listAll(A)).find((i) => i.id === pinned.body.owner_id);
    assert.deepEqual(item.package_version_pin, { kind: 'pinned', version: '1.0.0' });
    assert.equal(item.semver, '1.0.0');

    const missing = await install({ kind: 'pinned', version: '9.9.9' });
    assert.equal(missing.status, 422, missing.text);
    assert.equal(missing.body.error.reason, 'VERSION_NOT_FOUND');
    const noVersion = await install({ kind: 'pinned' });
    assert.equal(noVersion.status, 400);
    assert.equal(noVersion.body.error.field_violations[0].field, 'body.package_version_pin.version');
    const extraVersion = await install({ kind: 'latest', version: '1.0.0' });
    assert.equal(extraVersion.status, 400);
    const onlyPre = await f.pkg(A);
    await f.version(A, onlyPre, '0.1.0-alpha');
    const none = await f.createInstall(A, { package_id: onlyPre, package_version_pin: { kind: 'latest' }, cluster_id: clusterA });
    assert.equal(none.status, 422);
    assert.equal(none.body.error.reason, 'VERSION_NOT_FOUND');

    // An update re-resolves latest: a newer release is picked up.
    const v130 = await f.version(A, pkg, '1.3.0');
    const id = latest.body.owner_id;
    const up = await t.request('PATCH', `/v1/installs/${id}`, f.opts(A, { body: { package_version_pin: { kind: 'latest' } }, headers: { 'if-match': '*' } }));
    assert.equal(up.status, 202, up.text);
    assert.equal(up.body.metadata.semver, '1.3.0');
    assert.equal((await f.waitOp(A, up.body.id)).state, 'SUCCEEDED');
    const moved = (await f.getInstall(A, id)).body;
    assert.equal(moved.package_version_id, v130.id);
    assert.equal(moved.semver, '1.3.0');
    const renders = (await t.request('GET', `/v1/installs/${id}/renders`, f.opts(A))).body.data;
    assert.deepEqual(renders.map((r: any) => r.semver), ['1.3.0', '1.2.0']);
    // Pinning back.
    const back = await t.request('PATCH', `/v1/installs/${id}`, f.opts(A, { body: { package_version_pin: { kind: 'pinned', version: '1.0.0' } }, headers: { 'if-match': '*' } }));
    assert.equal(back.status, 202, back.text);
    assert.equal((await f.waitOp(A, back.body.id)).state, 'SUCCEEDED');
    assert.deepEqual((await f.getInstall(A, id)).body.package_version_pin, { kind: 'pinned', version: '1.0.0' });

    // Unknown or foreign package and cluster; ids of the wrong kind.
    const foreignPkg = (await f.packageWithVersion(B)).pkgId;
    for (const package_id of ['pkg_01jf8x3q6m2c4y7n0k5t9r1b3d', foreignPkg, clusterA, 'nope']) {
      const res = await f.createInstall(A, { package_id, package_version_pin: { kind: 'latest' }, cluster_id: clusterA });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.error.reason, 'PACKAGE_NOT_FOUND');
      assert.equal(res.body.error.field_violations[0].field, 'body.package_id');
    }
    const foreignCluster = await f.cluster(B);
    for (const cluster_id of ['clu_01jf8x3q6m2c4y7n0k5t9r1b3d', foreignCluster, pkg]) {
      const res = await f.createInstall(A, { package_id: pkg, package_version_pin: { kind: 'latest' }, cluster_id });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.error.reason, 'CLUSTER_NOT_FOUND');
    }
    // A cluster that is not active.
    const broken = await t.request('POST', '/v1/clusters', f.opts(A, { body: { name: 'broken', local: { faults: [{ action: 'provision', fail_times: 100 }] } } }));
    assert.equal((await f.waitOp(A, broken.body.id)).state, 'FAILED');
    const suspended = await f.createInstall(A, { package_id: pkg, package_version_pin: { kind: 'latest' }, cluster_id: broken.body.owner_id });
    assert.equal(suspended.status, 422);
    assert.equal(suspended.body.error.reason, 'CLUSTER_NOT_ACTIVE');
  });

  test('idempotency-key: a replay returns the same operation and creates nothing more', async () => {
    const before_ = (await f.listAll(A)).length;
    const body = { package_id: pkgA, package_version_pin: { kind: 'latest' }, cluster_id: clusterA, initial_values: { greeting: 'hi' } };
    const first = await f.createInstall(A, body, { 'idempotency-key': 'inst-1' });
    assert.equal(first.status, 202, first.text);
    const replay = await f.createInstall(A, body, { 'idempotency-key': 'inst-1' });
    assert.equal(replay.status, 202);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body.id, first.body.id);
    const other = await f.createInstall(A, { ...body, initial_values: { greeting: 'ho' } }, { 'idempotency-key': 'inst-1' });
    assert.equal(other.status, 422);
    assert.equal(other.body.error.reason, 'IDEMPOTENCY_KEY_REUSED');
    await f.waitOp(A, first.body.id);
    const late = await f.createInstall(A, body, { 'idempotency-key': 'inst-1' });
    assert.equal(late.body.id, first.body.id);
    assert.equal(late.body.state, 'SUCCEEDED', 'the replay shows the operation as it is now');
    assert.equal((await f.listAll(A)).length, before_ + 1);
  });

  test('list: newest first, keyset pages, each install with its own URLs; cursors are checked', async () => {
    await f.healthyInstall(A, pkgA, clusterA);
    const all = await f.listAll(A);
    assert.ok(all.length >= 3);
    const ids = all.map((i) => i.id);
    assert.deepEqual(ids, [...ids].sort().reverse());
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: Response = await t.request('GET', `/v1/installs?limit=2${cursor ? `&cursor=${cursor}` : ''}`, f.opts(A));
      assert.equal(res.status, 200, res.text);
      assert.ok(res.body.data.length <= 2);
      for (const item of res.body.data) {
        seen.push(item.id);
        const expected = all.find((i) => i.id === item.id);
        assert.deepEqual(item.urls, expected.urls);
        for (const u of item.urls) assert.ok(u.hostname.includes(item.id.slice(5)), 'a URL of this install');
      }
      assert.equal(res.body.has_more, res.body.next_cursor !== null);
      cursor = res.body.next_cursor;
    } while (cursor);
    assert.deepEqual(seen, ids);
    const bad = await t.request('GET', '/v1/installs?cursor=abc.def', f.opts(A));
    assert.equal(bad.status, 400);
    const first = await t.request('GET', '/v1/installs?limit=1', f.opts(A));
    const foreign = await t.request('GET', `/v1/installs?limit=1&cursor=${first.body.next_cursor}`, f.opts(B));
    assert.equal(foreign.status, 400, 'a cursor of another workspace');
    assert.equal((await t.request('GET', '/v1/installs?limit=0', f.opts(A))).status, 400);
    assert.equal((await t.request('GET', '/v1/installs?limit=101', f.opts(A))).status, 400);
  });

  test('list filters: cluster, package and state narrow the list, combine, and bind their cursors', async () => {
    // A workspace of its own: the free plan's cluster quota is spent in A.
    const D: Caller = { user: dave, ws: (await t.workspace(dave, 'D')).id };
    const [pkgD, otherPkg] = [(await f.packageWithVersion(D)).pkgId, (await f.packageWithVersion(D)).pkgId];
    const [clusterD, otherCluster] = [await f.cluster(D), await f.cluster(D)];
    const broken = await f.cluster(D, [{ action: 'deploy', fail_times: 100 }]);
    await f.healthyInstall(D, pkgD, clusterD);
    const onOther = [(await f.healthyInstall(D, pkgD, otherCluster)).owner_id, (await f.healthyInstall(D, otherPkg, otherCluster)).owner_id];
    const failedOp = await f.createInstall(D, { package_id: otherPkg, package_version_pin: { kind: 'latest' }, cluster_id: broken });
    assert.equal(failedOp.status, 202, failedOp.text);
    assert.equal((await f.waitOp(D, failedOp.body.id)).state, 'FAILED');
    const failed = failedOp.body.owner_id;
    const all = await f.listAll(D);
    const list = async (query: string) => {
      const res = await t.request('GET', `/v1/installs?limit=100&${query}`, f.opts(D));
      assert.equal(res.status, 200, res.text);
      for (const item of res.body.data) assert.deepEqual(item, all.find((i) => i.id === item.id), 'a filtered item is the item, URLs included');
      return res.body.data.map((i: { id: string }) => i.id);
    };
    const expect = (pred: (i: any) => boolean) => all.filter(pred).map((i) => i.id);
    assert.deepEqual(await list(`cluster_id=${otherCluster}`), [...onOther].reverse());
    assert.deepEqual(await list(`package_id=${otherPkg}`), [failed, onOther[1]]);
    assert.deepEqual(await list(`cluster_id=${otherCluster}&package_id=${otherPkg}`), [onOther[1]]);
    assert.deepEqual(await list('state=failed'), expect((i) => i.state === 'failed'));
    assert.ok((await list('state=failed')).includes(failed));
    assert.deepEqual(await list(`state=healthy&package_id=${pkgD}`), expect((i) => i.state === 'healthy' && i.package_id === pkgD));
    assert.deepEqual(await list(`package_id=${otherPkg}&state=healthy&cluster_id=${broken}`), []);
    assert.deepEqual(await list('cluster_id=clu_unknown'), [], 'an id of no install matches nothing');
    assert.deepEqual((await t.request('GET', `/v1/installs?cluster_id=${otherCluster}`, f.opts(B))).body.data, [], 'another workspace sees none of them');

    // Keyset pages over a filter, each cursor bound to its filters.
    const first = await t.request('GET', `/v1/installs?limit=1&cluster_id=${otherCluster}`, f.opts(D));
    assert.deepEqual(first.body.data.map((i: any) => i.id), [onOther[1]]);
    assert.equal(first.body.has_more, true);
    const second = await t.request('GET', `/v1/installs?limit=1&cluster_id=${otherCluster}&cursor=${first.body.next_cursor}`, f.opts(D));
    assert.deepEqual(second.body.data.map((i: any) => i.id), [onOther[0]]);
    assert.equal(second.body.has_more, false);
    assert.equal(second.body.next_cursor, null);
    for (const query of [`limit=1&cursor=${first.body.next_cursor}`, `limit=1&package_id=${otherPkg}&cursor=${first.body.next_cursor}`]) {
      const res = await t.request('GET', `/v1/installs?${query}`, f.opts(D));
      assert.equal(res.status, 400, query);
      assert.equal(res.body.error.reason, 'INVALID_CURSOR');
    }
    const unfiltered = await t.request('GET', '/v1/installs?limit=1', f.opts(D));
    assert.equal((await t.request('GET', `/v1/installs?limit=1&state=healthy&cursor=${unfiltered.body.next_cursor}`, f.opts(D))).status, 400);
    for (const bad of ['state=broken', 'state=', 'cluster_id=', `package_id=${'p'.repeat(55)}`, 'owner_id=x']) {
      const res = await t.request('GET', `/v1/installs?${bad}`, f.opts(D));
      assert.equal(res.status, 400, bad);
      assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
    }
  });

  test('roles: members install, update and delete; API tokens too; outsiders get 403', async () => {
    const op = await f.healthyInstall(M, pkgA, clusterA);
    const id = op.owner_id;
    assert.equal(op.metadata.type, 'install.create');
    const up = await t.request('PATCH', `/v1/installs/${id}`, f.opts(M, { body: { values: { replicas: 4 } }, headers: { 'if-match': '*' } }));
    assert.equal(up.status, 202, up.text);
    await f.waitOp(M, up.body.id);
    const token = (await t.apiToken(alice, A.ws, { role: 'member' })).token;
    const viaToken = await t.request('GET', `/v1/installs/${id}`, { token });
    assert.equal(viaToken.status, 200);
    assert.deepEqual(viaToken.body.values, { replicas: 4, greeting: 'hello' });
    const list = await t.request('GET', '/v1/installs', { token });
    assert.ok(list.body.data.some((i: any) => i.id === id));
    assert.equal((await f.deleteInstall(M, id)).state, 'SUCCEEDED');

    const outsider = { token: dave.token, headers: { 'svc-context': A.ws } };
    assert.equal((await t.request('GET', '/v1/installs', outsider)).status, 403);
    assert.equal((await t.request('POST', '/v1/installs', { ...outsider, body: { package_id: pkgA, package_version_pin: { kind: 'latest' }, cluster_id: clusterA } })).status, 403);
    assert.equal((await t.request('GET', '/v1/installs', { token: alice.token })).status, 403, 'no svc-context');
  });

  test('another workspace: its installs and renders are 404, its packages and clusters unusable', async () => {
    const op = await f.healthyInstall(A, pkgA, clusterA);
    const id = op.owner_id;
    const renderId = op.response.render_id;
    const asB = (extra: { body?: unknown; headers?: Record<string, string> } = {}) => f.opts(B, extra);
    for (const [method, url, extra] of [
      ['GET', `/v1/installs/${id}`, {}],
      ['PATCH', `/v1/installs/${id}`, { body: { values: {} }, headers: { 'if-match': '*' } }],
      ['DELETE', `/v1/installs/${id}`, { headers: { 'if-match': '*' } }],
      ['GET', `/v1/installs/${id}/renders`, {}],
      ['GET', `/v1/installs/${id}/renders/${renderId}`, {}],
    ] as const) {
      const res = await t.request(method, url, asB(extra));
      assert.equal(res.status, 404, `${method} ${url}: ${res.text}`);
      assert.equal(res.body.error.code, 'NOT_FOUND');
      assert.ok(!res.text.includes(A.ws));
    }
    const listB = await t.request('GET', '/v1/installs', asB());
    assert.ok(!listB.body.data.some((i: any) => i.id === id));
    // carol naming A: 403.
    assert.equal((await t.request('GET', `/v1/installs/${id}`, { token: carol.token, headers: { 'svc-context': A.ws } })).status, 403);
    // A's render id under another install of A: 404.
    const other = await f.healthyInstall(A, pkgA, clusterA);
    assert.equal((await t.request('GET', `/v1/installs/${other.owner_id}/renders/${renderId}`, f.opts(A))).status, 404);
    // Still there and unchanged for A.
    assert.equal((await f.getInstall(A, id)).body.state, 'healthy');
    for (const bad of ['x', 'inst_x', `clu_${id.slice(5)}`]) assert.equal((await f.getInstall(A, bad)).status, 404);
    assert.equal((await t.request('GET', `/v1/installs/${id}/renders/rnd_x`, f.opts(A))).status, 404);
  });
});

