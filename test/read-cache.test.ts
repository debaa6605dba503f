// The SQLite read cache (src/db/sqlite.ts) must never answer with data that is no longer true:
// a write on the same connection, a rolled-back transaction, and a commit by another connection
// (another instance sharing the data dir) all invalidate it. Runs on both dialects; on
// PostgreSQL there is no cache and the same expectations hold trivially.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { createSystem } from '../src/system.js';
import { newId } from '../src/platform/ids.js';
import type { App } from '../src/platform/http.js';
import { DIALECT, startTestApp, type TestApp, type TestUser } from './harness.js';

describe('read cache invalidation', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;
  let second: { app: App; handle: DatabaseHandle };

  before(async () => {
    t = await startTestApp();
    owner = await t.user('owner');
    ws = (await t.workspace(owner)).id;
    // A second instance: its own connection (and cache) on the same database.
    const handle = openDatabase({ databaseUrl: t.config.databaseUrl, dataDir: t.config.dataDir, poolSize: 2 });
    second = { app: (await createSystem(t.config, { database: handle, runtime: false })).app, handle };
  });
  after(async () => {
    await second.app.close();
    await second.handle.close();
    await t.close();
  });

  async function onSecond(method: 'GET' | 'DELETE', url: string, token: string) {
    const res = await second.app.inject({ method, url, headers: { authorization: `Bearer ${token}` } });
    return res.statusCode;
  }

  test('a token revoked through one instance stops working at once on another that had it cached', async () => {
    const token = await t.apiToken(owner, ws);
    const url = `/v1/workspaces/${ws}/members`;
    for (let i = 0; i < 3; i++) assert.equal(await onSecond('GET', url, token.token), 200);
    const revoke = await t.request('DELETE', `/v1/api_tokens/${token.id}`, { token: owner.token, headers: { 'svc-context': ws } });
    assert.equal(revoke.status, 204);
    assert.equal(await onSecond('GET', url, token.token), 401);
  });

  test('a member added through one instance appears at once in the cached list of another', async () => {
    const url = `/v1/workspaces/${ws}/members`;
    const before = await second.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${owner.token}` } });
    const count = before.json().data.length;
    const newcomer = await t.user('newcomer');
    await t.addMember(owner, ws, newcomer, 'member');
    const afterAdd = await second.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${owner.token}` } });
    assert.equal(afterAdd.json().data.length, count + 1);
  });

  test('a rolled-back transaction leaves nothing behind in cached reads', async () => {
    const db = t.services.db;
    const slug = `rollback-${Date.now()}`;
    const read = () => db.selectFrom('workspaces').select('id').where('slug', '=', slug).execute();
    assert.equal((await read()).length, 0);
    await assert.rejects(
      db.transaction().execute(async (tx) => {
        await tx.insertInto('workspaces').values({
          id: 'ws_01aaaaaaaaaaaaaaaaaaaaaaaa', name: 'x', slug, plan_tier: 'free', billed_by: 'self', state: 'active', require_two_factor: 0, created_at: 1, updated_at: 1, revision: 1,
        }).execute();
        assert.equal((await tx.selectFrom('workspaces').select('id').where('slug', '=', slug).execute()).length, 1);
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.equal((await read()).length, 0);
  });

  test('a write on the same connection is visible to the next cached read', async () => {
    const url = `/v1/workspaces/${ws}`;
    const first = await t.request('GET', url, { token: owner.token });
    const patched = await t.request('PATCH', url, { token: owner.token, headers: { 'if-match': first.body.etag }, body: { name: 'Renamed' } });
    assert.equal(patched.status, 200);
    const again = await t.request('GET', url, { token: owner.token });
    assert.equal(again.body.name, 'Renamed');
    assert.equal(again.body.etag, patched.body.etag);
  });
  test('a plain insert is seen at once by cached reads of its table: filtered, joined and raw', async () => {
    const db = t.services.db;
    const member = await t.user('inserted-member');
    const filtered = () => db.selectFrom('workspace_members').select('user_id').where('workspace_id', '=', ws).execute();
    const joined = () => db.selectFrom('users').innerJoin('workspace_members', 'workspace_members.user_id', 'users.id')
      .select('users.id').where('workspace_members.workspace_id', '=', ws).execute();
    const raw = async () => (await sql<{ n: number }>`select count(*) as n from workspace_members where workspace_id = ${ws}`.execute(db)).rows[0]!.n;
    const before = [(await filtered()).length, (await joined()).length, Number(await raw())];
    // Cached now; the insert must drop every one of them (and leave other tables' results alone).
    assert.deepEqual([(await filtered()).length, (await joined()).length, Number(await raw())], before);
    // A plain autocommit insert (no transaction whose commit would drop the whole cache).
    await db.insertInto('workspace_members').values({ id: newId('member'), workspace_id: ws, user_id: member.id, role: 'member', joined_at: 1, updated_at: 1 }).execute();
    assert.deepEqual([(await filtered()).length, (await joined()).length, Number(await raw())], before.map((n) => n + 1));
    assert.ok((await filtered()).some((m) => m.user_id === member.id));
  });

  // One data_version check serves the cached reads after it until a request arrives, a statement
  // executes, or the event loop turns. A third connection writes synchronously here, so each
  // test controls exactly what happens between the check and the read (another instance's commit).
  describe('how long one data_version check serves', { skip: DIALECT !== 'sqlite' && 'PostgreSQL has no read cache' }, () => {
    let raw: Database.Database;
    const rename = (name: string) => raw.prepare('update workspaces set name = ? where id = ?').run(name, ws);
    const readName = async () => (await t.services.db.selectFrom('workspaces').select('name').where('id', '=', ws).executeTakeFirstOrThrow()).name;
    before(() => {
      raw = new Database(join(t.config.dataDir, 'svc.db'));
      raw.pragma('busy_timeout = 10000');
    });
    after(() => raw?.close());

    test('a request arriving checks again: another instance\'s commit just before it is seen', async () => {
      const url = `/v1/workspaces/${ws}`;
      const get = async () => (await second.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${owner.token}` } })).json().name as string;
      const before = await get();
      assert.equal(await get(), before); // cached, and checked by this request
      rename('Renamed by a third connection');
      assert.equal(await get(), 'Renamed by a third connection');
      rename(before);
    });

    test('the event loop turning ends a check: a background read sees a commit made since', async () => {
      const before = await readName();
      assert.equal(await readName(), before); // cached and checked
      rename('Renamed between turns');
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(await readName(), 'Renamed between turns');
      rename(before);
      await new Promise((resolve) => setImmediate(resolve));
    });

    test('a statement executed after the check ends it: no later cached read sees older data than it did', async () => {
      const before = await readName();
      assert.equal(await readName(), before); // cached and checked
      rename('Renamed before an executed read');
      // A read the cache has never answered executes, and sees the rename...
      const fresh = await sql<{ name: string }>`select name from workspaces where id = ${ws} and ${Date.now()} > 0`.execute(t.services.db);
      assert.equal(fresh.rows[0]!.name, 'Renamed before an executed read');
      // ...so the cached read after it, in the same turn, must not answer from before the rename.
      assert.equal(await readName(), 'Renamed before an executed read');
      rename(before);
      await new Promise((resolve) => setImmediate(resolve));
    });
  });
});

