// Plans paid through Stripe (issue 34, SVC_BILLING=payments with SVC_PAYMENT_PROVIDER=stripe) against
// the local stand-in of Stripe's API (test/stripe-standin.ts), the service listening on a real port:
// the CLI's derived `svc subscriptions change-tier` makes a Checkout Session in subscription mode at the
// plan's price (metadata purpose=plan) and prints its URL; the stand-in "pays" it; its signed webhook
// raises the plan once (forged, old and repeated deliveries change nothing); the return page re-reads
// the session and opens the plan page. Then the paid plan's Stripe subscription follows the plan: a
// cancel sets cancel_at_period_end (reactivate clears it), a downgrade to a lower paid plan changes
// the item's price without proration, a newer paid raise cancels the old subscription at once; a
// renewal's invoice.paid moves the paid period on, invoice.payment_failed tells the owners, and
// Stripe's customer.subscription.deleted lowers the plan to free at once.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createOutput } from '../src/cli/output.js';
import { runCli } from '../src/cli/program.js';
import { clock } from '../src/platform/clock.js';
import { startTestApp, type TestApp } from './harness.js';
import { startStripeStandin, STRIPE_STANDIN_KEY, STRIPE_STANDIN_WHSEC, type StripeStandin } from './stripe-standin.js';

type Json = Record<string, any>;

describe('plans paid through Stripe (stand-in)', () => {
  let t: TestApp;
  let stripe: StripeStandin;
  let base: string;
  let configHome: string;

  before(async () => {
    stripe = await startStripeStandin();
    t = await startTestApp({
      SVC_BILLING: 'payments', SVC_PAYMENT_PROVIDER: 'stripe', SVC_STRIPE_API_URL: stripe.apiUrl,
      SVC_STRIPE_SECRET_KEY: STRIPE_STANDIN_KEY, SVC_STRIPE_WEBHOOK_SECRET: STRIPE_STANDIN_WHSEC,
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    configHome = mkdtempSync(join(tmpdir(), 'svc-plan-cli-'));
  });
  after(async () => {
    await t?.close();
    await stripe?.close();
    rmSync(configHome, { recursive: true, force: true });
  });

  async function webhook(event: Json, opts: { t?: number; secret?: string } = {}) {
    const payload = stripe.payload(event);
    const res = await fetch(`${base}/v1/payment_webhooks/stripe`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': stripe.signature(payload, opts) }, body: payload,
    });
    return { status: res.status, body: (await res.json()) as Json };
  }

  /** Runs the CLI in this process against the listening service, as `token` in workspace `ws`. */
  async function svc(args: string[], token: string, ws: string) {
    let stdout = '';
    let stderr = '';
    const o = createOutput({ NO_COLOR: '1' }, { out: { write: (s: string) => (stdout += s), isTTY: false }, err: { write: (s: string) => (stderr += s), isTTY: false } });
    const saved = { SVC_API_URL: process.env.SVC_API_URL, SVC_TOKEN: process.env.SVC_TOKEN, SVC_CONTEXT: process.env.SVC_CONTEXT, XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME };
    Object.assign(process.env, { SVC_API_URL: base, SVC_TOKEN: token, SVC_CONTEXT: ws, XDG_CONFIG_HOME: configHome });
    try {
      const code = await runCli(args, o);
      return { code, stdout, stderr };
    } finally {
      for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
    }
  }

  test('the CLI prints the checkout URL; the signed webhook raises the plan once; forged and old ones change nothing', async () => {
    const owner = await t.user('owner');
    const ws = (await t.workspace(owner, 'Striped')).id;
    const calls = stripe.calls.length;
    const run = await svc(['subscriptions', 'change-tier', ws, '--tier', 'pro'], owner.token, ws);
    assert.equal(run.code, 0, run.stderr);
    const create = stripe.calls.slice(calls).find((c) => c.method === 'POST' && c.path === '/v1/checkout/sessions')!;
    assert.ok(create, 'a Checkout Session was created at Stripe');
    assert.equal(create.params.mode, 'subscription');
    assert.equal(create.params.line_items[0].price_data.unit_amount, '2900');
    assert.equal(create.params.line_items[0].price_data.currency, 'usd');
    assert.equal(create.params.line_items[0].price_data.recurring.interval, 'month');
    assert.equal(create.params.metadata.purpose, 'plan');
    assert.equal(create.params.metadata.tier, 'pro');
    assert.equal(create.params.client_reference_id, ws);
    const [session] = [...stripe.sessions.values()].filter((s) => s.metadata.workspace_id === ws);
    assert.ok(session);
    assert.ok(run.stdout.includes(session.url), `the checkout URL on stdout: ${run.stdout}`);
    assert.match(run.stderr, /pay at /);
    const checkout = (await t.request('GET', `/v1/workspaces/${ws}/subscription/checkouts`, { token: owner.token })).body.data[0] as Json;
    assert.deepEqual([checkout.provider, checkout.provider_session_id, checkout.state, checkout.checkout_url], ['stripe', session.id, 'open', session.url]);

    const completed = stripe.pay(session.id);
    const forged = await webhook(completed, { secret: 'whsec_not_the_endpoint_secret' });
    assert.equal(forged.status, 400);
    assert.equal(forged.body.error.reason, 'WEBHOOK_SIGNATURE_INVALID');
    assert.equal((await webhook(completed, { t: clock.now() - 600 })).status, 400, 'an event signed 10 minutes ago');
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}/subscription`, { token: owner.token })).body.tier, 'free', 'nothing refused changed the plan');

    const first = await webhook(completed);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.outcome, 'applied');
    assert.equal((await webhook(completed)).body.outcome, 'duplicate');
    const back = await fetch(`${base}/checkout/return/stripe?session_id=${session.id}`, { redirect: 'manual' });
    assert.equal(back.status, 303);
    assert.equal(back.headers.get('location'), `/settings/plan?checkout=${checkout.id}`);
    const s = (await t.request('GET', `/v1/workspaces/${ws}/subscription`, { token: owner.token })).body as Json;
    assert.equal(s.tier, 'pro');
    const changes = (await t.request('GET', `/v1/workspaces/${ws}/subscription/change_requests`, { token: owner.token })).body.data as Json[];
    assert.equal(changes.length, 1);
    const paid = (await t.request('GET', `/v1/workspaces/${ws}/subscription/checkouts/${checkout.id}`, { token: owner.token })).body as Json;
    assert.deepEqual([paid.state, paid.change_request_id], ['paid', changes[0]!.id]);
    assert.equal(stripe.refunds.length, 0);
  });

  test('the return page first, then the webhook: the plan moves once', async () => {
    const owner = await t.user('owner');
    const ws = (await t.workspace(owner, 'Returned')).id;
    const etag = (await t.request('GET', `/v1/workspaces/${ws}/subscription`, { token: owner.token })).body.etag;
    const res = await t.request('POST', `/v1/workspaces/${ws}/subscription:changeTier`, { token: owner.token, headers: { 'if-match': etag }, body: { tier: 'enterprise' } });
    assert.equal(res.status, 201, res.text);
    const sessionId = res.body.provider_session_id as string;
    // Before paying, the return page changes nothing (it re-reads the session: still open).
    assert.equal((await fetch(`${base}/checkout/return/stripe?session_id=${sessionId}`, { redirect: 'manual' })).status, 303);
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}/subscription`, { token: owner.token })).body.tier, 'free');
    const completed = stripe.pay(sessionId);
    assert.equal((await fetch(`${base}/checkout/return/stripe?session_id=${sessionId}`, { redirect: 'manual' })).status, 303);
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}/subscription`, { token: owner.token })).body.tier, 'enterprise');
    const late = await webhook(completed);
    assert.equal(late.status, 200);
    assert.equal(late.body.outcome, 'duplicate');
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}/subscription/change_requests`, { token: owner.token })).body.data.length, 1);
  });
  const sub = async (ws: string, token: string) => (await t.request('GET', `/v1/workspaces/${ws}/subscription`, { token })).body as Json;
  async function until(ws: string, token: string, ok: (s: Json) => boolean, what: string): Promise<Json> {
    let last: Json = {};
    for (let i = 0; i < 400; i++) {
      last = await sub(ws, token);
      if (ok(last)) return last;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`never ${what}: ${JSON.stringify(last.paid_subscription)}`);
  }
  const synced = (ws: string, token: string) => until(ws, token, (s) => s.paid_subscription?.sync === 'done', 'synced');
  const post = async (ws: string, token: string, action: string, body?: Json) =>
    t.request('POST', `/v1/workspaces/${ws}/subscription:${action}`, { token, headers: { 'if-match': (await sub(ws, token)).etag }, ...(body ? { body } : {}) });
  /** Raises and pays at the stand-in, the webhook taking it in; answers the Stripe subscription. */
  async function raiseAndPay(ws: string, token: string, tier: string): Promise<Json> {
    const res = await post(ws, token, 'changeTier', { tier });
    assert.equal(res.status, 201, res.text);
    const completed = stripe.pay(res.body.provider_session_id);
    assert.equal((await webhook(completed)).body.outcome, 'applied');
    const s = await sub(ws, token);
    assert.equal(s.tier, tier);
    return stripe.subscriptions.get(s.paid_subscription.provider_subscription_id)!;
  }

  test('the Stripe subscription follows the plan: cancel at the period end, reactivate, a downgrade\'s price, replaced by a newer raise', async () => {
    const owner = await t.user('owner');
    const ws = (await t.workspace(owner, 'Following')).id;
    const first = await raiseAndPay(ws, owner.token, 'pro');
    const paid = (await sub(ws, owner.token)).paid_subscription as Json;
    assert.equal(paid.current_period_end, first.items.data[0].current_period_end, 'the period paid for at Stripe');

    assert.equal((await post(ws, owner.token, 'cancel')).status, 202);
    await synced(ws, owner.token);
    assert.equal(first.cancel_at_period_end, true, 'Stripe will not charge again');
    assert.equal((await post(ws, owner.token, 'reactivate')).status, 202);
    await synced(ws, owner.token);
    assert.equal(first.cancel_at_period_end, false);

    // Raised again: the new subscription replaces the old one, which Stripe cancels at once.
    const second = await raiseAndPay(ws, owner.token, 'enterprise');
    assert.notEqual(second.id, first.id);
    for (let i = 0; i < 400 && first.status !== 'canceled'; i++) await new Promise((r) => setTimeout(r, 25));
    assert.equal(first.status, 'canceled');
    const deleted = stripe.events.filter((e) => e.type === 'customer.subscription.deleted' && e.data.object.id === first.id).at(-1)!;
    // Recorded as ended by the job that canceled it, or by this event, whichever came first.
    assert.equal((await webhook(deleted)).status, 200);
    const s = await until(ws, owner.token, (x) => x.paid_subscription.provider_subscription_id === second.id, 'the new one shown');
    assert.equal(s.tier, 'enterprise', 'the end of a replaced subscription changes no plan');
    assert.equal(s.paid_subscription.provider_subscription_id, second.id);
    assert.equal(second.status, 'active');

    // A downgrade to a lower paid plan: the next period charges its price, without proration.
    assert.equal((await post(ws, owner.token, 'changeTier', { tier: 'pro' })).status, 202);
    await synced(ws, owner.token);
    const item = second.items.data[0];
    assert.deepEqual([item.price.unit_amount, item.price.currency, second._proration_behavior, second.cancel_at_period_end], [2900, 'usd', 'none', false]);
    const update = stripe.calls.filter((c) => c.method === 'POST' && c.path === `/v1/subscriptions/${second.id}`).at(-1)!;
    assert.equal(update.params.items[0].price_data.product, item.price.product, 'the same product, a new price');
    assert.equal((await sub(ws, owner.token)).tier, 'enterprise', 'paid until the period end');
  });

  test('Stripe\'s renewals move the paid period on; a failed one tells the owners; its end lowers the plan to free at once', async () => {
    const owner = await t.user('owner');
    const ws = (await t.workspace(owner, 'Renewed')).id;
    const stripeSub = await raiseAndPay(ws, owner.token, 'pro');
    const before = (await sub(ws, owner.token)).paid_subscription as Json;
    const renewal = stripe.renew(stripeSub.id);
    const taken = await webhook(renewal);
    assert.equal(taken.body.outcome, 'applied', 'a renewal, not a late payment');
    assert.equal((await webhook(renewal)).body.outcome, 'duplicate');
    const after = (await sub(ws, owner.token)).paid_subscription as Json;
    assert.deepEqual([after.renewals, after.current_period_start, after.current_period_end], [1, before.current_period_end, stripeSub.items.data[0].current_period_end]);

    const failed = await webhook(stripe.failRenewal(stripeSub.id, { attempt: 1 }));
    assert.equal(failed.body.outcome, 'applied');
    const notes = ((await t.request('GET', '/v1/notifications', { token: owner.token })).body.data as Json[]).filter((n) => n.workspace_id === ws && n.type === 'subscription_payment_failed');
    assert.equal(notes.length, 1);
    assert.match(notes[0]!.body, /tries again/);
    assert.equal((await sub(ws, owner.token)).tier, 'pro', 'a failed payment alone changes no plan');

    // Stripe gives up and deletes the subscription: the plan goes to free at once.
    await webhook(stripe.failRenewal(stripeSub.id, { attempt: 4, final: true }));
    Object.assign(stripeSub, { status: 'canceled', canceled_at: clock.now() });
    const gone = await webhook({ ...stripe.events[0], id: `evt_gone${Date.now()}`, type: 'customer.subscription.deleted', data: { object: structuredClone(stripeSub) } });
    assert.equal(gone.body.outcome, 'applied');
    const s = await sub(ws, owner.token);
    assert.deepEqual([s.tier, s.paid_subscription.state], ['free', 'ended']);
    const [change] = (await t.request('GET', `/v1/workspaces/${ws}/subscription/change_requests`, { token: owner.token })).body.data as Json[];
    assert.deepEqual([change!.kind, change!.status, change!.requested_tier], ['cancel', 'applied', 'free']);
    const audit = ((await t.request('GET', '/v1/audit_events?limit=100', { token: owner.token, headers: { 'svc-context': ws } })).body.data as Json[]).map((e) => e.action);
    assert.ok(audit.includes('subscription.plan_renewed') && audit.includes('subscription.plan_ended'), audit.join());
  });
});
