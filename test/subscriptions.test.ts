// Subscriptions (API.md 8.2, spec endpoint 10): the subscription of every workspace; :changeTier,
// :cancel and :reactivate as operations with if-match; with SVC_BILLING=operator (the default) a
// raise only by the operator (`svc admin workspaces set-plan`, its service here: setPlan), at once;
// downgrades and cancels at the period end with a moved clock, applied once by the workers' sweep
// together with the plan; downgrades below usage refused; change requests with ISO 8601 times.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, afterEach, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { assertNamed } from './notification-wording.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { InstallFixtures, type Caller } from './installs-fixtures.js';
import { assertOperationInvariants } from './operation-invariants.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DAY = 86_400_000;

describe('subscriptions', () => {
  let t: TestApp;
  let f: InstallFixtures;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;

  before(async () => {
    t = await startTestApp();
    f = new InstallFixtures(t);
    admin = await t.user('admin');
    member = await t.user('member');
  });
  after(() => t.close());
  afterEach(() => { clock.offsetMs = 0; });

  /** A workspace with a fresh owner, the shared admin and member. */
  async function workspace(name: string): Promise<Caller> {
    owner = await t.user('owner');
    const ws = (await t.workspace(owner, name)).id;
    await t.addMember(owner, ws, admin, 'admin');
    await t.addMember(owner, ws, member, 'member');
    return { user: owner, ws };
  }

  const sub = (c: Caller, user: TestUser = c.user) => t.request('GET', `/v1/workspaces/${c.ws}/subscription`, { token: user.token });
  const act = (c: Caller, verb: string, etag: string, body?: unknown, user: TestUser = c.user, headers: Record<string, string> = {}) =>
    t.request('POST', `/v1/workspaces/${c.ws}/subscription:${verb}`, { token: user.token, headers: { 'if-match': etag, ...headers }, ...(body !== undefined ? { body } : {}) });
  /** Runs the action and waits for its operation; returns the finished operation. */
  async function done(c: Caller, verb: string, body?: unknown, user: TestUser = c.user): Promise<any> {
    const res = await act(c, verb, (await sub(c)).body.etag, body, user);
    assert.equal(res.status, 202, res.text);
    return f.waitOp(c, res.body.id);
  }
  /** The operator raises (or sets) the plan: what `svc admin workspaces set-plan` calls. */
  const raise = (c: Caller, tier: string) => t.services.subscriptions.setPlan(c.ws, tier);
  const changes = async (c: Caller) => (await t.request('GET', `/v1/workspaces/${c.ws}/subscription/change_requests`, { token: c.user.token })).body.data;
  const notes = async (u: TestUser, type: string, ws: string) =>
    (await t.request('GET', '/v1/notifications', { token: u.token })).body.data.filter((n: any) => n.type === type && n.workspace_id === ws);

  test('every workspace has one: free, active, monthly period, etag; members and tokens read it', async () => {
    const A = await workspace('Fresh');
    const res = await sub(A);
    assert.equal(res.status, 200, res.text);
    const s = res.body;
    assert.equal(s.id, `sub_${A.ws.slice(3)}`);
    assert.equal(s.workspace_id, A.ws);
    assert.deepEqual([s.tier, s.status, s.cancellation_scheduled, s.billed_by, s.scheduled_change], ['free', 'active', false, 'platform', null]);
    // Unix seconds, like every timestamp the spec leaves to us (issue 34).
    assert.ok(Number.isInteger(s.current_period_start) && Number.isInteger(s.current_period_end), JSON.stringify(s));
    const days = (s.current_period_end - s.current_period_start) * 1000 / DAY;
    assert.ok(days >= 28 && days <= 31, `${days} days`);
    assert.ok(s.current_period_start * 1000 <= clock.nowMs() && clock.nowMs() < s.current_period_end * 1000);
    assert.equal(s.etag, '1');
    assert.equal(res.headers.etag, '"1"');
    assert.equal((await sub(A, member)).status, 200);
    const token = await t.apiToken(owner, A.ws, { role: 'member' });
    assert.equal((await t.request('GET', `/v1/workspaces/${A.ws}/subscription`, { token: token.token })).status, 200);
    const stranger = await t.user('stranger');
    assert.equal((await sub(A, stranger)).status, 403);
    assert.equal((await t.request('GET', `/v1/workspaces/${A.ws}/subscription`, { token: owner.token, headers: { 'svc-context': 'ws_01aaaaaaaaaaaaaaaaaaaaaaaa' } })).status, 403);
    const ws = (await t.request('GET', `/v1/workspaces/${A.ws}`, { token: owner.token })).body;
    assert.deepEqual(ws.plan, { tier: 'free', billed_by: 'platform' });
  });

  test('a raise through the API is refused and changes nothing; the operator raises the plan at once: plan, quotas, change request, notices, audit', async () => {
    const A = await workspace('Upgrade');
    const before = (await t.request('GET', `/v1/workspaces/${A.ws}`, { token: owner.token })).body;
    for (const [user, tier] of [[owner, 'pro'], [admin, 'enterprise']] as const) {
      const refused = await act(A, 'changeTier', (await sub(A)).body.etag, { tier }, user);
      assert.equal(refused.status, 403, refused.text);
      assert.equal(refused.body.error.reason, 'PLAN_SET_BY_OPERATOR');
      assert.match(refused.body.error.message, /svc admin workspaces set-plan/);
    }
    assert.deepEqual(await changes(A), [], 'nothing was recorded');
    assert.equal((await sub(A)).body.etag, '1');

    const set = await raise(A, 'pro');
    assert.deepEqual([set.previousTier, set.tier], ['free', 'pro']);
    const s = (await sub(A)).body;
    assert.deepEqual([s.tier, s.status, s.scheduled_change, s.etag], ['pro', 'active', null, '2']);
    const ws = (await t.request('GET', `/v1/workspaces/${A.ws}`, { token: owner.token })).body;
    assert.equal(ws.plan.tier, 'pro');
    assert.equal(Number(ws.etag), Number(before.etag) + 1, 'the workspace changed once');
    const quotas = (await t.request('GET', '/v1/quotas', { token: owner.token, headers: { 'svc-context': A.ws } })).body.data;
    assert.equal(quotas.find((q: any) => q.metric === 'compute/clusters').limit, 20);
    const [cr] = await changes(A);
    assert.equal(cr.id, set.changeRequestId);
    assert.deepEqual([cr.kind, cr.previous_tier, cr.requested_tier, cr.status, cr.status_reason, cr.operation_id], ['upgrade', 'free', 'pro', 'applied', 'set by the operator', null]);
    assert.match(cr.created_at, ISO);
    assert.match(cr.effective_at, ISO);
    assert.match(cr.resolved_at, ISO);
    const one = await t.request('GET', `/v1/workspaces/${A.ws}/subscription/change_requests/${cr.id}`, { token: member.token });
    assert.deepEqual(one.body, cr);
    // The owners and admins hear of it; members do not.
    for (const u of [owner, admin]) {
      const told = await notes(u, 'subscription_change_applied', A.ws);
      assert.equal(told.length, 1);
      assert.equal(told[0].title, 'Plan changed from free to pro');
      assertNamed(told[0]);
      assert.ok(told[0].body.startsWith(`The upgrade of workspace Upgrade from free to pro took effect`), told[0].body);
    }
    assert.equal((await notes(member, 'subscription_change_applied', A.ws)).length, 0);
    // The audit log names the operator.
    const audit = await t.request('GET', '/v1/audit_events?action=subscription.set_plan', { token: owner.token, headers: { 'svc-context': A.ws } });
    assert.equal(audit.status, 200, audit.text);
    assert.equal(audit.body.data.length, 1);
    assert.deepEqual(audit.body.data[0].actor, { type: 'system', id: 'operator', name: null, email: null });
    assert.deepEqual(audit.body.data[0].metadata, { previous_tier: 'free', tier: 'pro', change_request_id: cr.id });
    // The same tier again is refused; a tier outside the catalog too, naming the catalog.
    await assert.rejects(raise(A, 'pro'), (err: { options?: { reason?: string } }) => err.options?.reason === 'SAME_TIER');
    await assert.rejects(raise(A, 'platinum'), (err: Error) => /platinum.*free, pro, enterprise/.test(err.message));
  });

  test('roles, if-match and bad input: owner and admin change it, members may not; tier outside the catalog is 400', async () => {
    const A = await workspace('Rules');
    const etag = (await sub(A)).body.etag;
    assert.equal((await act(A, 'changeTier', etag, { tier: 'pro' }, member)).status, 403);
    const token = await t.apiToken(owner, A.ws, { role: 'member' });
    const asToken = await t.request('POST', `/v1/workspaces/${A.ws}/subscription:cancel`, { token: token.token, headers: { 'if-match': etag } });
    assert.equal(asToken.status, 403);
    const missing = await t.request('POST', `/v1/workspaces/${A.ws}/subscription:changeTier`, { token: owner.token, body: { tier: 'pro' } });
    assert.equal(missing.status, 400);
    assert.ok(missing.body.error.field_violations.some((v: any) => v.field === 'header.if-match'), missing.text);
    const stale = await act(A, 'changeTier', '"7"', { tier: 'pro' });
    assert.equal(stale.status, 409);
    assert.deepEqual([stale.body.error.code, stale.body.error.reason, stale.body.error.metadata.etag], ['ABORTED', 'ETAG_MISMATCH', etag]);
    const unknown = await act(A, 'changeTier', etag, { tier: 'platinum' });
    assert.equal(unknown.status, 400);
    assert.ok(unknown.body.error.field_violations.some((v: any) => v.field === 'body.tier'), unknown.text);
    for (const body of [{}, { tier: 'pro', extra: 1 }, { tier: 5 }]) assert.equal((await act(A, 'changeTier', etag, body)).status, 400);
    assert.equal((await act(A, 'changeTier', etag, { tier: 'free' })).body.error.reason, 'SAME_TIER');
    assert.equal((await act(A, 'cancel', etag)).body.error.reason, 'NOTHING_TO_CANCEL');
    assert.equal((await act(A, 'reactivate', etag)).body.error.reason, 'NOT_CANCELING');
    assert.deepEqual(await changes(A), [], 'nothing was recorded');
    assert.equal((await sub(A)).body.etag, etag);
    // An admin may lower it; `*` matches any etag; an idempotent retry returns the same operation.
    await raise(A, 'enterprise');
    const key = randomUUID();
    const first = await act(A, 'changeTier', '*', { tier: 'pro' }, admin, { 'idempotency-key': key });
    assert.equal(first.status, 202, first.text);
    const replay = await act(A, 'changeTier', '*', { tier: 'pro' }, admin, { 'idempotency-key': key });
    assert.equal(replay.status, 202);
    assert.equal(replay.body.id, first.body.id);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal((await f.waitOp(A, first.body.id)).state, 'SUCCEEDED');
    assert.equal((await changes(A)).length, 2, 'the operator\'s raise and the pending downgrade');
  });

  test('a downgrade waits for the period end, then the sweep applies it once with the plan', async () => {
    const A = await workspace('Downgrade');
    await raise(A, 'enterprise');
    const op = await done(A, 'changeTier', { tier: 'pro' });
    assert.equal(op.state, 'SUCCEEDED');
    assert.equal(op.response.status, 'pending');
    const s = (await sub(A)).body;
    assert.equal(s.tier, 'enterprise', 'not yet');
    assert.equal(s.status, 'active');
    assert.deepEqual(s.scheduled_change, { change_request_id: op.response.change_request_id, kind: 'downgrade', requested_tier: 'pro', effective_at: new Date(s.current_period_end * 1000).toISOString() });
    assert.equal(op.response.effective_at, new Date(s.current_period_end * 1000).toISOString());
    // Nothing happens before the end.
    assert.equal((await t.runtime.sweepAccount()).change_requests, 0);
    clock.offsetMs = s.current_period_end * 1000 - Date.now() - 60_000;
    await t.runtime.sweepAccount();
    assert.equal((await sub(A)).body.tier, 'enterprise');
    // Past it: applied, once.
    const wsBefore = (await t.request('GET', `/v1/workspaces/${A.ws}`, { token: owner.token })).body;
    clock.offsetMs = s.current_period_end * 1000 - Date.now() + 1000;
    await Promise.all([t.runtime.sweepAccount(), t.runtime.sweepAccount(), t.runtime.sweepAccount()]);
    await t.runtime.sweepAccount();
    const after = (await sub(A)).body;
    assert.deepEqual([after.tier, after.status, after.scheduled_change], ['pro', 'active', null]);
    assert.equal(Number(after.etag), Number(s.etag) + 1);
    const ws = (await t.request('GET', `/v1/workspaces/${A.ws}`, { token: owner.token })).body;
    assert.equal(ws.plan.tier, 'pro');
    assert.equal(Number(ws.etag), Number(wsBefore.etag) + 1, 'the plan changed once');
    assert.ok(after.current_period_start * 1000 >= s.current_period_end * 1000, 'a new period');
    const [cr] = await changes(A);
    assert.deepEqual([cr.status, cr.kind], ['applied', 'downgrade']);
    assert.ok(Date.parse(cr.resolved_at) >= Date.parse(cr.effective_at));
    const applied = await notes(admin, 'subscription_change_applied', A.ws);
    assert.deepEqual(applied.map((n: any) => n.context.tier), ['pro', 'enterprise']);
  });

  test('a downgrade or cancel below the usage is refused with 422 QUOTA_WOULD_BE_EXCEEDED', async () => {
    const A = await workspace('Crowded');
    await raise(A, 'pro');
    for (let i = 0; i < 4; i++) await f.cluster(A);
    const etag = (await sub(A)).body.etag;
    for (const [verb, body] of [['changeTier', { tier: 'free' }], ['cancel', undefined]] as const) {
      const res = await act(A, verb, etag, body);
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.error.reason, 'QUOTA_WOULD_BE_EXCEEDED');
      assert.deepEqual(res.body.error.metadata, { metric: 'compute/clusters', limit: '3', usage: '4', tier: 'free' });
    }
    assert.equal((await changes(A)).length, 1, 'only the operator\'s raise');
    assert.equal((await sub(A)).body.etag, etag);
  });

  test('a scheduled downgrade that finds usage above its limits at the period end is rejected; the plan stays', async () => {
    const A = await workspace('Grown');
    await raise(A, 'pro');
    await done(A, 'changeTier', { tier: 'free' });
    for (let i = 0; i < 4; i++) await f.cluster(A);
    const s = (await sub(A)).body;
    clock.offsetMs = s.current_period_end * 1000 - Date.now() + 1000;
    await t.runtime.sweepAccount();
    const after = (await sub(A)).body;
    assert.deepEqual([after.tier, after.status, after.scheduled_change], ['pro', 'active', null]);
    const [cr] = await changes(A);
    assert.equal(cr.status, 'rejected');
    assert.match(cr.status_reason, /compute\/clusters usage 4 is above the 3 the free plan allows/);
    const [rejected] = await notes(owner, 'subscription_change_rejected', A.ws);
    assert.equal(rejected.severity, 'critical');
    assert.equal(rejected.context.metric, 'compute/clusters');
    assertNamed(rejected, 'to free');
    assert.ok(rejected.body.startsWith('Workspace Grown uses 4 of compute/clusters'), rejected.body);
  });

  test('cancel schedules free at the period end; reactivate undoes it; a cancel left alone applies', async () => {
    const A = await workspace('Cancel');
    await raise(A, 'pro');
    const cancelled = await done(A, 'cancel');
    assert.equal(cancelled.metadata.type, 'workspace.subscription.cancel');
    assert.equal(cancelled.response.status, 'pending');
    let s = (await sub(A)).body;
    assert.deepEqual([s.tier, s.status, s.cancellation_scheduled, s.scheduled_change.kind, s.scheduled_change.requested_tier], ['pro', 'canceling', true, 'cancel', 'free']);
    assert.equal((await act(A, 'cancel', s.etag)).body.error.reason, 'ALREADY_CANCELING');
    const reactivated = await done(A, 'reactivate');
    assert.equal(reactivated.metadata.type, 'workspace.subscription.reactivate');
    assert.equal(reactivated.response.status, 'canceled');
    s = (await sub(A)).body;
    assert.deepEqual([s.tier, s.status, s.cancellation_scheduled, s.scheduled_change], ['pro', 'active', false, null]);
    const [undone] = await changes(A);
    assert.deepEqual([undone.kind, undone.status, undone.status_reason], ['cancel', 'canceled', 'reactivated']);
    // After a reactivation, the period end changes nothing.
    clock.offsetMs = s.current_period_end * 1000 - Date.now() + 1000;
    await t.runtime.sweepAccount();
    assert.equal((await sub(A)).body.tier, 'pro');
    // Cancel again (in the next period) and let it run out.
    const again = await done(A, 'cancel');
    s = (await sub(A)).body;
    clock.offsetMs = s.current_period_end * 1000 - Date.now() + 1000;
    await t.runtime.sweepAccount();
    s = (await sub(A)).body;
    assert.deepEqual([s.tier, s.status], ['free', 'active']);
    assert.equal((await changes(A))[0].id, again.response.change_request_id);
    assert.equal((await changes(A))[0].status, 'applied');
  });

  test('a new change supersedes a pending one; the current tier withdraws it', async () => {
    const A = await workspace('Supersede');
    await raise(A, 'enterprise');
    const down = await done(A, 'changeTier', { tier: 'pro' });
    const cancel = await done(A, 'cancel');
    let [latest, previous] = await changes(A);
    assert.deepEqual([latest.id, latest.status, previous.id, previous.status], [cancel.response.change_request_id, 'pending', down.response.change_request_id, 'canceled']);
    assert.equal(previous.status_reason, `superseded by change request ${latest.id}`);
    assert.equal((await sub(A)).body.status, 'canceling');
    const withdrawn = await done(A, 'changeTier', { tier: 'enterprise' });
    assert.equal(withdrawn.response.change_request_id, latest.id);
    assert.equal(withdrawn.response.status, 'canceled');
    [latest] = await changes(A);
    assert.deepEqual([latest.status, latest.status_reason], ['canceled', 'withdrawn: the subscription stays on enterprise']);
    const s = (await sub(A)).body;
    assert.deepEqual([s.tier, s.status, s.scheduled_change], ['enterprise', 'active', null]);
  });

  test('change requests page newest first with cursors; another workspace\'s request is 404', async () => {
    const A = await workspace('Paged');
    await raise(A, 'pro');
    await raise(A, 'enterprise');
    await done(A, 'changeTier', { tier: 'pro' });
    const first = await t.request('GET', `/v1/workspaces/${A.ws}/subscription/change_requests?limit=2`, { token: member.token });
    assert.equal(first.body.data.length, 2);
    assert.equal(first.body.has_more, true);
    const second = await t.request('GET', `/v1/workspaces/${A.ws}/subscription/change_requests?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`, { token: member.token });
    assert.equal(second.body.data.length, 1);
    assert.equal(second.body.has_more, false);
    assert.deepEqual([...first.body.data, ...second.body.data].map((c: any) => c.requested_tier), ['pro', 'enterprise', 'pro']);
    const B = await workspace('Other');
    const cr = first.body.data[0].id;
    assert.equal((await t.request('GET', `/v1/workspaces/${B.ws}/subscription/change_requests/${cr}`, { token: B.user.token })).status, 404);
    assert.equal((await t.request('GET', `/v1/workspaces/${A.ws}/subscription/change_requests/op_${cr.slice(4)}`, { token: member.token })).status, 404);
  });
});
