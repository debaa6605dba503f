// Issue 21: `GET /v1/audit_events?resource_id=sec_...` answers "who did what to this secret" with
// the secret's events and its versions' events (created, enabled, disabled, destroyed, read),
// newest first, paged by cursor; a version's id keeps selecting that version alone; events written
// before the secret_id column existed are found once filled in; and the query is served by the
// secret's index range, not by a walk over the workspace's log.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { fillAuditSecretIds } from '../src/db/migrations/010_secret_lookups.js';
import { eventsQuery } from '../src/modules/audit/audit.repo.js';
import { keysetPage } from '../src/db/keyset.js';
import { newId } from '../src/platform/ids.js';
import { DIALECT, startTestApp, type TestApp, type TestUser } from './harness.js';
import { SecretsApi } from './secrets-fixtures.js';

describe('audit events of a secret and its versions', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;
  let api: SecretsApi;
  let secretId: string;
  let v1: string;
  let v2: string;
  /** [action, resource_id] of every event about the secret, in the order they happened */
  const expected: [string, string][] = [];

  async function all(query: string, limit = 100): Promise<any[]> {
    const events: any[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 50; pages++) {
      const res = await api.call('GET', `/v1/audit_events?limit=${limit}&${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      assert.equal(res.status, 200, res.text);
      events.push(...res.body.data);
      if (!res.body.has_more) return events;
      cursor = res.body.next_cursor;
    }
    throw new Error('more pages than expected');
  }
  const pairs = (events: any[]) => events.map((e) => [e.action, e.resource_id]);

  before(async () => {
    t = await startTestApp();
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Audited secrets')).id;
    api = new SecretsApi(t, { token: owner.token, ws });
    const other = await api.create({ name: 'other', value: 'other-value' });
    const secret = await api.create({ name: 'watched', value: 'first' });
    secretId = secret.id;
    v1 = (await api.call('GET', `/v1/secrets/${secretId}/versions`)).body.data[0].id;
    expected.push(['secret.create', secretId], ['secret.version.create', v1]);
    v2 = (await api.addVersion(secretId, 'second')).id;
    expected.push(['secret.version.create', v2]);
    // Events about other things in between: none of them may show.
    await api.addVersion(other.id, 'other-2');
    await api.value(other.id, 'latest');
    await api.move(secretId, v2, 'disable');
    expected.push(['secret.version.disable', v2]);
    await api.value(secretId, '1');
    expected.push(['secret.version.access', v1]);
    await api.move(secretId, v2, 'enable');
    expected.push(['secret.version.enable', v2]);
    await api.value(secretId, 'latest');
    expected.push(['secret.version.access', v2]);
    await api.move(secretId, v1, 'destroy');
    expected.push(['secret.version.destroy', v1]);
    const patched = await api.call('PATCH', `/v1/secrets/${secretId}`, { headers: { 'if-match': (await api.get(secretId)).body.etag }, body: { description: 'd' } });
    assert.equal(patched.status, 200, patched.text);
    expected.push(['secret.update', secretId]);
  });
  after(() => t.close());

  test('a secret id lists the secret\'s events and its versions\', newest first, each naming its own resource', async () => {
    const events = await all(`resource_id=${secretId}`);
    assert.deepEqual(pairs(events), [...expected].reverse());
    for (const e of events) {
      if (e.resource_type === 'secret_version') assert.equal(e.metadata.secret_id, secretId);
      else assert.equal(e.resource_type, 'secret');
    }
  });

  test('paging by cursor two at a time yields the same events, once each, in the same order', async () => {
    assert.deepEqual(pairs(await all(`resource_id=${secretId}`, 2)), [...expected].reverse());
  });

  test('with action, "who read this secret" is one query; a version id lists that version only', async () => {
    assert.deepEqual(pairs(await all(`resource_id=${secretId}&action=secret.version.access`)), [['secret.version.access', v2], ['secret.version.access', v1]]);
    assert.deepEqual(pairs(await all(`resource_id=${v2}`)), expected.filter(([, id]) => id === v2).reverse());
  });

  test('a secret deleted for good keeps its whole history under its id', async () => {
    const gone = await api.create({ name: 'gone', value: 'x' });
    await api.value(gone.id, 'latest');
    const res = await api.call('DELETE', `/v1/secrets/${gone.id}?force=true`, { headers: { 'if-match': gone.etag } });
    assert.equal(res.status, 204, res.text);
    assert.deepEqual((await all(`resource_id=${gone.id}`)).map((e) => e.action),
      ['secret.delete', 'secret.version.access', 'secret.version.create', 'secret.create']);
  });

  test('events recorded before the secret_id column existed are found by the secret id once migration 010 fills them in', async () => {
    await t.services.db.updateTable('audit_events').set({ secret_id: null }).where('workspace_id', '=', ws).execute();
    assert.deepEqual(await all(`resource_id=${secretId}`), [], 'without the column filled in, nothing matches');
    await fillAuditSecretIds(t.services.db);
    assert.deepEqual(pairs(await all(`resource_id=${secretId}`)), [...expected].reverse());
    const others = await t.services.db.selectFrom('audit_events').select('id').where('workspace_id', '=', ws)
      .where('resource_type', 'not in', ['secret', 'secret_version']).where('secret_id', 'is not', null).execute();
    assert.deepEqual(others, []);
  });

  test('the listing reads the secret\'s index range: no event of the workspace is read and thrown away', async () => {
    // A workspace log much larger than the secret's history, so a plan that walks it would show.
    const db = t.services.db;
    const filler = Array.from({ length: 2000 }, (_, i) => ({
      id: newId('auditEvent'), workspace_id: ws, actor_type: 'user', actor_id: owner.id, action: 'api_token.create',
      resource_type: 'api_token', resource_id: newId('apiToken'), request_id: null, metadata: `{"n":"${i}"}`, created_at: 0, secret_id: null,
    }));
    for (let i = 0; i < filler.length; i += 200) await db.insertInto('audit_events').values(filler.slice(i, i + 200)).execute();
    await sql`analyze`.execute(db);
    const query = keysetPage(eventsQuery(db, ws, { resource_id: secretId, action: null }), 'id', { limit: 3, afterId: null }).compile();
    if (DIALECT === 'sqlite') {
      const plan = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]));
      const details = plan.rows.map((r) => r.detail).join('\n');
      assert.match(details, /SEARCH audit_events USING INDEX audit_events_secret_idx \(workspace_id=\? AND secret_id=\?\)/, details);
      assert.doesNotMatch(details, /TEMP B-TREE/, 'newest first straight from the index, no sort');
    } else {
      const plan = await db.executeQuery<{ 'QUERY PLAN': unknown }>(CompiledQuery.raw(`explain (analyze, format json) ${query.sql}`, [...query.parameters]));
      const text = JSON.stringify(plan.rows[0]!['QUERY PLAN']);
      assert.match(text, /"Index Name":"audit_events_secret_idx"/, text);
      assert.doesNotMatch(text, /"Rows Removed by Filter":[1-9]/, text);
      assert.doesNotMatch(text, /"Node Type":"Sort"/, text);
    }
  });
});
