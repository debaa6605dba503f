// The local provider's hosted checkout page in a real browser: headless Debian Chromium driven by
// playwright-core against a listening server, with the page's CSP in force. A declined card, Cancel
// (back to cancel_url, the session still open), then 4242 pays and the browser lands on success_url
// while the signed event reaches the (recorded) webhook route. Skips, saying why, where
// /usr/bin/chromium is absent (.ci/run installs it).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { chromiumSkipReason as skipReason, startChromiumApp, type ChromiumApp } from './chromium-app.js';

if (skipReason) console.log(`# skipping checkout.browser.test: ${skipReason}`);

describe('hosted checkout page in headless Chromium', () => {
  let env: ChromiumApp;
  const delivered: string[] = [];

  before(async () => {
    if (skipReason) return;
    env = await startChromiumApp({
      paymentDelivery: () => async (body) => {
        delivered.push(body);
        return 200;
      },
    });
  });

  after(async () => {
    clock.offsetMs = 0;
    await env?.close();
  });

  test('decline, cancel, then pay', { timeout: 90_000, skip: skipReason ?? false }, async () => {
    const { services, browser, base } = env;
    const local = services.localPayments;
    const successUrl = `${base}/checkout/return/local?session_id={CHECKOUT_SESSION_ID}`;
    const cancelUrl = `${base}/order_drafts/odft_browser`;
    const created = await local.createCheckout({
      clientReferenceId: 'odft_browser', metadata: { draft_revision: '1' }, idempotencyKey: 'browser-1', title: 'Team wiki', amount: 2900,
      currency: 'eur', interval: 'month', customerEmail: 'buyer@example.test', expiresAt: clock.now() + 1800, successUrl, cancelUrl,
    });
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });

    await page.goto(created.url);
    await page.getByRole('heading', { name: 'Team wiki' }).waitFor();
    assert.match((await page.locator('.price').textContent()) ?? '', /€29\.00 per month/);
    const fill = async (card: string) => {
      await page.getByLabel('Card number').fill(card);
      await page.getByLabel('Expiry (MM / YY)').fill('12 / 40');
      await page.getByLabel('CVC').fill('123');
    };
    await fill('4000 0000 0000 0002');
    await page.getByRole('button', { name: /^Pay/ }).click();
    await page.getByText('Your card was declined. Try another card.').waitFor();
    assert.equal(await page.getByLabel('Card number').inputValue(), '', 'the card number is not sent back');

    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.waitForURL(cancelUrl);
    assert.equal((await local.getCheckout(created.id)).status, 'open');

    await page.goto(created.url);
    await fill('4242 4242 4242 4242');
    await page.getByRole('button', { name: /^Pay/ }).click();
    await page.waitForURL(successUrl.replace('{CHECKOUT_SESSION_ID}', created.id));
    const state = await local.getCheckout(created.id);
    assert.deepEqual({ status: state.status, paid: state.paid }, { status: 'complete', paid: true });
    assert.equal(delivered.length, 1);
    assert.equal(JSON.parse(delivered[0]!).type, 'checkout.session.completed');

    await page.goto(created.url);
    await page.getByText('This checkout has already been paid.').waitFor();
    assert.deepEqual(violations, []);
    await context.close();
  });
});
