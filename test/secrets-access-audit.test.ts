// `:access` records its audit event in a commit shared with the reads that arrive with it (group
// commit, commitAuditEvent in src/modules/audit/audit.ts): concurrent reads each still get exactly
// one event with their own request id, and when the database refuses the audit write no value
// leaves (503 AUDIT_UNAVAILABLE). The refusal is a real database condition: a trigger that aborts
// the insert, on either dialect.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { commitAuditEvent } from '../src/modules/audit/audit.js';
import { DIALECT, startTestApp, type TestApp } from './harness.js';
import { assertError, SecretsApi } from './secrets-fixtures.js';

const VALUE = 'group-commit-value-0123456789';

describe('audit of :access under concurrency', () => {
  let t: TestApp;
  let ws: string;
  let api: SecretsApi;
  let secret: { id: string };
  const versions: { id: string; value: string }[] = [];

  async function accessEvents(): Promise<any[]> {
    const all: any[] = [];
    let cursor: string | undefined;
    do {
      const res = await api.call('GET', `/v1/audit_events?action=secret.version.access&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(res.status, 200, res.text);
      all.push(...res.body.data);
      cursor = res.body.next_cursor ?? undefined;
    } while (cursor);
    return all;
  }

  /** Makes the database refuse every `secret.version.access` audit row, until the returned function runs. */
  async function refuseAccessEvents(): Promise<() => Promise<void>> {
    const db = t.services.db;
    if (DIALECT === 'sqlite') {
      await sql`create trigger audit_refuse before insert on audit_events when new.action = 'secret.version.access'
        begin select raise(abort, 'audit refused by test trigger'); end`.execute(db);
      return async () => void (await sql`drop trigger audit_refuse`.execute(db));
    }
    await sql`create function audit_refuse() returns trigger language plpgsql as
      $$ begin raise exception 'audit refused by test trigger'; end $$`.execute(db);
    await sql`create trigger audit_refuse before insert on audit_events for each row
      when (new.action = 'secret.version.access') execute function audit_refuse()`.execute(db);
    return async () => {
      await sql`drop trigger audit_refuse on audit_events`.execute(db);
      await sql`drop function audit_refuse()`.execute(db);
    };
  }

  before(async () => {
    t = await startTestApp();
    const owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Group commit')).id;
    const token = await t.apiToken(owner, ws, { role: 'admin', name: 'reader' });
    api = new SecretsApi(t, { token: token.token });
    secret = await api.create({ name: 'concurrent', value: `${VALUE}-1` });
    versions.push({ id: (await api.call('GET', `/v1/secrets/${secret.id}/versions`)).body.data[0].id, value: `${VALUE}-1` });
    for (let n = 2; n <= 3; n++) versions.push({ id: (await api.addVersion(secret.id, `${VALUE}-${n}`)).id, value: `${VALUE}-${n}` });
  });
  after(() => t.close());

  test('40 concurrent reads: each gets its value and exactly one event with its own request id', async () => {
    const before = (await accessEvents()).length;
    const reads = Array.from({ length: 40 }, (_, i) => {
      const v = versions[i % versions.length]!;
      const which = i % 2 === 0 ? v.id : String(versions.indexOf(v) + 1);
      return { requestId: `group-${i}`, which, version: v };
    });
    const responses = await Promise.all(reads.map((r) =>
      api.call('POST', `/v1/secrets/${secret.id}/versions/${r.which}:access`, { headers: { 'x-request-id': r.requestId } })));
    responses.forEach((res, i) => {
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.value, reads[i]!.version.value);
      assert.equal(res.headers['x-request-id'], reads[i]!.requestId);
    });
    const events = await accessEvents();
    assert.equal(events.length, before + reads.length);
    for (const r of reads) {
      const mine = events.filter((e) => e.request_id === r.requestId);
      assert.equal(mine.length, 1, `one event for ${r.requestId}: ${JSON.stringify(mine)}`);
      assert.equal(mine[0].resource_id, r.version.id);
      assert.equal(mine[0].metadata.requested, r.which);
      assert.equal(mine[0].metadata.secret_id, secret.id);
    }
  });

  test('when the audit write is refused, no read returns a value (503 AUDIT_UNAVAILABLE), and none is recorded', async () => {
    const before = (await accessEvents()).length;
    const allow = await refuseAccessEvents();
    try {
      const responses = await Promise.all(Array.from({ length: 8 }, (_, i) =>
        api.call('POST', `/v1/secrets/${secret.id}/versions/latest:access`, { headers: { 'x-request-id': `refused-${i}` } })));
      for (const res of responses) {
        assertError(res, 503, 'UNAVAILABLE', 'AUDIT_UNAVAILABLE');
        assert.equal(res.body.value, undefined);
        assert.ok(!res.text.includes(VALUE), res.text);
        assert.equal(res.headers['retry-after'], '1');
      }
      // Changes record their events in their own transaction and are not affected by the refusal.
      assert.equal((await api.get(secret.id)).status, 200);
    } finally {
      await allow();
    }
    assert.equal((await accessEvents()).length, before, 'a refused read left no event');
    const res = await api.call('POST', `/v1/secrets/${secret.id}/versions/latest:access`, { headers: { 'x-request-id': 'after-refusal' } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.value, `${VALUE}-3`);
    assert.equal((await accessEvents()).filter((e) => e.request_id === 'after-refusal').length, 1);
  });

  test('more events at once than one statement takes are all committed, in several statements', async () => {
    const before = (await accessEvents()).length;
    const scope = { workspaceId: ws, actor: { type: 'system' as const, id: 'group-commit-test' }, requestId: null };
    await Promise.all(Array.from({ length: 1203 }, (_, i) => commitAuditEvent(t.services.db, scope, {
      action: 'secret.version.access', resourceType: 'secret_version', resourceId: versions[0]!.id, metadata: { n: String(i) },
    })));
    const events = await accessEvents();
    assert.equal(events.length, before + 1203);
    const numbers = new Set(events.filter((e) => e.actor.id === 'group-commit-test').map((e) => e.metadata.n));
    assert.equal(numbers.size, 1203);
  });
});
