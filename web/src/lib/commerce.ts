// How offers, order drafts and orders read on a page (API.md 8.7): prices, phases and endings in
// words, and the offer form's texts turned into the API's body. Kept free of the DOM for unit
// tests (test/web/commerce-lib.test.ts).
import type { Schemas } from './api.ts';

export type Offer = Schemas['Offer'];
export type ResolvedOffer = Schemas['ResolvedOffer'];
export type CustomerDraft = Schemas['OrderDraft'];
export type SellerDraft = Schemas['OrderDraftSellerView'];
export type AnyDraft = CustomerDraft | SellerDraft;
export type Order = Schemas['Order'];
export type Pricing = Offer['pricing'];

const INTERVAL_WORDS: Record<Pricing['interval'], string> = { one_time: 'once', month: 'per month', year: 'per year' };

/** Cents as the currency writes them: 4900 eur -> "€49.00". */
export function formatMoney(cents: number, currency: string): string {
  return new Intl.NumberFormat('en-US', { style: 'currency', currency: currency.toUpperCase() }).format(cents / 100);
}

/** A price with its interval: "€49.00 per month", "Free". */
export function priceWords(p: { unit_amount: number; currency: string; interval: Pricing['interval'] }, free = false): string {
  if (free || p.unit_amount === 0) return 'Free';
  return `${formatMoney(p.unit_amount, p.currency)} ${INTERVAL_WORDS[p.interval]}`;
}

/** A price typed in currency units ("49", "49.5", "49.00") as cents, or null when it is not one. */
export function parseUnits(text: string): number | null {
  const t = text.trim();
  if (!/^\d{1,7}(\.\d{1,2})?$/.test(t)) return null;
  const [whole, frac = ''] = t.split('.');
  return Number(whole) * 100 + Number(frac.padEnd(2, '0'));
}

/** Cents as the price field shows them ("49.00"). */
export function unitsOf(cents: number): string {
  return (cents / 100).toFixed(2);
}

export const OFFER_STATUSES: [Offer['status'] | '', string][] = [
  ['', 'Any status'],
  ['active', 'Active'],
  ['redeemed', 'Redeemed (every use taken)'],
  ['expired', 'Expired'],
  ['archived', 'Archived'],
];

export const PHASE_WORDS: Record<AnyDraft['status'], string> = {
  auth: 'Waiting for the customer to sign in',
  workspace: 'Choosing a workspace',
  compute: 'Preparing the cluster',
  compute_bootstrap: 'Waiting for the server to join',
  configure: 'Configuring',
  payment: 'Waiting for payment',
  install: 'Installing',
  done: 'Delivered',
  cleaning_up: 'Ending: releasing what it held',
  terminated: 'Ended',
};

export const TERMINATION_WORDS: Record<NonNullable<AnyDraft['termination_reason']>, string> = {
  timeout: 'The order was not finished in time, so it expired.',
  revoked: 'The order was cancelled.',
  offer_expired: 'The offer was withdrawn or expired before the order was paid.',
  install_failed: 'The installation failed.',
  cluster_allocation_failed: 'No cluster could be prepared for it.',
  quota_exceeded: 'A quota of the chosen workspace did not allow it.',
};

export const ORDER_STATUS_WORDS: Record<Order['status'], string> = {
  delivery_pending: 'Paid, delivery pending',
  delivery_running: 'Installing',
  delivered: 'Delivered',
  delivery_failed: 'Delivery failed',
};

/** Whether the draft can still be cancelled (before it is paid and not already ending). */
export function cancellable(d: Pick<AnyDraft, 'status' | 'payment_completed'>): boolean {
  return !d.payment_completed && !['done', 'cleaning_up', 'terminated', 'install'].includes(d.status);
}

/** Whether the service moves the draft on by itself now (the page re-reads it every second). */
export function moving(d: Pick<AnyDraft, 'status' | 'payment_completed'>): boolean {
  return ['compute', 'compute_bootstrap', 'install', 'cleaning_up'].includes(d.status) || (d.status === 'payment' && d.payment_completed);
}

export function isCustomerView(d: AnyDraft): d is CustomerDraft {
  return 'locked_keys' in d;
}

/** The texts of the offer form (create and edit). */
export interface OfferTexts {
  title: string;
  price: string;
  currency: Pricing['currency'];
  interval: Pricing['interval'];
  commercial_mode: Offer['commercial_mode'];
  compute_mode: Offer['compute']['mode'];
  allowed_emails: string;
  unlimited: boolean;
  max_uses: string;
  order_ttl_minutes: string;
  customer_name: string;
  notes: string;
  internal_note: string;
}

export const NEW_OFFER: OfferTexts = {
  title: '', price: '0.00', currency: 'eur', interval: 'one_time', commercial_mode: 'paid', compute_mode: 'platform',
  allowed_emails: '', unlimited: false, max_uses: '1', order_ttl_minutes: '120', customer_name: '', notes: '', internal_note: '',
};

export function textsOfOffer(o: Offer): OfferTexts {
  return {
    title: o.title, price: unitsOf(o.pricing.unit_amount), currency: o.pricing.currency, interval: o.pricing.interval,
    commercial_mode: o.commercial_mode, compute_mode: o.compute.mode, allowed_emails: (o.allowed_emails ?? []).join('\n'),
    unlimited: o.max_uses === null, max_uses: String(o.max_uses ?? 1), order_ttl_minutes: String(o.order_ttl_minutes),
    customer_name: o.customer?.display_name ?? '', notes: o.notes ?? '', internal_note: o.internal_note ?? '',
  };
}

export type OfferProblems = Partial<Record<'price' | 'max_uses' | 'order_ttl_minutes' | 'title', string>>;

/** The fields both the create and the edit body carry, from the texts; or what is wrong with them. */
export function offerFields(t: OfferTexts): { ok: true; body: OfferFieldsBody } | { ok: false; problems: OfferProblems } {
  const problems: OfferProblems = {};
  const cents = parseUnits(t.price);
  if (cents === null) problems.price = 'a price such as 49 or 49.90';
  const uses = Number(t.max_uses);
  if (!t.unlimited && !(Number.isInteger(uses) && uses >= 1 && uses <= 10_000)) problems.max_uses = 'a whole number from 1 to 10000';
  const ttl = Number(t.order_ttl_minutes);
  if (!(Number.isInteger(ttl) && ttl >= 1 && ttl <= 1440)) problems.order_ttl_minutes = 'a whole number of minutes from 1 to 1440';
  if (!t.title.trim()) problems.title = 'required';
  if (Object.keys(problems).length) return { ok: false, problems };
  const emails = t.allowed_emails.split(/[\s,;]+/).map((e) => e.trim()).filter(Boolean);
  return {
    ok: true,
    body: {
      title: t.title.trim(),
      pricing: { currency: t.currency, unit_amount: cents!, interval: t.interval },
      commercial_mode: t.commercial_mode,
      compute: { mode: t.compute_mode },
      max_uses: t.unlimited ? null : uses,
      order_ttl_minutes: ttl,
      allowed_emails: emails.length ? emails : null,
      customer: t.customer_name.trim() ? { display_name: t.customer_name.trim() } : null,
      notes: t.notes.trim() || null,
      internal_note: t.internal_note.trim() || null,
    },
  };
}

export interface OfferFieldsBody {
  title: string;
  pricing: Pricing;
  commercial_mode: Offer['commercial_mode'];
  compute: Offer['compute'];
  max_uses: number | null;
  order_ttl_minutes: number;
  allowed_emails: string[] | null;
  customer: { display_name: string } | null;
  notes: string | null;
  internal_note: string | null;
}

/** The create body leaves out what is empty (it takes no nulls but max_uses). */
export function createBodyOf(f: OfferFieldsBody) {
  const { allowed_emails, customer, notes, internal_note, ...rest } = f;
  return {
    ...rest,
    ...(allowed_emails ? { allowed_emails } : {}),
    ...(customer ? { customer } : {}),
    ...(notes ? { notes } : {}),
    ...(internal_note ? { internal_note } : {}),
  };
}

const LINK_KEY = 'svc.offer-link.';

/**
 * Remembers an offer's short hash by its id: a draft names its offer by id only, and the customer
 * reads the offer's input schema through its link (GET /v1/offers:resolve). Kept per browser.
 */
export function rememberOfferLink(offerId: string, hash: string): void {
  try {
    localStorage.setItem(LINK_KEY + offerId, hash);
  } catch {
    // private mode: the configure step then takes the values as JSON
  }
}

export function offerLinkOf(offerId: string): string | null {
  try {
    return localStorage.getItem(LINK_KEY + offerId);
  } catch {
    return null;
  }
}

/** The wizard's phases in the order a customer meets them (bring your own: its server instead of a cluster). */
export function phasesOf(d: Pick<AnyDraft, 'compute_mode' | 'amount'>): [AnyDraft['status'], string][] {
  return [
    ['workspace', 'Workspace'],
    d.compute_mode === 'bring_your_own' ? ['compute_bootstrap', 'Your server'] : ['compute', 'Cluster'],
    ['configure', 'Configuration'],
    ...(d.amount > 0 ? [['payment', 'Payment'] as [AnyDraft['status'], string]] : []),
    ['install', 'Installation'],
    ['done', 'Delivered'],
  ];
}

/**
 * The members of an edit that differ from the offer as the form started (`before`): a PATCH sends
 * only what the person changed, so applying it again after a 409 keeps the changes made meanwhile.
 */
export function changedFields<T extends object>(before: T, after: T): Partial<T> {
  const out: Partial<T> = {};
  for (const k of Object.keys(after) as (keyof T)[]) {
    if (JSON.stringify(before[k]) !== JSON.stringify(after[k])) out[k] = after[k];
  }
  return out;
}
