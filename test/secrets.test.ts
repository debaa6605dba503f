// Secrets through HTTP (API.md 8.1; spec 2.7, endpoint 5): the whole lifecycle, every state
// change and every refusal: roles, destroyed is final, disabled and soft-deleted values cannot be
// read, undelete before the purge and the purge after it (moved clock), force delete, if-match on
// every write, and version numbers under concurrent adds.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { assertError, assertIfMatchRequired, SecretsApi } from './secrets-fixtures.js';

const RETENTION = 3600;

describe('secrets', () => {
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let ws: string;
  let api: SecretsApi;
  let asMember: SecretsApi;

  before(async () => {
    t = await startTestApp({ SVC_SECRET_RETENTION: String(RETENTION) });
    owner = await t.user('owner');
    member = await t.user('member');
    ws = (await t.workspace(owner, 'Secrets')).id;
    await t.addMember(owner, ws, member, 'member');
    api = new SecretsApi(t, { token: owner.token, ws });
    asMember = api.as({ token: member.token, ws });
  });
  after(() => {
    clock.offsetMs = 0;
    return t.close();
  });

  test('create: 201 with version 1 enabled, Location and ETag, never the value', async () => {
    const res = await api.call('POST', '/v1/secrets', {
      body: { name: 'stripe key', description: 'live', kind: 'api_key', labels: { team: 'billing', 'env.tier': 'prod' }, value: 'sk_live_abc123', comment: 'first' },
    });
    assert.equal(res.status, 201, res.text);
    const s = res.body;
    assert.match(s.id, /^sec_[0-9a-z]{26}$/);
    assert.equal(res.headers.location, `/v1/secrets/${s.id}`);
    assert.equal(res.headers.etag, `"${s.etag}"`);
    assert.deepEqual(
      { name: s.name, description: s.description, kind: s.kind, labels: s.labels, state: s.state, version_count: s.version_count, enabled: s.enabled_version_count },
      { name: 'stripe key', description: 'live', kind: 'api_key', labels: { team: 'billing', 'env.tier': 'prod' }, state: 'active', version_count: 1, enabled: 1 },
    );
    assert.deepEqual({ aliases: s.version_aliases, deleted_at: s.deleted_at, purge_at: s.purge_at, html_url: s.html_url }, {
      aliases: {}, deleted_at: null, purge_at: null, html_url: `http://svc.test/secrets/${s.id}`,
    });
    assert.doesNotMatch(res.text, /sk_live_abc123/);
    const versions = await api.call('GET', `/v1/secrets/${s.id}/versions`);
    assert.equal(versions.body.data.length, 1);
    const v1 = versions.body.data[0];
    assert.deepEqual({ n: v1.version_number, state: v1.state, comment: v1.comment, secret_id: v1.secret_id }, { n: 1, state: 'enabled', comment: 'first', secret_id: s.id });
    assert.match(v1.id, /^secv_[0-9a-z]{26}$/);
    assert.equal(v1.destroyed_at, undefined);
    assert.equal(await api.value(s.id, 'latest'), 'sk_live_abc123');
  });

  test('create refusals: taken name 409, oversized value 400, bad labels 400, members 403', async () => {
    await api.create({ name: 'dup', value: 'x' });
    assertError(await api.call('POST', '/v1/secrets', { body: { name: 'dup', value: 'y' } }), 409, 'ALREADY_EXISTS', 'SECRET_NAME_TAKEN');
    // 40,000 characters of 2 bytes each: within the schema's character bound, over 64 KiB of UTF-8.
    const big = await api.call('POST', '/v1/secrets', { body: { name: 'big', value: 'é'.repeat(40_000) } });
    assertError(big, 400, 'INVALID_ARGUMENT', 'VALUE_TOO_LARGE');
    assert.equal(big.body.error.field_violations[0].field, 'body.value');
    assert.equal((await api.call('POST', '/v1/secrets', { body: { name: 'exact', value: 'x'.repeat(64 * 1024) } })).status, 201);
    assertError(await api.call('POST', '/v1/secrets', { body: { name: 'e', value: '' } }), 400, 'INVALID_ARGUMENT');
    assertError(await api.call('POST', '/v1/secrets', { body: { name: 'l', value: 'x', labels: { 'Bad Key': 'v' } } }), 400, 'INVALID_ARGUMENT');
    assertError(await api.call('POST', '/v1/secrets', { body: { name: 'k', value: 'x', kind: 'password' } }), 400, 'INVALID_ARGUMENT');
    assertError(await asMember.call('POST', '/v1/secrets', { body: { name: 'm', value: 'x' } }), 403, 'PERMISSION_DENIED', 'ROLE_TOO_LOW');
    const names = (await api.call('GET', '/v1/secrets?limit=100')).body.data.map((x: { name: string }) => x.name);
    assert.ok(!names.includes('big') && !names.includes('m') && !names.includes('e'));
  });

  test('versions: numbers go up, lists filter by state, access by id, number, latest and alias; members read metadata only', async () => {
    const s = await api.create({ name: 'db', value: 'v1-value' });
    const v2 = await api.addVersion(s.id, 'v2-value', 'rotated');
    const v3 = await api.addVersion(s.id, 'v3-value');
    assert.deepEqual([v2.version_number, v3.version_number], [2, 3]);
    assert.equal(v2.comment, 'rotated');
    assert.equal(await api.value(s.id, 'latest'), 'v3-value');
    assert.equal(await api.value(s.id, '2'), 'v2-value');
    assert.equal(await api.value(s.id, v2.id), 'v2-value');
    const accessed = await api.access(s.id, 'latest');
    assert.deepEqual(accessed.body, { secret_id: s.id, version_id: v3.id, version_number: 3, value: 'v3-value' });
    assert.equal(accessed.headers['cache-control'], 'no-store');

    const etag = (await api.get(s.id)).body.etag;
    const patched = await api.call('PATCH', `/v1/secrets/${s.id}`, { headers: { 'if-match': etag }, body: { version_aliases: { prod: 2 }, labels: { a: 'b' } } });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(patched.body.version_aliases, { prod: 2 });
    assert.equal(Number(patched.body.etag), Number(etag) + 1);
    assert.equal(await api.value(s.id, 'prod'), 'v2-value');
    assertError(await api.access(s.id, 'canary'), 404, 'NOT_FOUND');
    assertError(await api.access(s.id, '9'), 404, 'NOT_FOUND');

    const got = await asMember.get(s.id);
    assert.equal(got.status, 200);
    assert.equal(got.body.version_count, 3);
    assert.equal((await asMember.call('GET', `/v1/secrets/${s.id}/versions`)).body.data.length, 3);
    assert.equal((await asMember.version(s.id, v2.id)).status, 200);
    assertError(await asMember.access(s.id, 'latest'), 403, 'PERMISSION_DENIED');
    assertError(await asMember.call('POST', `/v1/secrets/${s.id}/versions`, { body: { value: 'x' } }), 403, 'PERMISSION_DENIED');
    assertError(await asMember.transition(s.id, v2.id, 'disable', '*'), 403, 'PERMISSION_DENIED');
    assertError(await asMember.call('PATCH', `/v1/secrets/${s.id}`, { headers: { 'if-match': '*' }, body: { name: 'x' } }), 403, 'PERMISSION_DENIED');
    assertError(await asMember.call('DELETE', `/v1/secrets/${s.id}`, { headers: { 'if-match': '*' } }), 403, 'PERMISSION_DENIED');

    await api.move(s.id, v3.id, 'disable');
    const disabled = await api.call('GET', `/v1/secrets/${s.id}/versions?state=disabled`);
    assert.deepEqual(disabled.body.data.map((v: { id: string }) => v.id), [v3.id]);
    const enabledList = await api.call('GET', `/v1/secrets/${s.id}/versions?state=enabled&limit=1`);
    assert.equal(enabledList.body.data.length, 1);
    assert.equal(enabledList.body.has_more, true);
    const next = await api.call('GET', `/v1/secrets/${s.id}/versions?state=enabled&limit=1&cursor=${encodeURIComponent(enabledList.body.next_cursor)}`);
    assert.equal(next.body.data[0].version_number, 1);
    assertError(await api.call('GET', `/v1/secrets/${s.id}/versions?state=disabled&cursor=${encodeURIComponent(enabledList.body.next_cursor)}`), 400, 'INVALID_ARGUMENT', 'INVALID_CURSOR');
  });

  test('disable, enable, destroy: state rules, new etags, destroyed is final and shredded', async () => {
    const s = await api.create({ name: 'states', value: 'one' });
    const v2 = await api.addVersion(s.id, 'two');
    const disabled = await api.move(s.id, v2.id, 'disable');
    assert.equal(disabled.state, 'disabled');
    assert.equal(disabled.etag, '2');
    assert.equal((await api.get(s.id)).body.enabled_version_count, 1);
    assertError(await api.access(s.id, v2.id), 422, 'FAILED_PRECONDITION', 'VERSION_DISABLED');
    assert.equal(await api.value(s.id, 'latest'), 'one', 'latest skips the disabled version');
    const again = await api.transition(s.id, v2.id, 'disable', disabled.etag);
    assert.equal(again.status, 200);
    assert.equal(again.body.etag, disabled.etag, 'already disabled: unchanged');
    const enabled = await api.move(s.id, v2.id, 'enable');
    assert.deepEqual([enabled.state, enabled.etag], ['enabled', '3']);
    assert.equal(await api.value(s.id, 'latest'), 'two');

    const destroyAskedAt = clock.now();
    const destroyed = await api.transition(s.id, v2.id, 'destroy', enabled.etag);
    assert.equal(destroyed.status, 200, destroyed.text);
    assert.equal(destroyed.body.state, 'destroyed');
    assert.equal(destroyed.body.etag, '4');
    assert.ok(destroyed.body.destroyed_at >= destroyAskedAt && destroyed.body.destroyed_at <= clock.now(), String(destroyed.body.destroyed_at));
    assert.equal(destroyed.headers.etag, '"4"');
    const row = await t.services.db.selectFrom('secret_versions').selectAll().where('id', '=', v2.id).executeTakeFirstOrThrow();
    assert.deepEqual([row.ciphertext, row.wrapped_key, row.key_id], [null, null, null], 'crypto-shredded');
    const repeat = await api.transition(s.id, v2.id, 'destroy', '4');
    assert.equal(repeat.status, 200);
    assert.deepEqual(repeat.body, destroyed.body, 'destroying a destroyed version returns it unchanged');
    assertError(await api.transition(s.id, v2.id, 'enable', '4'), 422, 'FAILED_PRECONDITION', 'VERSION_DESTROYED');
    assertError(await api.transition(s.id, v2.id, 'disable', '*'), 422, 'FAILED_PRECONDITION', 'VERSION_DESTROYED');
    assertError(await api.access(s.id, v2.id), 422, 'FAILED_PRECONDITION', 'VERSION_DESTROYED');
    assert.equal(await api.value(s.id, 'latest'), 'one');
    const v1 = (await api.call('GET', `/v1/secrets/${s.id}/versions?state=enabled`)).body.data[0];
    await api.move(s.id, v1.id, 'disable');
    assertError(await api.access(s.id, 'latest'), 422, 'FAILED_PRECONDITION', 'NO_ENABLED_VERSION');
    const after = (await api.get(s.id)).body;
    assert.deepEqual([after.version_count, after.enabled_version_count], [2, 0]);
    // An alias may not name a destroyed version or reserve `latest`.
    assertError(await api.call('PATCH', `/v1/secrets/${s.id}`, { headers: { 'if-match': '*' }, body: { version_aliases: { gone: 2 } } }), 400, 'INVALID_ARGUMENT', 'ALIAS_TARGET_INVALID');
    assertError(await api.call('PATCH', `/v1/secrets/${s.id}`, { headers: { 'if-match': '*' }, body: { version_aliases: { x: 7 } } }), 400, 'INVALID_ARGUMENT', 'ALIAS_TARGET_INVALID');
    assertError(await api.call('PATCH', `/v1/secrets/${s.id}`, { headers: { 'if-match': '*' }, body: { version_aliases: { latest: 1 } } }), 400, 'INVALID_ARGUMENT');
  });

  test('spec endpoint 5: path ids by prefix and length, if-match required, 409 with the current etag', async () => {
    const s = await api.create({ name: 'endpoint5', value: 'v' });
    const v = (await api.call('GET', `/v1/secrets/${s.id}/versions`)).body.data[0];
    assertIfMatchRequired(await api.transition(s.id, v.id, 'destroy', undefined));
    const stale = await api.transition(s.id, v.id, 'destroy', '"7"');
    assertError(stale, 409, 'ABORTED', 'ETAG_MISMATCH');
    assert.equal(stale.body.error.metadata.etag, v.etag);
    assertError(await api.transition(s.id, `secv_${'0'.repeat(51)}`, 'destroy', '*'), 400, 'INVALID_ARGUMENT');
    assertError(await api.transition(`sec_${'0'.repeat(51)}`, v.id, 'destroy', '*'), 400, 'INVALID_ARGUMENT');
    assertError(await api.transition(s.id, v.id.replace('secv_', 'sec_'), 'destroy', '*'), 404, 'NOT_FOUND');
    assertError(await api.transition(v.id, v.id, 'destroy', '*'), 404, 'NOT_FOUND');
    assertError(await api.call('POST', `/v1/secrets/${s.id}/versions/${v.id}%3Adestroy`, { headers: { 'if-match': 'W/"9"' } }), 409, 'ABORTED');
    const ok = await api.call('POST', `/v1/secrets/${s.id}/versions/${v.id}%3Adestroy`, { headers: { 'if-match': `W/"${v.etag}"` } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.state, 'destroyed');
    assert.equal(typeof ok.body.destroyed_at, 'number');
  });

  test('if-match on every write: missing is 400, stale is 409 with the current etag, and nothing changes', async () => {
    const s = await api.create({ name: 'guarded', value: 'v' });
    const v = (await api.call('GET', `/v1/secrets/${s.id}/versions`)).body.data[0];
    const writes: [string, string, unknown?][] = [
      ['PATCH', `/v1/secrets/${s.id}`, { description: 'x' }],
      ['DELETE', `/v1/secrets/${s.id}`],
      ['DELETE', `/v1/secrets/${s.id}?force=true`],
      ['POST', `/v1/secrets/${s.id}:undelete`],
      ['POST', `/v1/secrets/${s.id}/versions/${v.id}:disable`],
      ['POST', `/v1/secrets/${s.id}/versions/${v.id}:enable`],
      ['POST', `/v1/secrets/${s.id}/versions/${v.id}:destroy`],
    ];
    for (const [method, url, body] of writes) {
      assertIfMatchRequired(await api.call(method, url, { body }));
      const stale = await api.call(method, url, { body, headers: { 'if-match': '"999"' } });
      assertError(stale, 409, 'ABORTED', 'ETAG_MISMATCH');
      assert.equal(stale.body.error.metadata.etag, url.includes('/versions/') ? v.etag : s.etag, `${method} ${url}`);
    }
    assert.equal((await api.get(s.id)).body.etag, s.etag);
    assert.equal((await api.version(s.id, v.id)).body.etag, v.etag);
    assert.equal(await api.value(s.id, 'latest'), 'v');
  });

  test('soft delete, undelete before purge_at, purge after it (moved clock), exactly once across sweeps', async () => {
    const s = await api.create({ name: 'retired', value: 'keep-me' });
    const deleteAskedAt = clock.now();
    const del = await api.call('DELETE', `/v1/secrets/${s.id}`, { headers: { 'if-match': s.etag } });
    assert.equal(del.status, 200, del.text);
    assert.equal(del.body.state, 'soft_deleted');
    assert.ok(del.body.deleted_at >= deleteAskedAt && del.body.deleted_at <= clock.now(), String(del.body.deleted_at));
    assert.equal(del.body.purge_at, del.body.deleted_at + RETENTION);
    assertError(await api.access(s.id, 'latest'), 422, 'FAILED_PRECONDITION', 'SECRET_DELETED');
    assertError(await api.call('POST', `/v1/secrets/${s.id}/versions`, { body: { value: 'x' } }), 422, 'FAILED_PRECONDITION', 'SECRET_DELETED');
    assertError(await api.call('PATCH', `/v1/secrets/${s.id}`, { headers: { 'if-match': '*' }, body: { name: 'n' } }), 422, 'FAILED_PRECONDITION', 'SECRET_DELETED');
    const v = (await api.call('GET', `/v1/secrets/${s.id}/versions`)).body.data[0];
    assertError(await api.transition(s.id, v.id, 'disable', '*'), 422, 'FAILED_PRECONDITION', 'SECRET_DELETED');
    const twice = await api.call('DELETE', `/v1/secrets/${s.id}`, { headers: { 'if-match': del.body.etag } });
    assert.deepEqual(twice.body, del.body, 'deleting it again changes nothing');
    assert.deepEqual((await api.call('GET', '/v1/secrets?state=soft_deleted')).body.data.map((x: { id: string }) => x.id), [s.id]);
    assertError(await api.call('POST', `/v1/secrets/${s.id}:undelete`, { headers: { 'if-match': s.etag } }), 409, 'ABORTED');
    assertError(await asMember.call('POST', `/v1/secrets/${s.id}:undelete`, { headers: { 'if-match': '*' } }), 403, 'PERMISSION_DENIED');

    const restored = await api.call('POST', `/v1/secrets/${s.id}:undelete`, { headers: { 'if-match': del.body.etag } });
    assert.equal(restored.status, 200, restored.text);
    assert.deepEqual([restored.body.state, restored.body.deleted_at, restored.body.purge_at], ['active', null, null]);
    assert.equal(await api.value(s.id, 'latest'), 'keep-me');
    assertError(await api.call('POST', `/v1/secrets/${s.id}:undelete`, { headers: { 'if-match': '*' } }), 422, 'FAILED_PRECONDITION', 'SECRET_NOT_DELETED');

    const again = await api.call('DELETE', `/v1/secrets/${s.id}`, { headers: { 'if-match': '*' } });
    const other = await api.create({ name: 'not-due', value: 'x' });
    try {
      clock.offsetMs = (RETENTION - 60) * 1000;
      assert.equal(await t.runtime.sweepSecrets(), 0, 'not yet due');
      clock.offsetMs = (RETENTION + 1) * 1000;
      assertError(await api.call('POST', `/v1/secrets/${s.id}:undelete`, { headers: { 'if-match': again.body.etag } }), 422, 'FAILED_PRECONDITION', 'SECRET_PURGE_DUE');
      const [a, b] = await Promise.all([t.runtime.sweepSecrets(), t.runtime.sweepSecrets()]);
      assert.equal(a + b, 1, 'two sweeps at once purge it once');
      assertError(await api.get(s.id), 404, 'NOT_FOUND');
      assert.equal((await api.get(other.id)).status, 200);
      const rows = await t.services.db.selectFrom('secret_versions').select('id').where('secret_id', '=', s.id).execute();
      assert.equal(rows.length, 0, 'its versions are gone');
      const events = await api.call('GET', `/v1/audit_events?resource_id=${s.id}&action=secret.purge`);
      assert.equal(events.body.data.length, 1);
      assert.deepEqual(events.body.data[0].actor, { type: 'system', id: 'secret-purge', name: null, email: null });
      assert.equal(events.body.data[0].request_id, null);
    } finally {
      clock.offsetMs = 0;
    }
  });

  test('force delete destroys every version and removes the secret at once: 204', async () => {
    const s = await api.create({ name: 'forced', value: 'a' });
    await api.addVersion(s.id, 'b');
    const res = await api.call('DELETE', `/v1/secrets/${s.id}?force=true`, { headers: { 'if-match': s.etag } });
    assert.equal(res.status, 204, res.text);
    assertError(await api.get(s.id), 404, 'NOT_FOUND');
    assert.equal((await t.services.db.selectFrom('secret_versions').select('id').where('secret_id', '=', s.id).execute()).length, 0);
    const soft = await api.create({ name: 'forced-later', value: 'a' });
    const deleted = await api.call('DELETE', `/v1/secrets/${soft.id}`, { headers: { 'if-match': soft.etag } });
    assert.equal((await api.call('DELETE', `/v1/secrets/${soft.id}?force=true`, { headers: { 'if-match': deleted.body.etag } })).status, 204);
    const names = (await api.call('GET', '/v1/secrets?limit=100')).body.data.map((x: { name: string }) => x.name);
    assert.ok(!names.includes('forced') && !names.includes('forced-later'));
    // The name is free again.
    await api.create({ name: 'forced', value: 'c' });
  });

  test('10 concurrent version adds get 10 distinct, consecutive version numbers', async () => {
    const s = await api.create({ name: 'contended', value: 'v1' });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => api.call('POST', `/v1/secrets/${s.id}/versions`, { body: { value: `value-${i}` } })));
    for (const r of results) assert.equal(r.status, 201, r.text);
    const numbers = results.map((r) => r.body.version_number).sort((a, b) => a - b);
    assert.deepEqual(numbers, [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    const secret = (await api.get(s.id)).body;
    assert.deepEqual([secret.version_count, secret.enabled_version_count], [11, 11]);
    // Each number holds the value its request sent.
    for (const r of results) assert.equal(await api.value(s.id, String(r.body.version_number)), `value-${results.indexOf(r)}`);
    // Destroying the newest does not free its number.
    await api.move(s.id, results.find((r) => r.body.version_number === 11)!.body.id, 'destroy');
    assert.equal((await api.addVersion(s.id, 'after')).version_number, 12);
  });

  test('lists: newest first, filtered by kind and state, metadata only', async () => {
    const kinds = await api.call('GET', '/v1/secrets?kind=api_key');
    assert.deepEqual(kinds.body.data.map((x: { name: string }) => x.name), ['stripe key']);
    const page = await asMember.call('GET', '/v1/secrets?limit=2');
    assert.equal(page.body.data.length, 2);
    assert.ok(page.body.data[0].id > page.body.data[1].id);
    for (const item of page.body.data) assert.equal(item.value, undefined);
    assertError(await api.call('GET', '/v1/secrets?state=gone'), 400, 'INVALID_ARGUMENT');
    assertError(await api.call('GET', '/v1/secrets?limit=0'), 400, 'INVALID_ARGUMENT');
  });

  test('an API token acts on its workspace: admin tokens read values, member tokens only metadata', async () => {
    const admin = await t.apiToken(owner, ws, { role: 'admin', name: 'deployer' });
    const memberToken = await t.apiToken(owner, ws, { role: 'member', name: 'viewer' });
    const s = await api.create({ name: 'for-tokens', value: 'tok-value' });
    assert.equal(await api.as({ token: admin.token }).value(s.id, 'latest'), 'tok-value');
    assertError(await api.as({ token: memberToken.token }).access(s.id, 'latest'), 403, 'PERMISSION_DENIED');
    assert.equal((await api.as({ token: memberToken.token }).get(s.id)).status, 200);
    assertError(await api.as({ token: admin.token, ws: 'ws_01jf8x3q6m2c4y7n0k5t9r1b3d' }).access(s.id, 'latest'), 403, 'PERMISSION_DENIED');
  });
});
