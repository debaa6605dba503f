// Views of the local payment provider's hosted checkout page (/checkout/{id}). Every value goes
// through `html`, which escapes it. The card number is never put back into a re-rendered form:
// the page does not hold on to it, not even for the customer's convenience.
import { messageBlock, type Message } from './device.views.js';
import { html, type Html } from './layout.js';

export interface CheckoutSummary {
  id: string;
  title: string;
  amount: number;
  currency: string;
  interval: string;
  customerEmail: string | null;
}

/** `€12.50`, `$9.00 per month`, `€120.00 per year`. */
export function formatPrice(amount: number, currency: string, interval: string): string {
  let price: string;
  try {
    price = new Intl.NumberFormat('en', { style: 'currency', currency: currency.toUpperCase() }).format(amount / 100);
  } catch {
    price = `${(amount / 100).toFixed(2)} ${currency.toUpperCase()}`;
  }
  return interval === 'month' ? `${price} per month` : interval === 'year' ? `${price} per year` : price;
}

function summary(s: CheckoutSummary): Html {
  return html`<p class="muted">Pay</p>
<h1>${s.title}</h1>
<p class="price">${formatPrice(s.amount, s.currency, s.interval)}</p>
${s.interval !== 'one_time' ? html`<p class="muted">A subscription: the amount is charged again every ${s.interval} until it is cancelled.</p>` : html``}
${s.customerEmail ? html`<p class="muted">For ${s.customerEmail}</p>` : html``}`;
}

export function payView(p: { basePath: string; csrf: string; session: CheckoutSummary; expiry?: string | undefined; message?: Message | undefined }): Html {
  const action = `${p.basePath}/checkout/${p.session.id}`;
  return html`${summary(p.session)}
${messageBlock(p.message)}
<form method="post" action="${action}" autocomplete="off">
<input type="hidden" name="csrf" value="${p.csrf}">
<label for="card_number">Card number</label>
<input id="card_number" name="card_number" type="text" inputmode="numeric" autocomplete="cc-number" required maxlength="32"
 placeholder="4242 4242 4242 4242" spellcheck="false">
<label for="expiry">Expiry (MM / YY)</label>
<input id="expiry" name="expiry" type="text" inputmode="numeric" autocomplete="cc-exp" required maxlength="9" placeholder="MM / YY" value="${p.expiry ?? ''}">
<label for="cvc">CVC</label>
<input id="cvc" name="cvc" type="text" inputmode="numeric" autocomplete="cc-csc" required maxlength="4" placeholder="123">
<button type="submit" class="primary" name="action" value="pay">Pay ${formatPrice(p.session.amount, p.session.currency, p.session.interval)}</button>
<button type="submit" class="secondary" name="action" value="cancel" formnovalidate>Cancel</button>
</form>
<p class="muted">This is the service's built-in test checkout: no money moves. 4242 4242 4242 4242 pays;
4000 0000 0000 0002 is declined; 4000 0000 0000 9995 is declined for insufficient funds. Any future expiry and any CVC.</p>`;
}

/** A session that can no longer be paid: already paid (with a way on), or expired. */
export function stateView(p: { session: CheckoutSummary; state: 'complete' | 'expired'; continueUrl?: string | undefined }): Html {
  return p.state === 'complete'
    ? html`${summary(p.session)}
${messageBlock({ kind: 'ok', text: 'This checkout has already been paid. Nothing more is charged.' })}
${p.continueUrl ? html`<p><a href="${p.continueUrl}">Continue</a></p>` : html``}`
    : html`${summary(p.session)}
${messageBlock({ kind: 'error', text: 'This checkout has expired and can no longer be paid. Go back to your order to start a new one.' })}`;
}

export function notFoundView(): Html {
  return html`<h1>Checkout not found</h1>
${messageBlock({ kind: 'error', text: 'This checkout link is not valid. Go back to your order to start a new checkout.' })}`;
}
