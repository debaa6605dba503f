// `if-match: *` matches any current version (API.md section 3), so it never conflicts: concurrent
// :disable, :enable and :destroy of one secret version with `*` all succeed, each deciding on the
// state the previous one left (on PostgreSQL they used to race on the revision they had read and
// answer 409). A concrete etag that moved is still 409.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DIALECT, startTestApp, type Response, type TestApp, type TestUser } from './harness.js';

describe(`secret version transitions with if-match: * under concurrency (${DIALECT})`, () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;

  before(async () => {
    t = await startTestApp();
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Star')).id;
  });
  after(() => t.close());

  const call = (method: string, path: string, opts: { body?: unknown; ifMatch?: string } = {}): Promise<Response> =>
    t.request(method, path, {
      token: owner.token,
      headers: { 'svc-context': ws, ...(opts.ifMatch !== undefined ? { 'if-match': opts.ifMatch } : {}) },
      ...(opts.body !== undefined ? { body: opts.body } : {}),
    });

  async function secretWithVersion(name: string): Promise<{ secret: string; version: string; etag: string }> {
    const s = await call('POST', '/v1/secrets', { body: { name, value: 'one' } });
    assert.equal(s.status, 201, s.text);
    const v = await call('POST', `/v1/secrets/${s.body.id}/versions`, { body: { value: 'two' } });
    assert.equal(v.status, 201, v.text);
    return { secret: s.body.id, version: v.body.id, etag: v.body.etag };
  }

  const describeAll = (results: Response[]) => results.map((r) => `${r.status} ${r.body?.error?.reason ?? r.body?.state}`).join(', ');

  test('40 concurrent :disable and :enable with * all succeed, and the version ends in one of the two states', async () => {
    const { secret, version } = await secretWithVersion('toggled');
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) =>
      call('POST', `/v1/secrets/${secret}/versions/${version}:${i % 2 ? 'enable' : 'disable'}`, { ifMatch: '*' })));
    assert.ok(results.every((r) => r.status === 200), describeAll(results));
    const now = await call('GET', `/v1/secrets/${secret}/versions/${version}`);
    assert.ok(['enabled', 'disabled'].includes(now.body.state));
    // Every state change was counted once: the secret's count of enabled versions matches the versions.
    const versions = await call('GET', `/v1/secrets/${secret}/versions?limit=100`);
    const enabled = versions.body.data.filter((v: { state: string }) => v.state === 'enabled').length;
    const s = await call('GET', `/v1/secrets/${secret}`);
    assert.equal(s.body.enabled_version_count, enabled);
  });

  test('20 concurrent :destroy with * all succeed and the version is destroyed once', async () => {
    const { secret, version } = await secretWithVersion('shredded');
    const results = await Promise.all(Array.from({ length: 20 }, () =>
      call('POST', `/v1/secrets/${secret}/versions/${version}:destroy`, { ifMatch: '*' })));
    assert.ok(results.every((r) => r.status === 200 && r.body.state === 'destroyed'), describeAll(results));
  });

  test('concurrent :disable, :enable and :destroy with * mixed: none conflicts; enabling a destroyed version is 422', async () => {
    const { secret, version } = await secretWithVersion('mixed');
    const verbs = Array.from({ length: 30 }, (_, i) => (i === 15 ? 'destroy' : i % 2 ? 'enable' : 'disable'));
    const results = await Promise.all(verbs.map((verb) =>
      call('POST', `/v1/secrets/${secret}/versions/${version}:${verb}`, { ifMatch: '*' })));
    assert.ok(results.every((r) => r.status === 200 || (r.status === 422 && r.body.error.reason === 'VERSION_DESTROYED')), describeAll(results));
    assert.ok(!results.some((r) => r.status === 409), describeAll(results));
    assert.equal((await call('GET', `/v1/secrets/${secret}/versions/${version}`)).body.state, 'destroyed');
  });

  test('a concrete etag that moved is still 409 with the current one', async () => {
    const { secret, version, etag } = await secretWithVersion('stale');
    assert.equal((await call('POST', `/v1/secrets/${secret}/versions/${version}:disable`, { ifMatch: etag })).status, 200);
    const stale = await call('POST', `/v1/secrets/${secret}/versions/${version}:enable`, { ifMatch: etag });
    assert.equal(stale.status, 409, stale.text);
    assert.equal(stale.body.error.code, 'ABORTED');
    assert.notEqual(stale.body.error.metadata.etag, etag);
  });
});
