// A local stand-in for Stripe's API (https://docs.stripe.com/api), the parts the stripe payment
// provider uses: POST /v1/checkout/sessions, GET /v1/checkout/sessions/{id} (expand[]=subscription),
// POST /v1/checkout/sessions/{id}/expire, POST /v1/refunds, GET /v1/invoice_payments?invoice=,
// GET, POST (cancel_at_period_end, an item's price_data, proration_behavior) and DELETE /v1/subscriptions/{id}. Bodies are form-encoded with bracketed keys as the stripe
// package sends them (`line_items[0][price_data][currency]=eur`), answers and errors are Stripe's
// JSON shapes (`{error: {type, code, message, param}}`), the Bearer key is checked, and an
// Idempotency-Key replays its first answer (and refuses other parameters under it). It also plays
// the customer (`pay`) and Stripe's billing (`renew`), and sends webhooks to a target URL signed
// exactly as Stripe signs them (`Stripe-Signature: t=…,v1=…`, HMAC-SHA256 of `${t}.${payload}`
// with the whsec secret), with helpers for forged signatures and old timestamps. Time is the
// service's clock, so tests that move it move Stripe's too.
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { clock } from '../src/platform/clock.js';

export const STRIPE_STANDIN_KEY = 'sk_test_StandinKey0123456789abcdefghijklmnop';
export const STRIPE_STANDIN_WHSEC = 'whsec_c3RhbmRpbnNlY3JldGZvcnRoZXdlYmhvb2tz';

type Json = Record<string, any>;
export interface StripeCall { method: string; path: string; idempotencyKey: string | undefined; params: Json }

export interface StripeStandin {
  /** SVC_STRIPE_API_URL */
  apiUrl: string;
  key: string;
  calls: StripeCall[];
  sessions: Map<string, Json>;
  subscriptions: Map<string, Json>;
  refunds: Json[];
  /** every event Stripe would have sent, in order */
  events: Json[];
  faults: { serverErrors: number; rateLimited: number };
  /** the customer pays a session: complete, paid (a subscription starts); answers the checkout.session.completed event */
  pay(sessionId: string): Json;
  /**
   * Stripe bills the next period of a subscription at its item's price; answers the invoice.paid
   * event (or, when it is set to cancel at the period end, ends it: customer.subscription.deleted)
   */
  renew(subscriptionId: string): Json;
  /** A renewal's charge fails; answers invoice.payment_failed (next_payment_attempt null when Stripe gives up) */
  failRenewal(subscriptionId: string, opts?: { attempt?: number; final?: boolean }): Json;
  /** the JSON payload of an event as Stripe sends it */
  payload(event: Json): string;
  /** Stripe's signature header for a payload (time `t`, default now; `secret` default the whsec) */
  signature(payload: string, opts?: { t?: number; secret?: string }): string;
  /** POSTs an event to `url` signed as Stripe signs it (or with `signature` given); answers the HTTP status */
  send(url: string, event: Json, opts?: { t?: number; secret?: string; signature?: string | null }): Promise<number>;
  close(): Promise<void>;
}

const rand = (n = 14) => randomBytes(n).toString('base64url').replace(/[-_]/g, 'x').slice(0, n + 10);

/** Bracketed form keys into nested objects and arrays (`a[b][0][c]=v`, `expand[]=x`). */
export function parseStripeForm(text: string): Json {
  const out: Json = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const path = key.replace(/\]/g, '').split('[');
    let node: any = out;
    path.forEach((part, i) => {
      const last = i === path.length - 1;
      const nextIsIndex = !last && /^\d*$/.test(path[i + 1]!);
      const slot = part === '' && Array.isArray(node) ? node.length : part;
      if (last) node[slot] = value;
      else node = node[slot] ??= nextIsIndex ? [] : {};
    });
  }
  return out;
}

class StripeFailure extends Error {
  constructor(readonly status: number, readonly body: Json) {
    super(body.error?.message ?? 'error');
  }
}
const invalid = (message: string, code?: string, param?: string) => new StripeFailure(400, { error: { type: 'invalid_request_error', message, ...(code ? { code } : {}), ...(param ? { param } : {}) } });
const missing = (kind: string, id: string) => new StripeFailure(404, { error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such ${kind}: '${id}'`, param: 'id' } });

export async function startStripeStandin(): Promise<StripeStandin> {
  const idempotency = new Map<string, { fingerprint: string; status: number; body: string }>();
  const invoices = new Map<string, Json>();
  const invoicePayments: Json[] = [];
  const intents = new Map<string, Json>();

  function event(type: string, object: Json): Json {
    const e = { id: `evt_${rand()}`, object: 'event', api_version: '2026-10-28.endive', created: clock.now(), livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, type, data: { object: structuredClone(object) } };
    s.events.push(e);
    return e;
  }

  function invoiceFor(sub: Json, reason: string, start: number, end: number, amount: number): Json {
    const intent = { id: `pi_${rand()}`, object: 'payment_intent', amount, currency: sub.currency, status: 'succeeded', refunded: false };
    intents.set(intent.id, intent);
    const invoice = {
      id: `in_${rand()}`, object: 'invoice', billing_reason: reason, status: 'paid', amount_paid: amount, currency: sub.currency, customer: sub.customer,
      parent: { type: 'subscription_details', subscription_details: { subscription: sub.id, metadata: sub.metadata } },
      lines: { object: 'list', data: [{ id: `il_${rand()}`, object: 'line_item', amount, period: { start, end } }], has_more: false },
      period_start: start, period_end: start,
    };
    invoices.set(invoice.id, invoice);
    invoicePayments.push({ id: `inpay_${rand()}`, object: 'invoice_payment', invoice: invoice.id, amount_paid: amount, amount_requested: amount, currency: sub.currency, is_default: true, livemode: false, created: clock.now(), status: 'paid', payment: { type: 'payment_intent', payment_intent: intent.id }, status_transitions: { paid_at: clock.now(), canceled_at: null } });
    sub.latest_invoice = invoice.id;
    return invoice;
  }

  function createSession(p: Json): Json {
    const item = p.line_items?.[0];
    const price = item?.price_data;
    if (!['payment', 'subscription'].includes(p.mode)) throw invalid('Invalid mode', 'parameter_invalid_empty', 'mode');
    if (!price?.currency || !/^\d+$/.test(price.unit_amount ?? '') || !price.product_data?.name || item.quantity !== '1') throw invalid('Missing line item price data', 'parameter_missing', 'line_items');
    if ((p.mode === 'subscription') !== Boolean(price.recurring?.interval)) throw invalid('You must provide a recurring price in subscription mode (and only then).', undefined, 'line_items[0][price_data][recurring]');
    if (!p.success_url) throw invalid('Missing required param: success_url.', 'parameter_missing', 'success_url');
    const now = clock.now();
    const expiresAt = p.expires_at ? Number(p.expires_at) : now + 24 * 3600;
    if (expiresAt < now + 1800 - 5 || expiresAt > now + 24 * 3600) throw invalid('The `expires_at` timestamp must be between 30 minutes and 24 hours from Checkout Session creation.', undefined, 'expires_at');
    const id = `cs_test_${rand(40)}`;
    const session = {
      id, object: 'checkout.session', mode: p.mode, status: 'open', payment_status: 'unpaid', livemode: false, created: now, expires_at: expiresAt,
      amount_total: Number(price.unit_amount), amount_subtotal: Number(price.unit_amount), currency: price.currency,
      client_reference_id: p.client_reference_id ?? null, customer_email: p.customer_email ?? null, metadata: p.metadata ?? {},
      success_url: p.success_url, cancel_url: p.cancel_url ?? null, url: `${s.apiUrl}/c/pay/${id}`,
      payment_intent: null, subscription: null, invoice: null, customer: null,
      // Kept for pay(); not part of Stripe's object.
      _interval: price.recurring?.interval ?? null, _subscriptionMetadata: p.subscription_data?.metadata ?? {},
    };
    s.sessions.set(id, session);
    return session;
  }

  const sessionJson = (session: Json, expand: string[]): Json => {
    const { _interval, _subscriptionMetadata, ...rest } = session;
    if (expand.includes('subscription') && rest.subscription) rest.subscription = s.subscriptions.get(rest.subscription);
    return rest;
  };

  function session(id: string): Json {
    const found = s.sessions.get(id);
    if (!found) throw missing('checkout.session', id);
    return found;
  }

  function subscription(id: string): Json {
    const found = s.subscriptions.get(id);
    if (!found) throw missing('subscription', id);
    return found;
  }

  function route(method: string, path: string, p: Json): Json {
    let m: RegExpExecArray | null;
    if (method === 'POST' && path === '/v1/checkout/sessions') return sessionJson(createSession(p), []);
    if (method === 'GET' && (m = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(path))) return sessionJson(session(m[1]!), [p.expand ?? []].flat());
    if (method === 'POST' && (m = /^\/v1\/checkout\/sessions\/([^/]+)\/expire$/.exec(path))) {
      const found = session(m[1]!);
      if (found.status !== 'open') throw invalid(`Only Checkout Sessions with a status in ["open"] can be expired. This Checkout Session has a status of "${found.status}".`);
      Object.assign(found, { status: 'expired', url: null });
      event('checkout.session.expired', sessionJson(found, []));
      return sessionJson(found, []);
    }
    if (method === 'POST' && path === '/v1/refunds') {
      const intent = intents.get(p.payment_intent);
      if (!intent) throw missing('payment_intent', String(p.payment_intent));
      if (intent.refunded) throw invalid(`Charge for payment intent ${intent.id} has already been refunded.`, 'charge_already_refunded');
      intent.refunded = true;
      const refund = { id: `re_${rand()}`, object: 'refund', amount: intent.amount, currency: intent.currency, payment_intent: intent.id, status: 'succeeded', created: clock.now() };
      s.refunds.push(refund);
      return refund;
    }
    if (method === 'GET' && path === '/v1/invoice_payments') {
      const data = invoicePayments.filter((x) => !p.invoice || x.invoice === p.invoice);
      return { object: 'list', data, has_more: false, url: '/v1/invoice_payments' };
    }
    if (method === 'GET' && (m = /^\/v1\/subscriptions\/([^/]+)$/.exec(path))) return subscription(m[1]!);
    if (method === 'POST' && (m = /^\/v1\/subscriptions\/([^/]+)$/.exec(path))) {
      const sub = subscription(m[1]!);
      if (sub.status === 'canceled') throw invalid('A canceled subscription can only update its cancellation_details and metadata.');
      if (p.cancel_at_period_end !== undefined) sub.cancel_at_period_end = p.cancel_at_period_end === 'true';
      const change = p.items?.[0];
      if (change) {
        const item = sub.items.data.find((i: Json) => i.id === change.id);
        if (!item) throw invalid(`Invalid subscription_item id: ${change.id}`, 'resource_missing', 'items[0][id]');
        const pd = change.price_data;
        if (!pd?.currency || !/^\d+$/.test(pd.unit_amount ?? '') || !pd.product || !pd.recurring?.interval) throw invalid('Missing price_data', 'parameter_missing', 'items[0][price_data]');
        item.price = { id: `price_${rand()}`, object: 'price', product: pd.product, unit_amount: Number(pd.unit_amount), currency: pd.currency, recurring: { interval: pd.recurring.interval } };
        item._amount = Number(pd.unit_amount);
        sub._proration_behavior = p.proration_behavior ?? 'create_prorations';
      }
      return sub;
    }
    if (method === 'DELETE' && (m = /^\/v1\/subscriptions\/([^/]+)$/.exec(path))) {
      const sub = subscription(m[1]!);
      if (sub.status === 'canceled') throw invalid(`A canceled subscription can only update its cancellation_details and metadata.`);
      Object.assign(sub, { status: 'canceled', canceled_at: clock.now(), ended_at: clock.now() });
      event('customer.subscription.deleted', sub);
      return sub;
    }
    throw new StripeFailure(404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path}).` } });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://x');
    const method = req.method ?? 'GET';
    const text = method === 'GET' || method === 'DELETE' ? url.search.slice(1) : Buffer.concat(chunks).toString('utf8');
    const params = parseStripeForm(text);
    const idempotencyKey = req.headers['idempotency-key'] as string | undefined;
    s.calls.push({ method, path: url.pathname, idempotencyKey, params });
    const send = (status: number, body: string, replayed = false) => {
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${rand()}`, ...(replayed ? { 'idempotent-replayed': 'true' } : {}) });
      res.end(body);
    };
    const auth = req.headers.authorization ?? '';
    if (auth !== `Bearer ${s.key}`) {
      // Real Stripe masks all but the last 4 characters; the whole key is echoed here so a test can show the adapter scrubs it.
      return send(401, JSON.stringify({ error: { type: 'invalid_request_error', message: `Invalid API Key provided: ${auth.replace(/^Bearer /, '')}` } }));
    }
    if (s.faults.serverErrors > 0) {
      s.faults.serverErrors--;
      return send(500, JSON.stringify({ error: { type: 'api_error', message: 'An unknown error occurred' } }));
    }
    if (s.faults.rateLimited > 0) {
      s.faults.rateLimited--;
      return send(429, JSON.stringify({ error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests hit the API too quickly.' } }));
    }
    const fingerprint = `${method} ${url.pathname} ${text}`;
    const previous = idempotencyKey && method === 'POST' ? idempotency.get(idempotencyKey) : undefined;
    if (previous) {
      if (previous.fingerprint !== fingerprint) {
        return send(400, JSON.stringify({ error: { type: 'idempotency_error', message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.' } }));
      }
      return send(previous.status, previous.body, true);
    }
    let status = 200;
    let body: string;
    try {
      body = JSON.stringify(route(method, url.pathname, params));
    } catch (err) {
      if (!(err instanceof StripeFailure)) throw err;
      status = err.status;
      body = JSON.stringify(err.body);
    }
    if (idempotencyKey && method === 'POST') idempotency.set(idempotencyKey, { fingerprint, status, body });
    send(status, body);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { type: 'api_error', message: String(err) } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const s: StripeStandin = {
    apiUrl: `http://127.0.0.1:${port}`,
    key: STRIPE_STANDIN_KEY,
    calls: [],
    sessions: new Map(),
    subscriptions: new Map(),
    refunds: [],
    events: [],
    faults: { serverErrors: 0, rateLimited: 0 },
    pay(sessionId) {
      const found = session(sessionId);
      if (found.status !== 'open') throw new Error(`session ${sessionId} is ${found.status}`);
      const now = clock.now();
      const customer = `cus_${rand()}`;
      Object.assign(found, { status: 'complete', payment_status: 'paid', customer, url: null });
      if (found.mode === 'payment') {
        const intent = { id: `pi_${rand()}`, object: 'payment_intent', amount: found.amount_total, currency: found.currency, status: 'succeeded', refunded: false };
        intents.set(intent.id, intent);
        found.payment_intent = intent.id;
      } else {
        const end = now + (found._interval === 'year' ? 365 : 30) * 24 * 3600;
        const sub: Json = {
          id: `sub_${rand()}`, object: 'subscription', status: 'active', customer, currency: found.currency, metadata: found._subscriptionMetadata,
          items: { object: 'list', data: [{
            id: `si_${rand()}`, object: 'subscription_item', current_period_start: now, current_period_end: end, _amount: found.amount_total, _interval: found._interval,
            price: { id: `price_${rand()}`, object: 'price', product: `prod_${rand()}`, unit_amount: found.amount_total, currency: found.currency, recurring: { interval: found._interval } },
          }] },
          latest_invoice: null, canceled_at: null, cancel_at_period_end: false, created: now,
        };
        s.subscriptions.set(sub.id, sub);
        found.subscription = sub.id;
        found.invoice = invoiceFor(sub, 'subscription_create', now, end, found.amount_total).id;
      }
      return event('checkout.session.completed', sessionJson(found, []));
    },
    renew(subscriptionId) {
      const sub = subscription(subscriptionId);
      if (sub.cancel_at_period_end) {
        Object.assign(sub, { status: 'canceled', canceled_at: clock.now(), ended_at: clock.now() });
        return event('customer.subscription.deleted', sub);
      }
      const item = sub.items.data[0];
      const start = item.current_period_end as number;
      const end = start + (item._interval === 'year' ? 365 : 30) * 24 * 3600;
      Object.assign(item, { current_period_start: start, current_period_end: end });
      return event('invoice.paid', invoiceFor(sub, 'subscription_cycle', start, end, item._amount));
    },
    failRenewal(subscriptionId, opts = {}) {
      const sub = subscription(subscriptionId);
      const item = sub.items.data[0];
      const invoice = {
        id: `in_${rand()}`, object: 'invoice', billing_reason: 'subscription_cycle', status: 'open', amount_paid: 0, amount_due: item._amount, currency: sub.currency,
        customer: sub.customer, attempt_count: opts.attempt ?? 1, next_payment_attempt: opts.final ? null : clock.now() + 3 * 24 * 3600,
        parent: { type: 'subscription_details', subscription_details: { subscription: sub.id, metadata: sub.metadata } },
        lines: { object: 'list', data: [{ id: `il_${rand()}`, object: 'line_item', amount: item._amount, period: { start: item.current_period_end, end: item.current_period_end } }], has_more: false },
      };
      sub.status = 'past_due';
      return event('invoice.payment_failed', invoice);
    },
    payload: (e) => JSON.stringify(e, null, 2),
    signature(payload, opts = {}) {
      const t = opts.t ?? clock.now();
      return `t=${t},v1=${createHmac('sha256', opts.secret ?? STRIPE_STANDIN_WHSEC).update(`${t}.${payload}`, 'utf8').digest('hex')}`;
    },
    async send(url, e, opts = {}) {
      const payload = s.payload(e);
      const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' };
      const signature = opts.signature === undefined ? s.signature(payload, opts) : opts.signature;
      if (signature !== null) headers['stripe-signature'] = signature;
      const res = await fetch(url, { method: 'POST', headers, body: payload });
      await res.arrayBuffer();
      return res.status;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return s;
}
