// A double click on "pay" (API.md 8.7, endpoint 13): POST /v1/order_drafts/{id}/checkout_sessions
// called many times at once hands out one session, and that session stays payable. Every caller
// answers that session (or a clear 409 that leaves it alone); it is the draft's one open session,
// the local provider still holds it open, and paying it on the provider's checkout page (as a
// browser without JavaScript does) commits exactly one order. A stale session (a configuration
// changed after it was opened) is expired by the racing calls, and only that one.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Browser, csrfOf } from './browser.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { customer, draftToConfigure, inStatus, makeOffer, makeSeller, waitDraft, type Seller } from './commerce-fixtures.js';

const CALLS = 8;

describe('checkout sessions asked for concurrently', () => {
  let t: TestApp;
  let seller: Seller;

  before(async () => {
    t = await startTestApp();
    seller = await makeSeller(t);
  });
  after(() => t.close());

  /** A new customer's draft in payment (no checkout session yet). */
  async function inPayment(buyer: TestUser) {
    const offer = await makeOffer(t, seller, { max_uses: null });
    const configure = await draftToConfigure(t, buyer, offer.id);
    const paying = await customer(t, buyer)('POST', `/v1/order_drafts/${configure.id}:submitConfiguration`, { etag: configure.etag, body: { field_values: {} } });
    assert.equal(paying.status, 200, paying.text);
    assert.equal(paying.body.status, 'payment');
    return paying.body as { id: string; etag: string };
  }

  /** CALLS requests at once; answers the one session id they handed out (each loser may only be a 409). */
  async function race(buyer: TestUser, draftId: string, etag: string): Promise<string> {
    const as = customer(t, buyer);
    const answers = await Promise.all(Array.from({ length: CALLS }, () => as('POST', `/v1/order_drafts/${draftId}/checkout_sessions`, { etag })));
    const sessions = answers.filter((r) => r.status === 200 || r.status === 201);
    for (const r of answers.filter((x) => x.status !== 200 && x.status !== 201)) {
      assert.equal(r.status, 409, r.text);
      assert.equal(r.body.error.reason, 'ETAG_MISMATCH', r.text);
    }
    assert.ok(sessions.length >= 1, 'one call at least hands out a session');
    assert.equal(sessions.filter((r) => r.status === 201).length, 1, `one session is made: ${answers.map((r) => r.status).join(',')}`);
    const ids = new Set(sessions.map((r) => r.body.id as string));
    assert.equal(ids.size, 1, `every caller gets the same session: ${[...ids].join(', ')}`);
    return [...ids][0]!;
  }

  /** The session is the draft's one open session, open at the provider too; paying it commits one order. */
  async function paysOnce(buyer: TestUser, draftId: string, sessionId: string): Promise<void> {
    const shown = (await customer(t, buyer)('GET', `/v1/order_drafts/${draftId}`)).body;
    assert.equal(shown.current_checkout_session?.id, sessionId, JSON.stringify(shown));
    const open = await t.services.db.selectFrom('checkout_sessions').select('provider_session_id').where('draft_id', '=', draftId).where('status', '=', 'open').execute();
    assert.deepEqual(open.map((r) => r.provider_session_id), [sessionId]);
    assert.equal((await t.services.localPayments.findSession(sessionId))?.status, 'open', 'the provider still holds the session open');
    const browser = new Browser(t);
    const page = await browser.get(`/checkout/${sessionId}`);
    assert.equal(page.status, 200, page.html);
    const paid = await browser.post(`/checkout/${sessionId}`, { card_number: '4242 4242 4242 4242', expiry: '12 / 40', cvc: '123', csrf: csrfOf(page.html), action: 'pay' });
    assert.equal(paid.status, 303, paid.html);
    const done = await waitDraft(t, buyer, draftId, inStatus('done', 'terminated'));
    assert.equal(done.status, 'done', JSON.stringify(done));
    assert.equal(done.order.payment_provider_checkout_id, sessionId);
    const orders = await t.services.db.selectFrom('orders').select('id').where('order_draft_id', '=', draftId).execute();
    assert.equal(orders.length, 1);
    const refunded = await t.services.db.selectFrom('checkout_sessions').select('id').where('draft_id', '=', draftId).where('refunded_at', 'is not', null).execute();
    assert.equal(refunded.length, 0, 'no payment was refunded');
  }

  test('a double click with the same if-match hands out one session that stays payable', async () => {
    const buyer = await t.user('clicker');
    const draft = await inPayment(buyer);
    const sessionId = await race(buyer, draft.id, draft.etag);
    await paysOnce(buyer, draft.id, sessionId);
  });

  test('racing calls after a change of configuration expire the stale session only, and the new one stays payable', async () => {
    const buyer = await t.user('clicker');
    const as = customer(t, buyer);
    const draft = await inPayment(buyer);
    const first = await as('POST', `/v1/order_drafts/${draft.id}/checkout_sessions`, { etag: draft.etag });
    assert.equal(first.status, 201, first.text);
    const current = (await as('GET', `/v1/order_drafts/${draft.id}`)).body;
    const revised = await as('POST', `/v1/order_drafts/${draft.id}:submitConfiguration`, { etag: current.etag, body: { field_values: { replicas: 2 } } });
    assert.equal(revised.status, 200, revised.text);
    const sessionId = await race(buyer, draft.id, revised.body.etag);
    assert.notEqual(sessionId, first.body.id);
    assert.equal((await t.services.localPayments.findSession(first.body.id))?.status, 'expired', 'the stale session can no longer be paid');
    await paysOnce(buyer, draft.id, sessionId);
  });
});
