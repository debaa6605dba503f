// Issue 34, who did what: clusters, packages, package versions and installs are audited with their
// actor; every audit event names the actor and the resource as people know them, as they were when
// it was recorded (so a deleted cluster's events still read well); operations carry created_by with
// the creator's name and e-mail, on the 202 answer, GET, :wait and list items alike.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { InstallFixtures, MANIFEST, SCHEMA, type Caller } from './installs-fixtures.js';

describe('who did what', () => {
  let t: TestApp;
  let f: InstallFixtures;
  let ada: TestUser;
  let member: TestUser;
  let c: Caller;
  let n = 0;
  const rid = () => `who-${++n}`;

  async function events(query = ''): Promise<any[]> {
    const res = await t.request('GET', `/v1/audit_events?limit=100${query}`, f.opts(c));
    assert.equal(res.status, 200, res.text);
    return res.body.data;
  }

  /** The one event of `action` the request `requestId` recorded. */
  async function eventOf(requestId: string, action: string): Promise<any> {
    const found = (await events(`&action=${action}`)).filter((e) => e.request_id === requestId);
    assert.equal(found.length, 1, `one ${action} event for request ${requestId}: ${JSON.stringify(found)}`);
    return found[0];
  }

  const adaActor = () => ({ type: 'user', id: ada.id, name: 'Ada Lovelace', email: ada.email });

  before(async () => {
    t = await startTestApp();
    f = new InstallFixtures(t);
    // A user with a display name, as sign-up and invitations make them.
    const email = `ada-${Date.now()}@example.test`;
    const user = await t.services.users.createUser({ email, password: 'correct horse battery', name: 'Ada Lovelace' });
    ada = { id: user.id, email, password: 'correct horse battery', token: (await t.services.sessions.createSession(user.id)).token };
    member = await t.user('member');
    c = { user: ada, ws: (await t.workspace(ada, 'Who')).id };
    await t.addMember(ada, c.ws, member, 'member');
  });
  after(() => t.close());

  test('packages, versions, clusters and installs: every change audited with its actor and the names of the time', async () => {
    const r = { pkg: rid(), ver: rid(), clu: rid(), rename: rid(), refresh: rid(), inst: rid(), update: rid(), del: rid(), cdel: rid() };
    const pkg = await t.request('POST', '/v1/packages', f.opts(c, { body: { name: 'wiki' }, headers: { 'x-request-id': r.pkg } }));
    assert.equal(pkg.status, 201, pkg.text);
    const pkgEvent = await eventOf(r.pkg, 'package.create');
    assert.deepEqual(
      [pkgEvent.actor, pkgEvent.resource_type, pkgEvent.resource_id, pkgEvent.resource_name],
      [adaActor(), 'package', pkg.body.id, 'wiki'],
    );

    const ver = await t.request('POST', `/v1/packages/${pkg.body.id}/versions`, f.opts(c, {
      body: { semver: '1.0.0', input_schema: SCHEMA, manifest: MANIFEST }, headers: { 'x-request-id': r.ver },
    }));
    assert.equal(ver.status, 201, ver.text);
    const verEvent = await eventOf(r.ver, 'package.version.create');
    assert.deepEqual(
      [verEvent.actor, verEvent.resource_type, verEvent.resource_id, verEvent.resource_name, verEvent.metadata],
      [adaActor(), 'package_version', ver.body.id, 'wiki 1.0.0', { package_id: pkg.body.id, package_name: 'wiki', semver: '1.0.0' }],
    );

    const clu = await t.request('POST', '/v1/clusters', f.opts(c, { body: { name: 'dev' }, headers: { 'x-request-id': r.clu } }));
    assert.equal(clu.status, 202, clu.text);
    const clusterId = clu.body.owner_id;
    assert.equal((await f.waitOp(c, clu.body.id)).state, 'SUCCEEDED');
    const cluEvent = await eventOf(r.clu, 'cluster.create');
    assert.deepEqual(
      [cluEvent.actor, cluEvent.resource_id, cluEvent.resource_name, cluEvent.metadata],
      [adaActor(), clusterId, 'dev', { provider: 'local', operation_id: clu.body.id }],
    );

    const renamed = await t.request('PATCH', `/v1/clusters/${clusterId}`, f.opts(c, { body: { name: 'staging' }, headers: { 'if-match': '*', 'x-request-id': r.rename } }));
    assert.equal(renamed.status, 200, renamed.text);
    const renameEvent = await eventOf(r.rename, 'cluster.update');
    assert.deepEqual([renameEvent.actor, renameEvent.resource_name, renameEvent.metadata], [adaActor(), 'staging', { previous_name: 'dev' }]);
    // What was recorded stays as it was: the create still reads "dev".
    assert.equal((await eventOf(r.clu, 'cluster.create')).resource_name, 'dev');

    const refresh = await t.request('POST', `/v1/clusters/${clusterId}/capabilities:refresh`, f.opts(c, { headers: { 'x-request-id': r.refresh } }));
    assert.equal(refresh.status, 202, refresh.text);
    await f.waitOp(c, refresh.body.id);
    const refreshEvent = await eventOf(r.refresh, 'cluster.capabilities.refresh');
    assert.deepEqual([refreshEvent.actor, refreshEvent.resource_name, refreshEvent.metadata], [adaActor(), 'staging', { operation_id: refresh.body.id }]);

    const inst = await f.createInstall(c, { package_id: pkg.body.id, package_version_pin: { kind: 'latest' }, cluster_id: clusterId }, { 'x-request-id': r.inst });
    assert.equal(inst.status, 202, inst.text);
    const installId = inst.body.owner_id;
    assert.equal((await f.waitOp(c, inst.body.id)).state, 'SUCCEEDED');
    const instEvent = await eventOf(r.inst, 'install.create');
    assert.deepEqual(
      [instEvent.actor, instEvent.resource_type, instEvent.resource_id, instEvent.resource_name, instEvent.metadata],
      [adaActor(), 'install', installId, 'wiki on staging', {
        package_id: pkg.body.id, package_name: 'wiki', package_version_id: ver.body.id, semver: '1.0.0',
        cluster_id: clusterId, cluster_name: 'staging', operation_id: inst.body.id,
      }],
    );

    const etag = (await f.getInstall(c, installId)).body.etag;
    const upd = await t.request('PATCH', `/v1/installs/${installId}`, f.opts(c, { body: { values: { replicas: 2 } }, headers: { 'if-match': etag, 'x-request-id': r.update } }));
    assert.equal(upd.status, 202, upd.text);
    await f.waitOp(c, upd.body.id);
    const updEvent = await eventOf(r.update, 'install.update');
    assert.deepEqual([updEvent.actor, updEvent.resource_name, updEvent.metadata.operation_id, updEvent.metadata.semver], [adaActor(), 'wiki on staging', upd.body.id, '1.0.0']);

    const delEtag = (await f.getInstall(c, installId)).body.etag;
    const del = await t.request('DELETE', `/v1/installs/${installId}`, f.opts(c, { headers: { 'if-match': delEtag, 'x-request-id': r.del } }));
    assert.equal(del.status, 202, del.text);
    assert.equal((await f.waitOp(c, del.body.id)).state, 'SUCCEEDED');
    const delEvent = await eventOf(r.del, 'install.delete');
    assert.deepEqual([delEvent.actor, delEvent.resource_name, delEvent.metadata.operation_id], [adaActor(), 'wiki on staging', del.body.id]);

    const cdel = await t.request('DELETE', `/v1/clusters/${clusterId}`, f.opts(c, { headers: { 'if-match': '*', 'x-request-id': r.cdel } }));
    assert.equal(cdel.status, 202, cdel.text);
    assert.equal((await f.waitOp(c, cdel.body.id)).state, 'SUCCEEDED');
    assert.equal((await t.request('GET', `/v1/clusters/${clusterId}`, f.opts(c))).status, 404, 'the cluster is gone');
    // ... and its events still read by name.
    const history = await events(`&resource_id=${clusterId}`);
    assert.deepEqual(
      history.map((e) => [e.action, e.resource_name]),
      [['cluster.delete', 'staging'], ['cluster.capabilities.refresh', 'staging'], ['cluster.update', 'staging'], ['cluster.create', 'dev']],
    );
    assert.equal(history[0].metadata.operation_id, cdel.body.id);
  });

  test('an API token acts by its name; a refused request records nothing', async () => {
    const token = await t.apiToken(ada, c.ws, { name: 'deployer', role: 'admin' });
    const requestId = rid();
    const res = await t.request('POST', '/v1/clusters', { token: token.token, headers: { 'x-request-id': requestId }, body: { name: 'by-token' } });
    assert.equal(res.status, 202, res.text);
    const e = await eventOf(requestId, 'cluster.create');
    assert.deepEqual(e.actor, { type: 'api_token', id: token.id, name: 'deployer', email: null });
    assert.deepEqual([res.body.created_by, res.body.created_by_name, res.body.created_by_email], [token.id, 'deployer', null]);
    await f.waitOp(c, res.body.id);

    // A member may not publish packages or register clusters: 403, and no event.
    const m: Caller = { user: member, ws: c.ws };
    const before = (await events()).length;
    const refusedPkg = await t.request('POST', '/v1/packages', f.opts(m, { body: { name: 'nope' } }));
    const refusedClu = await t.request('POST', '/v1/clusters', f.opts(m, { body: { name: 'nope' } }));
    assert.deepEqual([refusedPkg.status, refusedClu.status], [403, 403]);
    assert.equal((await events()).length, before);
  });

  test('operations carry created_by with the name and e-mail of who started them, everywhere they are read', async () => {
    const clu = await t.request('POST', '/v1/clusters', f.opts(c, { body: { name: 'ops' } }));
    assert.equal(clu.status, 202, clu.text);
    const who = (op: any) => [op.created_by, op.created_by_name, op.created_by_email];
    const expected = [ada.id, 'Ada Lovelace', ada.email];
    assert.deepEqual(who(clu.body), expected, '202 answer');
    assert.deepEqual(who(await f.waitOp(c, clu.body.id)), expected, ':wait');
    assert.deepEqual(who(await f.getOp(c, clu.body.id)), expected, 'GET');
    const list = await t.request('GET', `/v1/operations?owner_id=${clu.body.owner_id}`, f.opts(c));
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body.data.map(who), [expected], 'list items');

    // A member's install: the member, by e-mail (no display name).
    const pkgId = (await f.packageWithVersion(c)).pkgId;
    const m: Caller = { user: member, ws: c.ws };
    const inst = await f.createInstall(m, { package_id: pkgId, package_version_pin: { kind: 'latest' }, cluster_id: clu.body.owner_id });
    assert.equal(inst.status, 202, inst.text);
    assert.deepEqual(who(inst.body), [member.id, null, member.email]);
    const done = await f.waitOp(c, inst.body.id);
    assert.deepEqual(who(done), [member.id, null, member.email]);
    const e = (await events('&action=install.create')).find((x) => x.resource_id === inst.body.owner_id);
    assert.deepEqual(e.actor, { type: 'user', id: member.id, name: null, email: member.email });
  });
});
