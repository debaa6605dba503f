// Signed-out POST /v1/order_drafts:begin writes a draft for anyone (issue 33 section 5): it is rate
// limited per client address and per offer, 429 with retry-after past either, in the one error shape.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { BEGIN_WINDOW_SECONDS } from '../src/modules/orders/order-drafts.service.js';
import { startTestApp, type TestApp } from './harness.js';
import { makeOffer, makeSeller, type Seller } from './commerce-fixtures.js';

describe('signed-out :begin is rate limited per address and per offer', () => {
  let t: TestApp;
  let seller: Seller;
  const begin = (shortHash: string, remoteAddress: string) => t.app.inject({
    method: 'POST', url: '/v1/order_drafts:begin', remoteAddress, headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ short_hash: shortHash }),
  });
  const draftsOf = async (offerId: string) =>
    (await t.services.db.selectFrom('order_drafts').select((eb) => eb.fn.countAll<number>().as('n')).where('offer_id', '=', offerId).executeTakeFirstOrThrow()).n;

  before(async () => {
    t = await startTestApp({ SVC_ORDER_BEGINS_PER_ADDRESS: '5', SVC_ORDER_BEGINS_PER_OFFER: '8' });
    seller = await makeSeller(t);
  });
  after(async () => {
    clock.offsetMs = 0;
    await t.close();
  });

  test('one address: past SVC_ORDER_BEGINS_PER_ADDRESS begins, 429 RATE_LIMITED with retry-after and no draft; other addresses go on; the window ends', async () => {
    const a = await makeOffer(t, seller);
    const b = await makeOffer(t, seller);
    for (let i = 0; i < 5; i++) assert.equal((await begin(i % 2 ? a.short_hash : b.short_hash, '198.51.100.7')).statusCode, 201);
    const before = Number(await draftsOf(a.id)) + Number(await draftsOf(b.id));
    for (const hash of [a.short_hash, b.short_hash, 'zzzzzzzz']) {
      const res = await begin(hash, '198.51.100.7');
      assert.equal(res.statusCode, 429, res.body);
      const body = res.json();
      assert.equal(body.error.code, 'RESOURCE_EXHAUSTED');
      assert.equal(body.error.reason, 'RATE_LIMITED');
      assert.match(body.error.message, /too many orders begun signed out/);
      assert.match(body.error.request_id, /./);
      const retryAfter = Number(res.headers['retry-after']);
      assert.ok(retryAfter >= 1 && retryAfter <= BEGIN_WINDOW_SECONDS, `retry-after ${res.headers['retry-after']}`);
    }
    assert.equal(Number(await draftsOf(a.id)) + Number(await draftsOf(b.id)), before, 'a refused begin writes no draft');
    assert.equal((await begin(a.short_hash, '198.51.100.8')).statusCode, 201, 'another address is not limited');
    clock.offsetMs += (BEGIN_WINDOW_SECONDS + 1) * 1000;
    assert.equal((await begin(a.short_hash, '198.51.100.7')).statusCode, 201, 'a new window');
  });

  test('one offer: past SVC_ORDER_BEGINS_PER_OFFER begins from many addresses, 429 for that offer only', async () => {
    const hot = await makeOffer(t, seller);
    const quiet = await makeOffer(t, seller);
    for (let i = 0; i < 8; i++) assert.equal((await begin(hot.short_hash, `203.0.113.${i + 1}`)).statusCode, 201);
    const res = await begin(hot.short_hash, '203.0.113.100');
    assert.equal(res.statusCode, 429, res.body);
    assert.equal(res.json().error.reason, 'RATE_LIMITED');
    assert.ok(Number(res.headers['retry-after']) >= 1);
    assert.equal(Number(await draftsOf(hot.id)), 8);
    assert.equal((await begin(quiet.short_hash, '203.0.113.100')).statusCode, 201, 'another offer is not limited');
  });

  test('concurrent begins from one address never pass the limit', async () => {
    const offer = await makeOffer(t, seller);
    const statuses = await Promise.all(Array.from({ length: 12 }, () => begin(offer.short_hash, '192.0.2.55').then((r) => r.statusCode)));
    assert.equal(statuses.filter((s) => s === 201).length, 5, statuses.join(' '));
    assert.equal(statuses.filter((s) => s === 429).length, 7, statuses.join(' '));
  });
});
