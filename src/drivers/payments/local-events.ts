// The local payment provider's events: shaped like Stripe's (`{id: evt_…, object: 'event', type,
// created, data: {object}}`), signed the way Stripe signs its webhooks (HMAC-SHA256 over
// `${t}.${body}`, header `svc-signature: t=<unix>,v1=<hex>`), kept in local_payment_events until
// the service's webhook route took them with a 2xx, and retried with backoff otherwise. Signing at
// each attempt (not once) keeps a retried event inside the receiver's timestamp tolerance, as
// Stripe does.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Db } from '../../db/database.js';
import type { LocalCheckoutsTable } from '../../db/schema.js';
import { clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { WebhookSignatureError, type CheckoutState, type PaymentEvent } from './driver.js';

export const LOCAL_SIGNATURE_HEADER = 'svc-signature';
/** A delivery older (or newer) than this is refused: a captured delivery cannot be replayed later. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;
/** Events delivered per sweep: the rest waits for the next one. */
const DELIVERY_BATCH = 50;
/** An attempt in flight holds its event this long, so another instance's sweep does not send it at the same time. */
const ATTEMPT_LEASE_SECONDS = 60;
/** The largest body verifyWebhook parses (the route bounds it too). */
const MAX_BODY_BYTES = 64 * 1024;

export type LocalEventType = 'checkout.session.completed' | 'checkout.session.expired' | 'invoice.paid' | 'customer.subscription.deleted';
/** Hands a signed event to the service's webhook route; answers the HTTP status it got. */
export type DeliverEvent = (rawBody: string, headers: Record<string, string>) => Promise<number>;

/** The wait before attempt n+1 (n >= 1): 10 s, 20 s, 40 s ... up to an hour. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(3600, 10 * 2 ** Math.max(0, attempts - 1));
}

/** A session as a Stripe-shaped `checkout.session` object, plus the period end Stripe keeps on the subscription. */
export function sessionObject(row: LocalCheckoutsTable, status: string): Record<string, unknown> {
  return {
    id: row.id,
    object: 'checkout.session',
    mode: row.interval === 'one_time' ? 'payment' : 'subscription',
    client_reference_id: row.client_reference_id,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    status,
    payment_status: status === 'complete' ? 'paid' : 'unpaid',
    amount_total: Number(row.amount),
    currency: row.currency,
    payment_intent: row.interval === 'one_time' ? row.payment_ref : null,
    subscription: row.subscription_id,
    current_period_end: row.current_period_end === null ? null : Number(row.current_period_end),
    expires_at: Number(row.expires_at),
    created: Number(row.created_at),
  };
}

/** Writes an event to the outbox (in the caller's transaction: the event exists exactly when its change does); answers its id. */
export async function recordEvent(db: Db, type: LocalEventType, object: Record<string, unknown>): Promise<string> {
  const id = newId('paymentEvent');
  const now = clock.now();
  const body = JSON.stringify({ id, object: 'event', type, created: now, livemode: false, data: { object } });
  await db.insertInto('local_payment_events').values({ id, type, body, created_at: now, delivered_at: null, attempts: 0, next_attempt_at: now }).execute();
  return id;
}

export function signatureHeader(key: Buffer, body: string, t: number): string {
  return `t=${t},v1=${createHmac('sha256', key).update(`${t}.${body}`).digest('hex')}`;
}

/**
 * Sends the given events that are due (or all due ones), each claimed first by one conditional
 * statement so two instances never send the same attempt; a 2xx marks it delivered, anything else
 * (or no answer) schedules the next attempt. Answers how many were delivered.
 */
export async function deliverEvents(deps: { db: Db; signingKey: Buffer; deliver: DeliverEvent }, ids?: string[]): Promise<number> {
  const { db } = deps;
  const now = clock.now();
  let query = db.selectFrom('local_payment_events').select(['id', 'body', 'attempts', 'next_attempt_at'])
    .where('delivered_at', 'is', null).where('next_attempt_at', '<=', now);
  query = ids ? query.where('id', 'in', ids.length ? ids : ['']) : query.orderBy('next_attempt_at').limit(DELIVERY_BATCH);
  let delivered = 0;
  for (const event of await query.execute()) {
    const claimed = await db.updateTable('local_payment_events')
      .set({ attempts: event.attempts + 1, next_attempt_at: now + ATTEMPT_LEASE_SECONDS })
      .where('id', '=', event.id).where('delivered_at', 'is', null).where('next_attempt_at', '=', event.next_attempt_at)
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) continue;
    let status = 0;
    try {
      const t = clock.now();
      status = await deps.deliver(event.body, { 'content-type': 'application/json', [LOCAL_SIGNATURE_HEADER]: signatureHeader(deps.signingKey, event.body, t) });
    } catch {
      status = 0; // no answer: retried like a refusal
    }
    if (status >= 200 && status < 300) {
      await db.updateTable('local_payment_events').set({ delivered_at: clock.now() }).where('id', '=', event.id).execute();
      delivered++;
    } else {
      await db.updateTable('local_payment_events').set({ next_attempt_at: clock.now() + retryDelaySeconds(event.attempts + 1) })
        .where('id', '=', event.id).where('delivered_at', 'is', null).execute();
    }
  }
  return delivered;
}

/** Checks `svc-signature` on the raw body (constant-time), within the tolerance; answers the parsed event. */
function verifiedEvent(key: Buffer, rawBody: Buffer, header: string | undefined): Record<string, any> {
  if (!header) throw new WebhookSignatureError(`missing ${LOCAL_SIGNATURE_HEADER} header`);
  if (rawBody.length > MAX_BODY_BYTES) throw new WebhookSignatureError('body too large');
  let t: number | null = null;
  const signatures: string[] = [];
  for (const part of header.slice(0, 2048).split(',')) {
    const [name, value] = part.trim().split('=', 2);
    if (name === 't' && value && /^\d{1,12}$/.test(value)) t = Number(value);
    if (name === 'v1' && value && /^[0-9a-f]{64}$/.test(value)) signatures.push(value);
  }
  if (t === null || signatures.length === 0) throw new WebhookSignatureError(`${LOCAL_SIGNATURE_HEADER} header is malformed`);
  if (Math.abs(clock.now() - t) > SIGNATURE_TOLERANCE_SECONDS) throw new WebhookSignatureError('timestamp outside the tolerance');
  const expected = createHmac('sha256', key).update(`${t}.`).update(rawBody).digest();
  if (!signatures.some((s) => timingSafeEqual(Buffer.from(s, 'hex'), expected))) throw new WebhookSignatureError('no signature matches');
  let event: unknown;
  try {
    event = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw new WebhookSignatureError('body is not JSON');
  }
  const e = event as Record<string, any>;
  if (typeof e !== 'object' || e === null || e.object !== 'event' || typeof e.id !== 'string' || typeof e.type !== 'string'
    || typeof e.created !== 'number' || typeof e.data?.object !== 'object' || e.data.object === null) {
    throw new WebhookSignatureError('body is not an event');
  }
  return e;
}

function checkoutStateOf(o: Record<string, any>): CheckoutState {
  const status = o.status === 'complete' || o.status === 'expired' ? o.status : 'open';
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  return {
    id: String(o.id),
    clientReferenceId: str(o.client_reference_id),
    metadata: typeof o.metadata === 'object' && o.metadata !== null ? (o.metadata as Record<string, string>) : {},
    status,
    paid: status === 'complete' && o.payment_status === 'paid',
    amount: Number(o.amount_total ?? 0),
    currency: String(o.currency ?? ''),
    paymentRef: str(o.payment_intent),
    subscriptionId: str(o.subscription),
    currentPeriodEnd: typeof o.current_period_end === 'number' ? o.current_period_end : null,
    expiresAt: Number(o.expires_at ?? 0),
  };
}

/** The local provider's verifyWebhook: a signed event as a PaymentEvent. */
export function verifyLocalWebhook(key: Buffer, rawBody: Buffer, headers: Record<string, string | undefined>): PaymentEvent {
  const e = verifiedEvent(key, rawBody, headers[LOCAL_SIGNATURE_HEADER]);
  const o = e.data.object as Record<string, any>;
  const base = { id: e.id as string, created: e.created as number };
  switch (e.type) {
    case 'checkout.session.completed':
      return { ...base, type: 'checkout.completed', checkout: checkoutStateOf(o) };
    case 'checkout.session.expired':
      return { ...base, type: 'checkout.expired', checkout: checkoutStateOf(o) };
    case 'invoice.paid': {
      const end = o.lines?.data?.[0]?.period?.end;
      if (o.billing_reason === 'subscription_cycle' && typeof o.subscription === 'string' && typeof end === 'number') {
        return { ...base, type: 'subscription.renewed', subscriptionId: o.subscription, currentPeriodEnd: end };
      }
      return { ...base, type: 'ignored', providerType: e.type };
    }
    case 'customer.subscription.deleted':
      return { ...base, type: 'subscription.ended', subscriptionId: String(o.id) };
    default:
      return { ...base, type: 'ignored', providerType: String(e.type).slice(0, 100) };
  }
}
