// Plans paid through Stripe (issue 34, SVC_BILLING=payments with SVC_PAYMENT_PROVIDER=stripe) against
// the local stand-in of Stripe's API (test/stripe-standin.ts), the service listening on a real port:
// the CLI's derived `svc subscriptions change-tier` makes a Checkout Session in subscription mode at the
// plan's price (metadata purpose=plan) and prints its URL; the stand-in "pays" it; its signed webhook
// raises the plan once (forged, old and repeated deliveries change nothing); the return page re-reads
// the session and opens the plan page.
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
});
