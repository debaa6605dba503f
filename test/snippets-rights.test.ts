// Stored code acts with the rights its last writer has now (issue 20): the writer's role, membership
// and credential are read when the run starts; whoever changes what a run does (code, inputs and
// their defaults) becomes the last writer; a writer without rights now gives the run none.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

/** Creates an admin API token when run with the admin role: 201, else 403. */
const CREATE_TOKEN = "const r = await platform.request({ method: 'POST', path: '/v1/api_tokens', body: { name: inputs.name ?? 'from-snippet', role: 'admin' } }); return r.status;";

describe('snippet rights at run time', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;
  const ctx = (token: string, headers: Record<string, string> = {}) => ({ token, headers: { 'svc-context': ws, ...headers } });

  async function member(role: 'admin' | 'member'): Promise<TestUser> {
    const user = await t.user(role);
    await t.addMember(owner, ws, user, role);
    return user;
  }
  async function create(token: string, code: string, extra: Record<string, unknown> = {}): Promise<{ id: string; etag: string; last_writer_id: string }> {
    const res = await t.request('POST', '/v1/snippets', { ...ctx(token), body: { name: 'rights', code, display_type: 'json', ...extra } });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  async function patch(token: string, snippet: { id: string; etag: string }, body: Record<string, unknown>) {
    const res = await t.request('PATCH', `/v1/snippets/${snippet.id}`, { ...ctx(token, { 'if-match': snippet.etag }), body });
    assert.equal(res.status, 200, res.text);
    return res.body;
  }
  async function run(token: string, id: string) {
    const res = await t.request('POST', `/v1/snippets/${id}/runs`, { ...ctx(token), body: {} });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  const runsUsage = async () =>
    (await t.request('GET', '/v1/quotas', ctx(owner.token))).body.data.find((q: { metric: string }) => q.metric === 'snippets/runs').usage as number;

  before(async () => {
    t = await startTestApp({ SVC_SANDBOX_WORKERS: '1' });
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Rights')).id;
  });
  after(() => t.close());

  test('a member who changes only the input defaults of an admin\'s snippet becomes its writer: the admin\'s run acts as a member', async () => {
    const admin = await member('admin');
    const planter = await member('member');
    const inputs = [{ key: 'name', label: 'Token name', kind: 'text', default: 'nightly' }];
    const snippet = await create(admin.token, CREATE_TOKEN, { inputs });
    assert.equal(snippet.last_writer_id, admin.id);
    assert.equal((await run(admin.token, snippet.id)).output, 201, 'the admin\'s own code acts as the admin');
    const changed = await patch(planter.token, snippet, { inputs: [{ ...inputs[0], default: 'planted' }] });
    assert.equal(changed.last_writer_id, planter.id);
    const after_ = await run(admin.token, changed.id);
    assert.equal(after_.output, 403, 'the run acts with the member\'s rights now');
    assert.equal(after_.inputs.name, 'planted');
  });

  test('a rename or a new description leaves the last writer as it was', async () => {
    const admin = await member('admin');
    const other = await member('member');
    const snippet = await create(admin.token, CREATE_TOKEN);
    const renamed = await patch(other.token, snippet, { name: 'renamed', description: 'by a member', display_type: 'stat', visibility: 'session', purpose: 'widget' });
    assert.equal(renamed.last_writer_id, admin.id);
    assert.equal((await run(admin.token, snippet.id)).output, 201);
  });

  test('a demoted writer gives the lower role; a promoted one the higher, read at each run', async () => {
    const writer = await member('admin');
    const snippet = await create(writer.token, CREATE_TOKEN);
    assert.equal((await run(owner.token, snippet.id)).output, 201);
    const demote = await t.request('PATCH', `/v1/workspaces/${ws}/members/${writer.id}`, { token: owner.token, body: { role: 'member' } });
    assert.equal(demote.status, 200, demote.text);
    assert.equal((await run(owner.token, snippet.id)).output, 403, 'a demoted admin\'s code runs as a member');
    const promote = await t.request('PATCH', `/v1/workspaces/${ws}/members/${writer.id}`, { token: owner.token, body: { role: 'admin' } });
    assert.equal(promote.status, 200, promote.text);
    assert.equal((await run(owner.token, snippet.id)).output, 201);
  });

  test('a writer removed from the workspace gives no rights: the run fails WRITER_UNAUTHORIZED, is recorded and not counted', async () => {
    const writer = await member('admin');
    const snippet = await create(writer.token, CREATE_TOKEN);
    const removed = await t.request('DELETE', `/v1/workspaces/${ws}/members/${writer.id}`, { token: owner.token });
    assert.equal(removed.status, 204, removed.text);
    const usage = await runsUsage();
    const failed = await run(owner.token, snippet.id);
    assert.equal(failed.state, 'failed');
    assert.equal(failed.error.code, 'WRITER_UNAUTHORIZED');
    assert.deepEqual(failed.error.details, { writer_id: writer.id, cause: 'removed' });
    assert.match(failed.error.message, new RegExp(`${writer.id} is no longer a member`));
    assert.equal(failed.output, null);
    assert.equal(failed.stats.request_count, 0, 'the code did not run');
    assert.equal(await runsUsage(), usage, 'a run without rights costs nothing');
    const listed = await t.request('GET', `/v1/snippets/${snippet.id}/runs?view=full`, ctx(owner.token));
    assert.equal(listed.body.data[0].error.code, 'WRITER_UNAUTHORIZED');
    // Saving the code again as someone with rights makes it run again.
    const current = (await t.request('GET', `/v1/snippets/${snippet.id}`, ctx(owner.token))).body;
    await patch(owner.token, current, { code: CREATE_TOKEN });
    assert.equal((await run(owner.token, snippet.id)).output, 201);
  });

  test('code last written through an API token runs with the token\'s rights now: none once it is revoked or expired', async () => {
    const revoked = await t.apiToken(owner, ws, { name: 'writer', role: 'admin' });
    const viaToken = await create(revoked.token, CREATE_TOKEN);
    assert.equal(viaToken.last_writer_id, revoked.id);
    assert.equal((await run(owner.token, viaToken.id)).output, 201);
    const revoke = await t.request('DELETE', `/v1/api_tokens/${revoked.id}`, ctx(owner.token));
    assert.equal(revoke.status, 204, revoke.text);
    const failed = await run(owner.token, viaToken.id);
    assert.equal(failed.error.code, 'WRITER_UNAUTHORIZED');
    assert.deepEqual(failed.error.details, { writer_id: revoked.id, cause: 'revoked' });

    const expiring = await t.apiToken(owner, ws, { name: 'expiring', role: 'admin', expires_at: clock.now() + 3600 });
    const viaExpiring = await create(expiring.token, CREATE_TOKEN);
    assert.equal((await run(owner.token, viaExpiring.id)).output, 201);
    clock.offsetMs += 7200_000;
    try {
      const expired = await run(owner.token, viaExpiring.id);
      assert.equal(expired.error.code, 'WRITER_UNAUTHORIZED');
      assert.equal(expired.error.details.cause, 'expired');
    } finally {
      clock.offsetMs -= 7200_000;
    }
  });

  test('a write made by a snippet run keeps at most that run\'s role, even when an admin ran it', async () => {
    const admin = await member('admin');
    const planter = await member('member');
    const target = await create(admin.token, CREATE_TOKEN);
    // The member's code rewrites the admin's snippet; the admin runs it (as a member: the writer's role).
    const rewrite = `const s = await platform.request({ path: '/v1/snippets/${target.id}' });
      const r = await platform.request({ method: 'PATCH', path: '/v1/snippets/${target.id}', headers: { 'if-match': s.body.etag }, body: { code: ${JSON.stringify(CREATE_TOKEN)} + ' // rewritten' } });
      return r.status;`;
    const planted = await create(planter.token, rewrite);
    assert.equal((await run(admin.token, planted.id)).output, 200);
    const rewritten = (await t.request('GET', `/v1/snippets/${target.id}`, ctx(owner.token))).body;
    assert.equal(rewritten.last_writer_id, admin.id, 'the run acted as the admin who ran it');
    assert.equal((await run(admin.token, target.id)).output, 403, 'but the code it wrote runs with no more than that run\'s member role');
  });
});
