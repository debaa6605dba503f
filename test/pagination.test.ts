// Keyset pagination (API.md section 3, spec 4.1): 250 rows created within one second page through
// with every row exactly once, newest first, at every page size; cursors are signed and bound to
// their workspace; limit is 1..100 with default 50.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

const ROWS = 250;

interface Page {
  data: { id: string; created_at: number; workspace_id: string }[];
  has_more: boolean;
  next_cursor: string | null;
}

describe('keyset pagination of GET /v1/api_tokens', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let wsA: string;
  let wsB: string;
  /** ids in creation order */
  let created: string[];

  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
    bob = await t.user('bob');
    wsA = (await t.workspace(alice, 'Paged')).id;
    wsB = (await t.workspace(bob, 'Other')).id;
    // Freeze the clock so every row has the same created_at: the order must come from the
    // time-sortable id alone, never from a timestamp that ties.
    const frozen = clock.nowMs();
    const realNowMs = clock.nowMs;
    clock.nowMs = () => frozen;
    try {
      const scope = { workspaceId: wsA, role: 'owner' as const, actorId: alice.id };
      created = [];
      for (let i = 0; i < ROWS; i++) created.push((await t.services.apiTokens.createToken(scope, { name: `token-${i}` })).id);
    } finally {
      clock.nowMs = realNowMs;
    }
    for (let i = 0; i < 3; i++) await t.apiToken(bob, wsB, { name: `b-${i}` });
  });
  after(() => t.close());

  const list = (query: string, opts: { user?: TestUser; ws?: string } = {}) =>
    t.request<Page & { error: any }>('GET', `/v1/api_tokens${query}`, {
      token: (opts.user ?? alice).token,
      headers: { 'svc-context': opts.ws ?? wsA },
    });

  async function pageThrough(limit: number | null): Promise<{ ids: string[]; pages: Page[] }> {
    const ids: string[] = [];
    const pages: Page[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < ROWS + 5; i++) {
      const params = new URLSearchParams();
      if (limit !== null) params.set('limit', String(limit));
      if (cursor !== null) params.set('cursor', cursor);
      const res = await list(params.size ? `?${params}` : '');
      assert.equal(res.status, 200, res.text);
      const page = res.body;
      pages.push(page);
      assert.equal(page.has_more, page.next_cursor !== null, 'has_more iff next_cursor');
      ids.push(...page.data.map((d) => d.id));
      if (!page.has_more) return { ids, pages };
      cursor = page.next_cursor;
    }
    assert.fail('pagination did not terminate');
  }

  test('all rows share one created_at second', async () => {
    const res = await list('?limit=100');
    assert.equal(new Set(res.body.data.map((d) => d.created_at)).size, 1);
  });

  for (const limit of [7, 50, 100]) {
    test(`limit ${limit}: every row exactly once, newest first, full pages until the last`, async () => {
      const { ids, pages } = await pageThrough(limit);
      assert.equal(ids.length, ROWS);
      assert.equal(new Set(ids).size, ROWS, 'no duplicates');
      assert.deepEqual(ids, [...created].reverse(), 'newest first (creation order reversed)');
      assert.equal(pages.length, Math.ceil(ROWS / limit));
      for (const [i, page] of pages.entries()) {
        const last = i === pages.length - 1;
        assert.equal(page.data.length, last ? ROWS - limit * (pages.length - 1) : limit);
        assert.equal(page.has_more, !last);
        if (last) assert.equal(page.next_cursor, null);
        assert.ok(page.data.every((d) => d.workspace_id === wsA));
      }
    });
  }

  test('default limit is 50', async () => {
    const res = await list('');
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 50);
    assert.equal(res.body.has_more, true);
    assert.equal(typeof res.body.next_cursor, 'string');
    assert.match(res.body.next_cursor!, /^[A-Za-z0-9_.-]+$/, 'url-safe cursor');
  });

  test('an exact multiple of the page size ends with has_more false and a null cursor', async () => {
    // 3 rows in workspace B, limit 3: one full page and no further one.
    const res = await list('?limit=3', { user: bob, ws: wsB });
    assert.equal(res.body.data.length, 3);
    assert.equal(res.body.has_more, false);
    assert.equal(res.body.next_cursor, null);
  });

  function assertBadCursor(res: { status: number; body: any }) {
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
    assert.equal(res.body.error.reason, 'INVALID_CURSOR');
    assert.equal(typeof res.body.error.request_id, 'string');
  }

  test('a tampered cursor is 400 INVALID_CURSOR', async () => {
    const first = await list('?limit=7');
    const cursor = first.body.next_cursor!;
    const [payload, mac] = cursor.split('.') as [string, string];
    // Point the cursor at another key and keep the signature; flip one signature character; garbage.
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...decoded, k: created[3] })).toString('base64url');
    const flipped = mac.slice(0, -1) + (mac.endsWith('A') ? 'B' : 'A');
    for (const bad of [`${forged}.${mac}`, `${payload}.${flipped}`, payload, 'not-a-cursor', `${payload}.`, '.']) {
      assertBadCursor(await list(`?limit=7&cursor=${encodeURIComponent(bad)}`));
    }
  });

  test('a cursor issued for another workspace is 400', async () => {
    const fromB = await list('?limit=1', { user: bob, ws: wsB });
    assert.equal(fromB.body.has_more, true);
    assertBadCursor(await list(`?limit=1&cursor=${encodeURIComponent(fromB.body.next_cursor!)}`));
    // The same user with both workspaces' cursors: still bound to the workspace, not the caller.
    await t.addMember(bob, wsB, alice, 'admin');
    assertBadCursor(await list(`?limit=1&cursor=${encodeURIComponent(fromB.body.next_cursor!)}`));
    const ok = await list(`?limit=1&cursor=${encodeURIComponent(fromB.body.next_cursor!)}`, { ws: wsB });
    assert.equal(ok.status, 200);
  });

  test('a cursor of another list (another scope) is 400', async () => {
    // GET /v1/workspaces cursors are bound to the user, not a workspace.
    await t.workspace(alice, 'Second');
    const ws = await t.request('GET', '/v1/workspaces?limit=1', { token: alice.token });
    assert.equal(ws.status, 200);
    assert.equal(ws.body.has_more, true);
    assertBadCursor(await list(`?cursor=${encodeURIComponent(ws.body.next_cursor)}`));
  });

  for (const limit of ['0', '101', 'abc', '-1', '1.5']) {
    test(`limit=${limit} is 400 in the error shape with field_violations`, async () => {
      const res = await list(`?limit=${limit}`);
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
      assert.equal(typeof res.body.error.message, 'string');
      assert.equal(typeof res.body.error.request_id, 'string');
      assert.ok(Array.isArray(res.body.error.field_violations), res.text);
      assert.ok(res.body.error.field_violations.some((v: { field: string }) => v.field === 'query.limit'), res.text);
    });
  }

  test('limits 1 and 100 are accepted', async () => {
    assert.equal((await list('?limit=1')).body.data.length, 1);
    assert.equal((await list('?limit=100')).body.data.length, 100);
  });

  test('rows added while paging appear on no page already read and never twice', async () => {
    const first = await list('?limit=10');
    const scope = { workspaceId: wsA, role: 'owner' as const, actorId: alice.id };
    const late = await t.services.apiTokens.createToken(scope, { name: 'late' });
    const second = await list(`?limit=10&cursor=${encodeURIComponent(first.body.next_cursor!)}`);
    const ids = [...first.body.data, ...second.body.data].map((d) => d.id);
    assert.equal(new Set(ids).size, 20);
    assert.ok(!ids.includes(late.id), 'a newer row is before the cursor, so not on later pages');
    assert.equal((await list('?limit=1')).body.data[0]!.id, late.id);
  });

  test('members and workspaces lists share the contract (has_more iff next_cursor; bad limit 400)', async () => {
    const members = await t.request('GET', `/v1/workspaces/${wsA}/members?limit=1`, { token: alice.token });
    assert.equal(members.status, 200);
    assert.equal(members.body.has_more, members.body.next_cursor !== null);
    const bad = await t.request('GET', `/v1/workspaces/${wsA}/members?limit=0`, { token: alice.token });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'INVALID_ARGUMENT');
    const tampered = await t.request('GET', `/v1/workspaces?cursor=abc.def`, { token: alice.token });
    assert.equal(tampered.status, 400);
    assert.equal(tampered.body.error.reason, 'INVALID_CURSOR');
  });
});
