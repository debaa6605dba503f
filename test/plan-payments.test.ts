// Plans paid through the payment provider (issue 34, SVC_BILLING=payments), through HTTP on the
// real database: a raise answers a plan checkout at the local provider; paying on its hosted page
// (the form a browser without JavaScript posts) delivers the signed completion to the webhook
// route, which hands the plan's session to the subscriptions service: the plan moves once, audited
// with the person who asked and the payment. A replayed webhook, a new event for the same session,
// a second payment attempt and the return page change nothing twice. Refusals: a member, an unknown
// tier, the same tier, a plan without a price; an open checkout replaced by a raise to another tier
// cannot be paid; an expired one changes nothing; a payment that arrives when the plan has moved
// meanwhile is refunded. Lowering works as before, and operator billing still refuses a raise (403).
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { signatureHeader } from '../src/drivers/payments/local-events.js';
import { localPaymentsSigningKey } from '../src/drivers/payments/registry.js';
import { clock } from '../src/platform/clock.js';
import { BUILT_IN_PLANS, parsePlans } from '../src/modules/plans/plans.js';
import { Browser, csrfOf } from './browser.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { plansFile } from './plans-fixtures.js';

type Json = Record<string, any>;

/** The path of a checkout URL ({public_url}/checkout/chk_…), for the in-process browser. */
const pathOf = (url: string) => new URL(url).pathname;

/** Pays a local checkout on its hosted page as a browser without JavaScript does. */
async function pay(t: TestApp, url: string, card = '4242424242424242') {
  const browser = new Browser(t);
  const page = await browser.get(pathOf(url));
  return browser.post(pathOf(url), { card_number: card, expiry: '12 / 40', cvc: '123', csrf: csrfOf(page.html), action: 'pay' });
}

describe('plans paid through the local payment provider (SVC_BILLING=payments)', () => {
  let t: TestApp;
  let admin: TestUser;
  let member: TestUser;

  before(async () => {
    // The built-in catalog plus `team`, a plan the operator gives (no price).
    const file = plansFile();
    const { readFileSync, writeFileSync } = await import('node:fs');
    const plans = JSON.parse(readFileSync(file, 'utf8')) as Json[];
    plans.push({ ...plans[plans.length - 1], tier: 'team', display_name: 'Team', price: null });
    writeFileSync(file, JSON.stringify(plans));
    t = await startTestApp({ SVC_BILLING: 'payments', SVC_PLANS_FILE: file });
    admin = await t.user('admin');
    member = await t.user('member');
  });
  after(() => t.close());
  afterEach(() => { clock.offsetMs = 0; });

  async function workspace(name: string) {
    const owner = await t.user('owner');
    const ws = (await t.workspace(owner, name)).id;
    await t.addMember(owner, ws, admin, 'admin');
    await t.addMember(owner, ws, member, 'member');
    return { owner, ws };
  }
  const sub = async (ws: string, user: TestUser) => (await t.request('GET', `/v1/workspaces/${ws}/subscription`, { token: user.token })).body as Json;
  async function changeTier(ws: string, user: TestUser, tier: string, etag?: string) {
    return t.request('POST', `/v1/workspaces/${ws}/subscription:changeTier`, { token: user.token, headers: { 'if-match': etag ?? (await sub(ws, user)).etag }, body: { tier } });
  }
  const checkoutsOf = async (ws: string, user: TestUser) => (await t.request('GET', `/v1/workspaces/${ws}/subscription/checkouts`, { token: user.token })).body.data as Json[];
  const changesOf = async (ws: string, user: TestUser) => (await t.request('GET', `/v1/workspaces/${ws}/subscription/change_requests`, { token: user.token })).body.data as Json[];
  /** Signs a body as the local provider does and posts it to the webhook route. */
  async function deliver(body: string, key = localPaymentsSigningKey(t.config)) {
    const res = await t.app.inject({
      method: 'POST', url: '/v1/payment_webhooks/local', payload: body,
      headers: { 'content-type': 'application/json', 'svc-signature': signatureHeader(key, body, clock.now()) },
    });
    return { status: res.statusCode, text: res.body, body: JSON.parse(res.body) as Json };
  }
  const completionOf = async (sessionId: string) => {
    const events = await t.services.db.selectFrom('local_payment_events').select(['body', 'type']).where('type', '=', 'checkout.session.completed').execute();
    return events.map((e) => e.body).find((b) => (JSON.parse(b) as Json).data.object.id === sessionId)!;
  };

  test('settings and the catalog say how plans are raised and what they cost', async () => {
    assert.deepEqual((await t.request('GET', '/v1/auth/settings')).body.billing, 'payments');
    const plans = (await t.request('GET', '/v1/plans', { token: admin.token })).body.data as Json[];
    assert.deepEqual(plans.map((p) => [p.tier, p.price]), [
      ['free', null], ['pro', { currency: 'usd', unit_amount: 2900 }], ['enterprise', { currency: 'usd', unit_amount: 49900 }], ['team', null],
    ]);
  });

  test('a raise opens a checkout; paying it on the hosted page raises the plan once; replays change nothing', async () => {
    const { owner, ws } = await workspace('Paying');
    const before = await sub(ws, owner);
    const res = await changeTier(ws, owner, 'pro');
    assert.equal(res.status, 201, res.text);
    const checkout = res.body as Json;
    assert.match(checkout.id, /^pck_/);
    assert.equal(res.headers.location, `/v1/workspaces/${ws}/subscription/checkouts/${checkout.id}`);
    assert.deepEqual(
      [checkout.state, checkout.tier, checkout.previous_tier, checkout.amount, checkout.currency, checkout.interval, checkout.provider, checkout.created_by, checkout.change_request_id],
      ['open', 'pro', 'free', 2900, 'usd', 'month', 'local', owner.id, null],
    );
    assert.match(checkout.checkout_url, /\/checkout\/chk_[0-9a-z]{26}$/);
    assert.equal(pathOf(checkout.checkout_url), `/checkout/${checkout.provider_session_id}`);
    // Nothing changed yet: the plan waits for the payment, and the subscription shows what is pending.
    const waiting = await sub(ws, owner);
    assert.equal(waiting.tier, 'free');
    assert.equal(waiting.etag, before.etag);
    assert.deepEqual(waiting.pending_checkout, { plan_checkout_id: checkout.id, tier: 'pro', checkout_url: checkout.checkout_url, expires_at: checkout.expires_at });
    assert.equal((await changesOf(ws, owner)).length, 0);
    // Asked again (a double click, another tab): the same open checkout, 200.
    const again = await changeTier(ws, admin, 'pro');
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.id, checkout.id);
    const page = await new Browser(t).get(pathOf(checkout.checkout_url));
    assert.match(page.html, /Pro plan/);
    assert.match(page.html, /\$29\.00 per month/);

    const paid = await pay(t, checkout.checkout_url);
    assert.equal(paid.status, 303, paid.html);
    assert.equal(paid.headers.location, `${t.config.publicUrl}/checkout/return/local?session_id=${checkout.provider_session_id}`);
    const raised = await sub(ws, owner);
    assert.equal(raised.tier, 'pro');
    assert.notEqual(raised.etag, before.etag);
    assert.equal(raised.pending_checkout, null);
    const done = (await t.request('GET', `/v1/workspaces/${ws}/subscription/checkouts/${checkout.id}`, { token: member.token })).body as Json;
    assert.equal(done.state, 'paid');
    assert.match(done.change_request_id, /^scr_/);
    assert.ok(done.completed_at >= checkout.created_at);
    const change = (await changesOf(ws, owner))[0]!;
    assert.deepEqual([change.id, change.kind, change.status, change.previous_tier, change.requested_tier, change.operation_id], [done.change_request_id, 'upgrade', 'applied', 'free', 'pro', null]);
    assert.match(change.status_reason, /paid through local/);
    const ws2 = (await t.request('GET', `/v1/workspaces/${ws}`, { token: owner.token })).body;
    assert.equal(ws2.plan.tier, 'pro');
    // Audited with the person who asked and the payment.
    const audit = (await t.request('GET', `/v1/audit_events?limit=100`, { token: owner.token, headers: { 'svc-context': ws } })).body.data as Json[];
    const opened = audit.find((e) => e.action === 'subscription.checkout.create')!;
    // The actor is named since the audit log shows people by name and e-mail (merge 4e28fae).
    assert.deepEqual([opened.actor.type, opened.actor.id, opened.actor.email, opened.resource_type, opened.resource_id, opened.metadata.tier, opened.metadata.amount], ['user', owner.id, owner.email, 'plan_checkout', checkout.id, 'pro', '2900']);
    const raisedEvent = audit.find((e) => e.action === 'subscription.plan_paid')!;
    assert.deepEqual([raisedEvent.actor.type, raisedEvent.actor.id, raisedEvent.actor.email], ['user', owner.id, owner.email]);
    assert.deepEqual(
      [raisedEvent.metadata.previous_tier, raisedEvent.metadata.tier, raisedEvent.metadata.plan_checkout_id, raisedEvent.metadata.provider_session_id, raisedEvent.metadata.amount, raisedEvent.metadata.currency],
      ['free', 'pro', checkout.id, checkout.provider_session_id, '2900', 'usd'],
    );
    assert.match(raisedEvent.metadata.provider_subscription_id, /^lsub_/, 'the monthly subscription the provider started');
    const notes = (await t.request('GET', '/v1/notifications', { token: admin.token })).body.data.filter((n: Json) => n.type === 'subscription_change_applied' && n.workspace_id === ws);
    assert.equal(notes.length, 1);

    // Replays: the same event again, a new event for the same paid session, the page's form again, the return page.
    const body = await completionOf(checkout.provider_session_id);
    const replay = await deliver(body);
    assert.equal(replay.status, 200, replay.text);
    assert.equal(replay.body.outcome, 'duplicate');
    const another = JSON.parse(body) as Json;
    another.id = `${another.id.slice(0, -3)}zzz`;
    const second = await deliver(JSON.stringify(another));
    assert.equal(second.status, 200, second.text);
    assert.equal(second.body.outcome, 'duplicate');
    const forged = await deliver(body, Buffer.alloc(32, 1));
    assert.equal(forged.status, 400);
    assert.equal(forged.body.error.reason, 'WEBHOOK_SIGNATURE_INVALID');
    const payAgain = await new Browser(t).get(pathOf(checkout.checkout_url));
    assert.equal(payAgain.status, 200);
    assert.doesNotMatch(payAgain.html, /name="card_number"/, 'a paid session offers no second payment');
    const back = await t.app.inject({ method: 'GET', url: `/checkout/return/local?session_id=${checkout.provider_session_id}` });
    assert.equal(back.statusCode, 303);
    assert.equal(back.headers.location, `/settings/plan?checkout=${checkout.id}`);
    assert.equal((await changesOf(ws, owner)).length, 1, 'one change request, whatever was replayed');
    assert.equal((await sub(ws, owner)).tier, 'pro');
    assert.equal((await t.request('GET', '/v1/notifications', { token: admin.token })).body.data.filter((n: Json) => n.type === 'subscription_change_applied' && n.workspace_id === ws).length, 1);

    // Lowering works as before: an operation, applied at the period end.
    const lower = await changeTier(ws, owner, 'free');
    assert.equal(lower.status, 202, lower.text);
    assert.equal((await sub(ws, owner)).scheduled_change.requested_tier, 'free');
  });

  test('refusals change nothing: a member, an unknown tier, the same tier, a stale etag, a plan the operator gives', async () => {
    const { owner, ws } = await workspace('Refusals');
    const byMember = await changeTier(ws, member, 'pro');
    assert.equal(byMember.status, 403, byMember.text);
    assert.equal(byMember.body.error.reason, 'ROLE_TOO_LOW');
    const unknown = await changeTier(ws, owner, 'platinum');
    assert.equal(unknown.status, 400, unknown.text);
    const same = await changeTier(ws, owner, 'free');
    assert.equal(same.status, 422);
    assert.equal(same.body.error.reason, 'SAME_TIER');
    const stale = await changeTier(ws, owner, 'pro', '"999"');
    assert.equal(stale.status, 409, stale.text);
    assert.equal(stale.body.error.reason, 'ETAG_MISMATCH');
    const unsold = await changeTier(ws, owner, 'team');
    assert.equal(unsold.status, 403, unsold.text);
    assert.equal(unsold.body.error.reason, 'PLAN_SET_BY_OPERATOR');
    assert.deepEqual(await checkoutsOf(ws, owner), []);
    assert.equal((await sub(ws, owner)).tier, 'free');
  });

  test('paying twice: a raise to another tier replaces the open checkout, which can no longer be paid', async () => {
    const { owner, ws } = await workspace('Twice');
    const pro = (await changeTier(ws, owner, 'pro')).body as Json;
    const ent = await changeTier(ws, admin, 'enterprise');
    assert.equal(ent.status, 201, ent.text);
    assert.notEqual(ent.body.id, pro.id);
    const old = (await t.request('GET', `/v1/workspaces/${ws}/subscription/checkouts/${pro.id}`, { token: owner.token })).body as Json;
    assert.ok(['expired', 'canceled'].includes(old.state), old.state);
    const refused = await new Browser(t).get(pathOf(pro.checkout_url));
    assert.doesNotMatch(refused.html, /name="card_number"/, 'the replaced session can no longer be paid');
    assert.equal((await sub(ws, owner)).tier, 'free');
    assert.equal((await pay(t, ent.body.checkout_url)).status, 303);
    assert.equal((await sub(ws, owner)).tier, 'enterprise');
    const states = (await checkoutsOf(ws, owner)).map((c) => [c.tier, c.state]);
    assert.deepEqual(states, [['enterprise', 'paid'], ['pro', old.state]]);
    assert.equal((await changesOf(ws, owner)).length, 1);
  });

  test('an expired checkout changes nothing and cannot be paid', async () => {
    const { owner, ws } = await workspace('Expiring');
    const checkout = (await changeTier(ws, owner, 'pro')).body as Json;
    clock.offsetMs += (checkout.expires_at - clock.now() + 5) * 1000;
    await t.services.sweeps.orders();
    const expired = (await t.request('GET', `/v1/workspaces/${ws}/subscription/checkouts/${checkout.id}`, { token: owner.token })).body as Json;
    assert.equal(expired.state, 'expired');
    const late = await new Browser(t).get(pathOf(checkout.checkout_url));
    assert.doesNotMatch(late.html, /name="card_number"/, 'an expired session can no longer be paid');
    const s = await sub(ws, owner);
    assert.deepEqual([s.tier, s.pending_checkout], ['free', null]);
    assert.equal((await changesOf(ws, owner)).length, 0);
    // A new raise makes a new checkout.
    assert.equal((await changeTier(ws, owner, 'pro')).status, 201);
  });

  test('a payment that arrives when the plan has moved meanwhile is refunded, and the plan stays', async () => {
    const { owner, ws } = await workspace('Moved');
    const checkout = (await changeTier(ws, owner, 'pro')).body as Json;
    await t.services.subscriptions.setPlan(ws, 'enterprise');
    assert.equal((await pay(t, checkout.checkout_url)).status, 303);
    const after = (await t.request('GET', `/v1/workspaces/${ws}/subscription/checkouts/${checkout.id}`, { token: owner.token })).body as Json;
    assert.equal(after.state, 'refunded');
    assert.match(after.status_reason, /already on enterprise/);
    const local = await t.services.db.selectFrom('local_checkouts').select('refunded_at').where('id', '=', checkout.provider_session_id).executeTakeFirstOrThrow();
    assert.ok(local.refunded_at, 'the provider refunded the payment');
    assert.equal((await sub(ws, owner)).tier, 'enterprise');
  });
});

test('a plans file may price its plans: cents per month in eur or usd, null or left out for none; free is never sold', () => {
  const file = (pro: unknown, free: unknown = undefined) => JSON.stringify(BUILT_IN_PLANS.map((p) => {
    const { price: _price, ...rest } = p;
    return p.tier === 'pro' ? { ...rest, ...(pro === undefined ? {} : { price: pro }) } : p.tier === 'free' ? { ...rest, ...(free === undefined ? {} : { price: free }) } : p;
  }));
  assert.equal(parsePlans(file(undefined)).plan('pro').price, null);
  assert.equal(parsePlans(file(null)).plan('pro').price, null);
  assert.deepEqual(parsePlans(file({ currency: 'eur', unit_amount: 4900 })).plan('pro').price, { currency: 'eur', unit_amount: 4900 });
  assert.throws(() => parsePlans(file({ currency: 'gbp', unit_amount: 4900 })), /plans\[1\]\.price\.currency must be eur or usd/);
  assert.throws(() => parsePlans(file({ currency: 'eur', unit_amount: 0 })), /unit_amount must be a whole number of cents/);
  assert.throws(() => parsePlans(file({ currency: 'eur', unit_amount: 49.5 })), /unit_amount must be a whole number of cents/);
  assert.throws(() => parsePlans(file({ currency: 'eur', unit_amount: 4900, interval: 'year' })), /unknown field "interval"/);
  assert.throws(() => parsePlans(file(undefined, { currency: 'eur', unit_amount: 100 })), /plans\[0\]\.price must be null/);
});

describe('operator billing (the default) is unchanged', () => {
  let t: TestApp;
  before(async () => { t = await startTestApp(); });
  after(() => t.close());

  test('a raise is 403 PLAN_SET_BY_OPERATOR and opens no checkout', async () => {
    const owner = await t.user('owner');
    const ws = (await t.workspace(owner, 'Operated')).id;
    const etag = (await t.request('GET', `/v1/workspaces/${ws}/subscription`, { token: owner.token })).body.etag;
    const res = await t.request('POST', `/v1/workspaces/${ws}/subscription:changeTier`, { token: owner.token, headers: { 'if-match': etag }, body: { tier: 'pro' } });
    assert.equal(res.status, 403, res.text);
    assert.equal(res.body.error.reason, 'PLAN_SET_BY_OPERATOR');
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}/subscription/checkouts`, { token: owner.token })).body.data.length, 0);
    assert.equal((await t.request('GET', '/v1/auth/settings')).body.billing, 'operator');
  });
});
