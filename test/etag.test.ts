// Etags and lost updates (spec 4 rule 2, API.md section 3): the if-match check and the write are
// one statement, so of many concurrent writers holding the same etag exactly one wins per
// revision; every loser gets 409 ABORTED with the current etag; nothing is ever lost.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';

describe('etags, if-match and lost updates on PATCH /v1/workspaces/{id}', () => {
  let t: TestApp;
  let alice: TestUser;
  let ws: string;

  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
    ws = (await t.workspace(alice, 'Contended')).id;
  });
  after(() => t.close());

  const patch = (ifMatch: string | undefined, body: unknown, user: TestUser = alice): Promise<Response> =>
    t.request('PATCH', `/v1/workspaces/${ws}`, { token: user.token, body, headers: ifMatch === undefined ? {} : { 'if-match': ifMatch } });

  async function current(): Promise<{ etag: string; name: string; header: string }> {
    const res = await t.request('GET', `/v1/workspaces/${ws}`, { token: alice.token });
    assert.equal(res.status, 200);
    return { etag: res.body.etag, name: res.body.name, header: String(res.headers.etag) };
  }

  function assertMismatch(res: Response, currentEtag?: string) {
    assert.equal(res.status, 409, res.text);
    assert.equal(res.body.error.code, 'ABORTED');
    assert.equal(res.body.error.reason, 'ETAG_MISMATCH');
    assert.equal(typeof res.body.error.metadata?.etag, 'string');
    if (currentEtag !== undefined) assert.equal(res.body.error.metadata.etag, currentEtag);
  }

  test('30 concurrent PATCHes with the same if-match: exactly one wins, every 409 carries the current etag', async () => {
    const start = await current();
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => patch(start.etag, { name: `racer-${i}` })));
    const won = results.filter((r) => r.status === 200);
    const lost = results.filter((r) => r.status !== 200);
    assert.equal(won.length, 1, results.map((r) => `${r.status} ${r.text}`).join('\n'));
    assert.equal(lost.length, 29);
    const after = await current();
    assert.equal(after.name, won[0]!.body.name, 'the winner\'s change is the one stored');
    assert.equal(after.etag, won[0]!.body.etag);
    assert.equal(Number(after.etag), Number(start.etag) + 1, 'one write, one revision');
    for (const r of lost) assertMismatch(r, after.etag);
  });

  test('clients that retry with error.metadata.etag all get their change applied: no update is lost', async (tc) => {
    const start = await current();
    const CLIENTS = 12;
    const CHANGES_PER_CLIENT = 3;
    const applied: { etag: string; name: string }[] = [];
    let conflicts = 0;

    async function client(c: number): Promise<void> {
      let etag = start.etag;
      for (let n = 0; n < CHANGES_PER_CLIENT; n++) {
        const name = `client-${c}-change-${n}`;
        for (let attempt = 0; ; attempt++) {
          assert.ok(attempt < 500, 'a client starved');
          const res = await patch(etag, { name });
          if (res.status === 200) {
            applied.push({ etag: res.body.etag, name: res.body.name });
            assert.equal(res.body.name, name);
            assert.equal(res.headers.etag, `"${res.body.etag}"`);
            etag = res.body.etag;
            break;
          }
          assertMismatch(res);
          conflicts++;
          // The etag in the error is current (or newer than ours): retrying with it may win.
          assert.ok(Number(res.body.error.metadata.etag) > Number(etag), 'metadata.etag moves forward');
          etag = res.body.error.metadata.etag;
        }
      }
    }

    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
    const after = await current();
    assert.equal(applied.length, CLIENTS * CHANGES_PER_CLIENT);
    // Each success produced exactly one revision, all distinct and contiguous: none overwrote another.
    assert.equal(Number(after.etag), Number(start.etag) + applied.length, 'final revision = start + successes');
    const revisions = applied.map((a) => Number(a.etag)).sort((x, y) => x - y);
    assert.deepEqual(revisions, Array.from({ length: applied.length }, (_, i) => Number(start.etag) + 1 + i));
    const last = applied.find((a) => a.etag === after.etag);
    assert.equal(after.name, last!.name, 'the stored name is the last successful write');
    tc.diagnostic(`conflicts retried: ${conflicts}`);
  });

  test('final revision count == successful PATCHes + 1 on a fresh workspace', async () => {
    const fresh = await t.workspace(alice, 'Fresh');
    const freshPatch = (etag: string, name: string) =>
      t.request('PATCH', `/v1/workspaces/${fresh.id}`, { token: alice.token, body: { name }, headers: { 'if-match': etag } });
    assert.equal(fresh.etag, '1');
    let successes = 0;
    for (let round = 0; round < 5; round++) {
      const etag = (await t.request('GET', `/v1/workspaces/${fresh.id}`, { token: alice.token })).body.etag;
      const rs = await Promise.all(Array.from({ length: 8 }, (_, i) => freshPatch(etag, `r${round}-${i}`)));
      successes += rs.filter((r) => r.status === 200).length;
      assert.equal(rs.filter((r) => r.status === 200).length, 1);
    }
    const final = await t.request('GET', `/v1/workspaces/${fresh.id}`, { token: alice.token });
    assert.equal(Number(final.body.etag), successes + 1);
  });

  test('if-match forms: quoted, bare, W/ weak prefix and * all work', async () => {
    let etag = (await current()).etag;
    for (const form of [(e: string) => `"${e}"`, (e: string) => e, (e: string) => `W/"${e}"`, (e: string) => ` ${e} `]) {
      const res = await patch(form(etag), { name: `form-${etag}` });
      assert.equal(res.status, 200, `${form(etag)}: ${res.text}`);
      assert.equal(Number(res.body.etag), Number(etag) + 1);
      etag = res.body.etag;
    }
    const star = await patch('*', { name: 'star' });
    assert.equal(star.status, 200, star.text);
    assert.equal(Number(star.body.etag), Number(etag) + 1);
    assert.equal(star.body.name, 'star');
  });

  test('a stale or unparseable if-match is 409 with the current etag, and nothing changes', async () => {
    const before = await current();
    for (const stale of ['1', '"1"', 'W/"1"', 'abc', '"', '""', 'W/', String(Number(before.etag) + 1), '99999999999999999999']) {
      assertMismatch(await patch(stale, { name: 'never' }), before.etag);
    }
    const after = await current();
    assert.equal(after.etag, before.etag);
    assert.equal(after.name, before.name);
  });

  test('missing if-match is 400; an over-long one is 400', async () => {
    const before = await current();
    const missing = await patch(undefined, { name: 'never' });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.code, 'INVALID_ARGUMENT');
    assert.ok(missing.body.error.field_violations.some((v: { field: string }) => v.field.includes('if-match')), missing.text);
    const long = await patch('x'.repeat(257), { name: 'never' });
    assert.equal(long.status, 400);
    assert.equal((await current()).etag, before.etag);
  });

  test('ETag response header is the quoted etag on GET, PATCH and create', async () => {
    const got = await current();
    assert.equal(got.header, `"${got.etag}"`);
    const res = await patch(got.etag, { name: 'header check' });
    assert.equal(res.headers.etag, `"${res.body.etag}"`);
    const created = await t.request('POST', '/v1/workspaces', { token: alice.token, body: { name: 'Header' } });
    assert.equal(created.headers.etag, `"${created.body.etag}"`);
  });

  test('the etag changes on every write, also when the value written is the same', async () => {
    const a = await current();
    const r1 = await patch(a.etag, { name: a.name });
    assert.equal(r1.status, 200);
    assert.notEqual(r1.body.etag, a.etag);
    assertMismatch(await patch(a.etag, { name: a.name }), r1.body.etag);
  });

  test('a member (role too low) is 403 before the etag is compared', async () => {
    const bob = await t.user('bob');
    await t.addMember(alice, ws, bob, 'member');
    const res = await patch('"1"', { name: 'nope' }, bob);
    assert.equal(res.status, 403);
  });
});
