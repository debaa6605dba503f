// A paid plan's subscription at the local payment provider after its first payment (issue 34,
// SVC_BILLING=payments), through HTTP on the real database, the provider's own sweep driving its
// renewals with the clock: a cancel sets it to end at the period end (the plan stays paid until
// then, reactivate undoes it) and at the period end the provider ends it and the plan is free; a
// renewal moves the paid period on and is recorded as one; a downgrade to a lower paid plan charges
// that plan's price from the next period; a newer paid raise, the operator's set-plan and the
// workspace's deletion end it at the provider at once; the provider ending it on its own lowers the
// plan to free at once (audited, owners notified, once); a provider that keeps refusing is retried,
// shown on the subscription and reported to the owners.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { PaymentProviderError, type PaymentProvider } from '../src/drivers/payments/driver.js';
import { clock, isoFromSeconds } from '../src/platform/clock.js';
import { Browser, csrfOf } from './browser.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

type Json = Record<string, any>;
const MONTH = 3600;

describe('a paid plan\'s subscription at the local provider follows the plan', () => {
  let t: TestApp;

  before(async () => {
    t = await startTestApp({ SVC_BILLING: 'payments', SVC_LOCAL_PAYMENTS_MONTH_S: String(MONTH) });
  });
  after(() => t.close());
  afterEach(() => { clock.offsetMs = 0; });

  const sub = async (ws: string, user: TestUser) => (await t.request('GET', `/v1/workspaces/${ws}/subscription`, { token: user.token })).body as Json;
  const post = async (ws: string, user: TestUser, action: string, body?: Json) =>
    t.request('POST', `/v1/workspaces/${ws}/subscription:${action}`, { token: user.token, headers: { 'if-match': (await sub(ws, user)).etag }, ...(body ? { body } : {}) });
  const changesOf = async (ws: string, user: TestUser) => (await t.request('GET', `/v1/workspaces/${ws}/subscription/change_requests`, { token: user.token })).body.data as Json[];
  const notesOf = async (user: TestUser, ws: string, type: string) =>
    ((await t.request('GET', '/v1/notifications?limit=50', { token: user.token })).body.data as Json[]).filter((n) => n.workspace_id === ws && n.type === type);
  const auditOf = async (ws: string, user: TestUser, action: string) =>
    ((await t.request('GET', '/v1/audit_events?limit=100', { token: user.token, headers: { 'svc-context': ws } })).body.data as Json[]).filter((e) => e.action === action);
  /** The provider's own record of a subscription (what it will charge, whether it ended). */
  const atProvider = (subscriptionId: string) => t.services.db.selectFrom('local_checkouts').selectAll().where('subscription_id', '=', subscriptionId).executeTakeFirstOrThrow();
  const invoicesOf = async (subscriptionId: string) => (await t.services.db.selectFrom('local_payment_events').select('body').where('type', '=', 'invoice.paid').execute())
    .map((e) => JSON.parse(e.body) as Json).filter((e) => e.data.object.subscription === subscriptionId);

  /** Polls the subscription until `ok` holds (the sync job runs in the test's workers). */
  async function until(ws: string, user: TestUser, ok: (s: Json) => boolean, what: string): Promise<Json> {
    let last: Json = {};
    for (let i = 0; i < 400; i++) {
      last = await sub(ws, user);
      if (ok(last)) return last;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`never ${what}: ${JSON.stringify(last.paid_subscription)}`);
  }
  const synced = (ws: string, user: TestUser) => until(ws, user, (s) => s.paid_subscription?.sync === 'done', 'synced');

  /** Raises the plan and pays it on the local provider's hosted page; answers the provider's subscription id. */
  async function raiseAndPay(ws: string, owner: TestUser, tier: string): Promise<string> {
    const res = await post(ws, owner, 'changeTier', { tier });
    assert.equal(res.status, 201, res.text);
    const path = new URL(res.body.checkout_url as string).pathname;
    const browser = new Browser(t);
    const page = await browser.get(path);
    const paid = await browser.post(path, { card_number: '4242424242424242', expiry: '12 / 40', cvc: '123', csrf: csrfOf(page.html), action: 'pay' });
    assert.equal(paid.status, 303, paid.html);
    const s = await sub(ws, owner);
    assert.equal(s.tier, tier);
    assert.equal(s.paid_subscription.tier, tier);
    assert.equal(s.paid_subscription.state, 'active');
    return s.paid_subscription.provider_subscription_id as string;
  }

  async function paidWorkspace(name: string, tier = 'pro') {
    const owner = await t.user('owner');
    const ws = (await t.workspace(owner, name)).id;
    const subscriptionId = await raiseAndPay(ws, owner, tier);
    return { owner, ws, subscriptionId };
  }

  /** Moves the clock past the paid period's end and lets the provider and the workers' sweep act. */
  async function pastPeriodEnd(periodEnd: number) {
    clock.offsetMs += (periodEnd - clock.now() + 5) * 1000;
    await t.services.paymentChores();
    await t.services.subscriptions.applyDue();
  }

  test('a cancel ends the subscription at the period end: paid until then, reactivate undoes it, then the provider ends it and the plan is free', async () => {
    const { owner, ws, subscriptionId } = await paidWorkspace('Canceling');
    const paid = (await sub(ws, owner)).paid_subscription as Json;
    const provider = await atProvider(subscriptionId);
    // The period the subscription shows is the one paid for at the provider.
    assert.equal(paid.current_period_end, Number(provider.current_period_end));
    assert.equal((await sub(ws, owner)).current_period_end, paid.current_period_end);
    assert.equal(paid.cancel_at_period_end, false);

    assert.equal((await post(ws, owner, 'cancel')).status, 202);
    const canceling = await synced(ws, owner);
    assert.equal(canceling.tier, 'pro', 'the plan stays paid until the period end');
    assert.equal(canceling.scheduled_change.effective_at, isoFromSeconds(paid.current_period_end));
    assert.equal(canceling.paid_subscription.cancel_at_period_end, true);
    assert.equal((await atProvider(subscriptionId)).cancel_at_period_end, 1, 'the provider will not charge again');

    assert.equal((await post(ws, owner, 'reactivate')).status, 202);
    assert.equal((await synced(ws, owner)).paid_subscription.cancel_at_period_end, false);
    assert.equal((await atProvider(subscriptionId)).cancel_at_period_end, 0, 'renews again');

    assert.equal((await post(ws, owner, 'cancel')).status, 202);
    await synced(ws, owner);
    assert.equal((await atProvider(subscriptionId)).cancel_at_period_end, 1);
    await pastPeriodEnd(paid.current_period_end);
    const ended = await until(ws, owner, (s) => s.tier === 'free', 'free');
    assert.equal(ended.paid_subscription.state, 'ended');
    assert.ok((await atProvider(subscriptionId)).subscription_canceled_at !== null);
    assert.equal((await invoicesOf(subscriptionId)).length, 0, 'no month was charged after the cancel');
    // The cancel the owner asked for is the change that applied; nothing else moved the plan.
    const changes = await changesOf(ws, owner);
    const applied = changes.filter((c) => c.status === 'applied');
    assert.deepEqual(applied.map((c) => [c.kind, c.requested_tier]), [['cancel', 'free'], ['upgrade', 'pro']]);
    await t.services.subscriptions.applyDue();
    assert.equal((await changesOf(ws, owner)).filter((c) => c.status === 'applied').length, 2);
    assert.equal((await notesOf(owner, ws, 'subscription_change_applied')).length, 2);
  });

  test('renewals move the paid period on and are recorded as renewals', async () => {
    const { owner, ws, subscriptionId } = await paidWorkspace('Renewing');
    const first = (await sub(ws, owner)).paid_subscription as Json;
    await pastPeriodEnd(first.current_period_end);
    const renewed = await until(ws, owner, (s) => s.paid_subscription.renewals === 1, 'renewed');
    assert.equal(renewed.tier, 'pro');
    assert.equal(renewed.paid_subscription.current_period_start, first.current_period_end);
    assert.equal(renewed.paid_subscription.current_period_end, first.current_period_end + MONTH);
    assert.equal(renewed.current_period_end, first.current_period_end + MONTH);
    const [invoice] = await invoicesOf(subscriptionId);
    assert.ok(invoice);
    const taken = await t.services.db.selectFrom('payment_events').select(['outcome', 'type']).where('event_id', '=', invoice.id).executeTakeFirstOrThrow();
    assert.deepEqual([taken.type, taken.outcome], ['subscription.renewed', 'applied'], 'a renewal, not a late payment');
    const [audited] = await auditOf(ws, owner, 'subscription.plan_renewed');
    assert.ok(audited, 'audited');
    assert.equal(audited.actor.type, 'system');
    assert.equal(audited.metadata.current_period_end, String(first.current_period_end + MONTH));
    assert.equal(audited.metadata.provider_subscription_id, subscriptionId);
  });

  test('a downgrade to a lower paid plan charges that plan\'s price from the next period', async () => {
    const { owner, ws, subscriptionId } = await paidWorkspace('Lowering', 'enterprise');
    const first = (await sub(ws, owner)).paid_subscription as Json;
    assert.equal((await post(ws, owner, 'changeTier', { tier: 'pro' })).status, 202);
    const scheduled = await synced(ws, owner);
    assert.deepEqual([scheduled.tier, scheduled.paid_subscription.next_tier, scheduled.paid_subscription.cancel_at_period_end], ['enterprise', 'pro', false]);
    assert.equal(scheduled.scheduled_change.effective_at, isoFromSeconds(first.current_period_end));
    const provider = await atProvider(subscriptionId);
    assert.deepEqual([Number(provider.amount), provider.cancel_at_period_end], [2900, 0]);
    await pastPeriodEnd(first.current_period_end);
    const lowered = await until(ws, owner, (s) => s.tier === 'pro' && s.paid_subscription.renewals === 1, 'lowered and renewed');
    assert.deepEqual([lowered.paid_subscription.state, lowered.paid_subscription.tier, lowered.paid_subscription.next_tier], ['active', 'pro', null]);
    assert.equal((await invoicesOf(subscriptionId))[0]!.data.object.amount_paid, 2900);
  });

  test('a newer paid raise replaces the subscription: the old one is ended at the provider at once', async () => {
    const { owner, ws, subscriptionId: old } = await paidWorkspace('Replacing');
    const period = (await sub(ws, owner)).paid_subscription.current_period_end as number;
    const newer = await raiseAndPay(ws, owner, 'enterprise');
    assert.notEqual(newer, old);
    for (let i = 0; i < 400 && (await atProvider(old)).subscription_canceled_at === null; i++) await new Promise((r) => setTimeout(r, 25));
    assert.ok((await atProvider(old)).subscription_canceled_at !== null, 'the replaced subscription ended at the provider');
    assert.equal((await atProvider(newer)).subscription_canceled_at, null);
    // Its end changes no plan: the workspace keeps the plan it just paid for.
    await pastPeriodEnd(period);
    const s = await sub(ws, owner);
    assert.equal(s.tier, 'enterprise');
    assert.equal(s.paid_subscription.provider_subscription_id, newer);
    assert.equal((await invoicesOf(old)).length, 0, 'the old one is never charged again');
    assert.equal((await auditOf(ws, owner, 'subscription.plan_ended')).length, 0);
  });

  test('the operator\'s set-plan and the workspace\'s deletion end the subscription at once', async () => {
    const a = await paidWorkspace('Operator');
    await t.services.subscriptions.setPlan(a.ws, 'enterprise');
    const ended = await until(a.ws, a.owner, (s) => s.paid_subscription.state === 'ended', 'ended');
    assert.match(ended.paid_subscription.end_reason, /operator set the plan to enterprise/);
    assert.equal(ended.tier, 'enterprise', 'the operator\'s plan stays');
    assert.ok((await atProvider(a.subscriptionId)).subscription_canceled_at !== null);

    const b = await paidWorkspace('Deleted');
    const del = await t.request('DELETE', `/v1/workspaces/${b.ws}`, { token: b.owner.token, headers: { 'if-match': '*' } });
    assert.equal(del.status, 202, del.text);
    for (let i = 0; i < 400 && (await atProvider(b.subscriptionId)).subscription_canceled_at === null; i++) await new Promise((r) => setTimeout(r, 25));
    assert.ok((await atProvider(b.subscriptionId)).subscription_canceled_at !== null, 'a deleted workspace is not charged');
  });

  test('the provider ending the subscription on its own lowers the plan to free at once, once', async () => {
    const { owner, ws, subscriptionId } = await paidWorkspace('Ended');
    const admin = await t.user('admin');
    await t.addMember(owner, ws, admin, 'admin');
    await t.services.localPayments.cancelSubscription(subscriptionId);
    const s = await sub(ws, owner);
    assert.equal(s.tier, 'free');
    assert.equal(s.paid_subscription.state, 'ended');
    const [change] = await changesOf(ws, owner);
    assert.deepEqual([change!.kind, change!.status, change!.previous_tier, change!.requested_tier], ['cancel', 'applied', 'pro', 'free']);
    assert.match(change!.status_reason, /ended at local/);
    const [audited] = await auditOf(ws, owner, 'subscription.plan_ended');
    assert.deepEqual([audited!.actor.type, audited!.actor.id, audited!.metadata.previous_tier, audited!.metadata.provider_subscription_id], ['system', 'payment_provider', 'pro', subscriptionId]);
    assert.equal((await notesOf(admin, ws, 'subscription_change_applied')).length, 1, 'the owners and admins are told');
    // The same event again changes nothing.
    const body = (await t.services.db.selectFrom('local_payment_events').select('body').where('type', '=', 'customer.subscription.deleted').execute())
      .map((e) => e.body).find((b) => (JSON.parse(b) as Json).data.object.id === subscriptionId)!;
    const { signatureHeader } = await import('../src/drivers/payments/local-events.js');
    const { localPaymentsSigningKey } = await import('../src/drivers/payments/registry.js');
    const replay = JSON.stringify({ ...JSON.parse(body), id: 'evt_replayed0000000000000000' });
    for (const payload of [body, replay]) {
      const res = await t.app.inject({
        method: 'POST', url: '/v1/payment_webhooks/local', payload,
        headers: { 'content-type': 'application/json', 'svc-signature': signatureHeader(localPaymentsSigningKey(t.config), payload, clock.now()) },
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(JSON.parse(res.body).outcome, 'duplicate');
    }
    assert.equal((await changesOf(ws, owner)).length, 2);
    assert.equal((await auditOf(ws, owner, 'subscription.plan_ended')).length, 1);
  });

  test('a provider that keeps refusing is retried, shown on the subscription and reported to the owners', async () => {
    const { owner, ws, subscriptionId } = await paidWorkspace('Refused');
    const real = t.services.payments.get('local')!;
    let refusals = 0;
    const refusing: PaymentProvider = Object.assign(Object.create(real) as PaymentProvider, {
      async cancelSubscription() {
        refusals++;
        throw new PaymentProviderError('the provider is down (503)', true, 503);
      },
    });
    t.services.payments.set('local', refusing);
    try {
      await t.services.subscriptions.setPlan(ws, 'free');
      const failing = await until(ws, owner, (s) => s.paid_subscription.sync_attempts >= 3, 'retried three times');
      assert.deepEqual([failing.paid_subscription.state, failing.paid_subscription.sync], ['ending', 'retrying']);
      assert.match(failing.paid_subscription.last_error, /the provider is down/);
      for (let i = 0; i < 200 && (await notesOf(owner, ws, 'subscription_provider_failing')).length === 0; i++) await new Promise((r) => setTimeout(r, 25));
      const [note] = await notesOf(owner, ws, 'subscription_provider_failing');
      assert.ok(note, 'the owners are told');
      assert.equal(note.severity, 'critical');
      assert.equal((await atProvider(subscriptionId)).subscription_canceled_at, null);
    } finally {
      t.services.payments.set('local', real);
    }
    // Ended by the provider's event or by the job's own record, and the job settled (its error cleared).
    const done = await until(ws, owner, (s) => s.paid_subscription.state === 'ended' && s.paid_subscription.last_error === null, 'ended after the provider came back');
    assert.deepEqual([done.paid_subscription.sync, done.paid_subscription.last_error], ['done', null]);
    assert.ok(refusals >= 3);
    assert.ok((await atProvider(subscriptionId)).subscription_canceled_at !== null);
    assert.equal((await notesOf(owner, ws, 'subscription_provider_failing')).length, 1, 'told once');
  });
});
