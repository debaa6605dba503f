// The local payment provider's hosted checkout page (API.md 8.7): GET /checkout/{id} shows what is
// paid for and a card form; POST /checkout/{id} pays with a test card (or cancels). Server-rendered,
// no JavaScript, no external assets, the device page's layout and CSP. Anyone holding the link may
// pay, as on Stripe's page, so there is no sign-in; the form is bound to this browser by a
// double-submit CSRF token (a SameSite=Lax nonce cookie), so another site cannot post it. The card
// number is checked and dropped: only its last 4 digits are kept with a paid session.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import type { LocalPaymentProvider } from '../drivers/payments/local.js';
import type { SessionService } from '../modules/sessions/sessions.service.js';
import { clock } from '../platform/clock.js';
import type { App } from '../platform/http.js';
import { createCookieSessions } from './cookie.session.js';
import { notFoundView, payView, stateView, type CheckoutSummary } from './checkout.views.js';
import type { Message } from './device.views.js';
import { sendPage } from './layout.js';

/** The test cards (Stripe's numbers): one pays, two decline; any other number is refused. */
const TEST_CARDS: Record<string, { paid: true } | { paid: false; text: string }> = {
  '4242424242424242': { paid: true },
  '4000000000000002': { paid: false, text: 'Your card was declined. Try another card.' },
  '4000000000009995': { paid: false, text: 'Your card was declined: insufficient funds. Try another card.' },
};

const FormText = (maxLength: number) => Type.Optional(Type.String({ maxLength }));
const PageParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const PayForm = Type.Object(
  { card_number: FormText(32), expiry: FormText(9), cvc: FormText(4), csrf: FormText(128), action: FormText(16) },
  { additionalProperties: false },
);

const TITLE = 'Checkout';
const FORGED: Message = { kind: 'error', text: 'This form has expired or did not come from this site. Nothing was charged; please try again.' };
const INVALID_FORM: Message = { kind: 'error', text: 'The form could not be read. Nothing was charged; please try again.' };

/** Why the card details cannot be charged, or null when they can be tried. */
function cardProblem(digits: string, expiry: string, cvc: string): string | null {
  if (!/^\d{12,19}$/.test(digits)) return 'Enter the card number (digits and spaces only).';
  const m = /^(\d{1,2})\s*\/\s*(\d{2}|\d{4})$/.exec(expiry.trim());
  const month = m ? Number(m[1]) : 0;
  if (!m || month < 1 || month > 12) return 'Enter the expiry as MM / YY.';
  const year = m[2]!.length === 2 ? 2000 + Number(m[2]) : Number(m[2]);
  // A card is valid through the last day of its expiry month.
  if (Date.UTC(year, month, 1) / 1000 <= clock.now()) return 'This card has expired. Enter a card with a future expiry date.';
  if (!/^\d{3,4}$/.test(cvc.trim())) return 'Enter the 3 or 4 digit CVC.';
  if (!TEST_CARDS[digits]) return 'That is not a test card. This checkout takes only the test cards listed below; no real card is charged.';
  return null;
}

export function checkoutPageRoutes(app: App, deps: { local: LocalPaymentProvider; config: Config; sessions: SessionService }): void {
  const { local } = deps;
  const cookies = createCookieSessions({ config: deps.config, sessions: deps.sessions });
  const { basePath } = cookies;
  const routeConfig = { auth: 'none' as const };
  const csrfPurpose = (id: string) => `checkout:${id}`;

  const summaryOf = (row: { id: string; title: string; amount: number; currency: string; interval: string; customer_email: string | null }): CheckoutSummary => ({
    id: row.id, title: row.title, amount: Number(row.amount), currency: row.currency, interval: row.interval, customerEmail: row.customer_email,
  });
  const successUrl = (url: string, id: string) => url.split('{CHECKOUT_SESSION_ID}').join(id);
  const redirect = (reply: FastifyReply, location: string) => reply.code(303).header('location', location).header('cache-control', 'no-store').send();

  /** The page for a session in any state; `status` and `message` for the pay form. */
  async function showSession(request: FastifyRequest, reply: FastifyReply, id: string, status = 200, extra: { message?: Message; expiry?: string | undefined } = {}) {
    const session = await local.findSession(id);
    if (!session) return sendPage(reply, 404, TITLE, notFoundView());
    if (session.status === 'complete') {
      return sendPage(reply, status === 200 ? 200 : 409, TITLE, stateView({ session: summaryOf(session), state: 'complete', continueUrl: successUrl(session.success_url, id) }));
    }
    if (session.status === 'expired') return sendPage(reply, 410, TITLE, stateView({ session: summaryOf(session), state: 'expired' }));
    const csrf = cookies.nonceCsrfToken(request, reply, csrfPurpose(id));
    return sendPage(reply, status, TITLE, payView({ basePath, csrf, session: summaryOf(session), ...extra }));
  }

  app.get('/checkout/:id', {
    config: routeConfig,
    attachValidation: true,
    schema: { hide: true, params: PageParams },
  }, async (request, reply) => {
    if (request.validationError) return sendPage(reply, 404, TITLE, notFoundView());
    return showSession(request, reply, request.params.id);
  });

  app.post('/checkout/:id', {
    config: routeConfig,
    attachValidation: true,
    schema: { hide: true, params: PageParams, body: PayForm },
  }, async (request, reply) => {
    const id = (request.params as { id?: string }).id ?? '';
    const session = id.length <= 64 ? await local.findSession(id) : undefined;
    if (!session) return sendPage(reply, 404, TITLE, notFoundView());
    if (request.validationError || !request.body) return showSession(request, reply, id, 400, { message: INVALID_FORM });
    const form = request.body;
    // Cancel changes nothing (the session stays open, as on Stripe's page): no token needed to leave.
    if (form.action === 'cancel') return redirect(reply, session.cancel_url);
    if (session.status !== 'open') return showSession(request, reply, id, 409);
    if (!cookies.checkNonceCsrf(request, csrfPurpose(id), form.csrf)) return showSession(request, reply, id, 403, { message: FORGED, expiry: form.expiry });
    const digits = (form.card_number ?? '').replace(/ /g, '');
    const problem = cardProblem(digits, form.expiry ?? '', form.cvc ?? '');
    if (problem) return showSession(request, reply, id, 400, { message: { kind: 'error', text: problem }, expiry: form.expiry });
    const card = TEST_CARDS[digits]!;
    if (!card.paid) {
      await local.recordDecline(id);
      return showSession(request, reply, id, 402, { message: { kind: 'error', text: card.text }, expiry: form.expiry });
    }
    const outcome = await local.pay(id, digits.slice(-4));
    if (outcome === 'paid') return redirect(reply, successUrl(session.success_url, id));
    return showSession(request, reply, id, 409);
  });
}
