// Unit tests of the commerce pages' logic kept free of the DOM (web/src/lib/commerce.ts): prices in
// words and typed in currency units, the offer form's texts as the API's body, an edit as only
// what changed, the wizard's phases, and which drafts may be cancelled or are moving on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cancellable, changedFields, createBodyOf, moving, NEW_OFFER, offerFields, parseUnits, phasesOf, priceWords } from '../../web/src/lib/commerce.js';
import { resourceHref } from '../../web/src/lib/links.js';

test('prices read with their currency and interval; free and test offers read Free', () => {
  assert.equal(priceWords({ unit_amount: 4900, currency: 'eur', interval: 'month' }), '€49.00 per month');
  assert.equal(priceWords({ unit_amount: 1999, currency: 'usd', interval: 'one_time' }), '$19.99 once');
  assert.equal(priceWords({ unit_amount: 0, currency: 'eur', interval: 'year' }), 'Free');
  assert.equal(priceWords({ unit_amount: 4900, currency: 'eur', interval: 'year' }, true), 'Free');
});

test('a price typed in currency units becomes cents, or null when it is not one', () => {
  assert.equal(parseUnits('49'), 4900);
  assert.equal(parseUnits(' 49.9 '), 4990);
  assert.equal(parseUnits('49.05'), 4905);
  assert.equal(parseUnits('0'), 0);
  for (const bad of ['', '49,90', '-1', '1.234', 'abc', '12345678']) assert.equal(parseUnits(bad), null, bad);
});

test('the offer form: problems at their fields, else the body; empty optional members left out of a create', () => {
  const bad = offerFields({ ...NEW_OFFER, title: ' ', price: 'x', max_uses: '0', order_ttl_minutes: '2000' });
  assert.equal(bad.ok, false);
  assert.deepEqual(Object.keys(bad.ok ? {} : bad.problems).sort(), ['max_uses', 'order_ttl_minutes', 'price', 'title']);
  const good = offerFields({ ...NEW_OFFER, title: 'Hello', price: '15', interval: 'month', unlimited: true, allowed_emails: 'a@x.example\n b@x.example, ', customer_name: 'Globex' });
  assert.ok(good.ok);
  assert.deepEqual(good.body.pricing, { currency: 'eur', unit_amount: 1500, interval: 'month' });
  assert.equal(good.body.max_uses, null);
  assert.deepEqual(good.body.allowed_emails, ['a@x.example', 'b@x.example']);
  const create = createBodyOf({ ...good.body, allowed_emails: null, notes: null });
  assert.equal('allowed_emails' in create, false);
  assert.equal('notes' in create, false);
  assert.deepEqual(create.customer, { display_name: 'Globex' });
});

test('an edit sends only the members that changed', () => {
  const before = { title: 'A', notes: null as string | null, pricing: { currency: 'eur', unit_amount: 100, interval: 'month' } };
  assert.deepEqual(changedFields(before, { ...before, title: 'B' }), { title: 'B' });
  assert.deepEqual(changedFields(before, { ...before, pricing: { ...before.pricing, unit_amount: 200 } }), { pricing: { currency: 'eur', unit_amount: 200, interval: 'month' } });
  assert.deepEqual(changedFields(before, { ...before }), {});
});

test('the wizard: its phases by compute mode and price; cancellable before payment; moving while the service works', () => {
  assert.deepEqual(phasesOf({ compute_mode: 'platform', amount: 0 }).map(([s]) => s), ['workspace', 'compute', 'configure', 'install', 'done']);
  assert.deepEqual(phasesOf({ compute_mode: 'bring_your_own', amount: 100 }).map(([s]) => s), ['workspace', 'compute_bootstrap', 'configure', 'payment', 'install', 'done']);
  assert.equal(cancellable({ status: 'payment', payment_completed: false }), true);
  assert.equal(cancellable({ status: 'payment', payment_completed: true }), false);
  assert.equal(cancellable({ status: 'terminated', payment_completed: false }), false);
  assert.equal(moving({ status: 'compute', payment_completed: false }), true);
  assert.equal(moving({ status: 'configure', payment_completed: false }), false);
  assert.equal(moving({ status: 'payment', payment_completed: true }), true);
});

test('offers, orders and drafts named by audit events and notifications open their pages', () => {
  assert.equal(resourceHref('offer', 'ofr_1'), '/offers/ofr_1');
  assert.equal(resourceHref('order', 'ord_1'), '/orders/ord_1');
  assert.equal(resourceHref('order_draft', 'odft_1'), '/order_drafts/odft_1');
});
