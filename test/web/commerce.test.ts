// Journey: selling a package (issue 25, API.md 8.7). The seller makes a test offer in the form
// (a locked greeting, the price in currency units) and copies its link; an edit over a change made
// meanwhile is refused (409), shows the current offer and applies again. A second person opens the
// link signed out at 360 px in dark mode, makes an account there and stays on the offer, orders
// with the keyboard, names a new workspace, waits for the cluster, sees the locked value fixed,
// configures the rest and reaches the delivered URL. The seller sees the draft (without the
// values, with Revoke) and the order; a customer cancels another order before paying; a paid
// order goes through the local provider's checkout page (a declined card, Cancel back to the
// order, then paid and delivered); a bring-your-own order shows the join command once and moves on
// when the server joins.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { api, checkA11y, copiedText, noOverflow, open, recordClipboard, shot, skipReason, startWeb, tabTo, watchCsp, type Web, type WebUser } from './harness.js';

const SCHEMA = {
  type: 'object',
  properties: {
    greeting: { type: 'string', title: 'Greeting', maxLength: 50, default: 'hello' },
    replicas: { type: 'integer', title: 'Replicas', minimum: 1, maximum: 10, default: 1 },
  },
  additionalProperties: false,
};
const MANIFEST = { routes: [{ route_key: 'web' }] };

/** A browser context of nobody signed in: 360 px wide, dark, as a customer on a phone. */
async function phone(web: Web): Promise<Page> {
  const context = await web.browser.newContext({ baseURL: web.base, viewport: { width: 360, height: 780 }, colorScheme: 'dark' });
  context.on('page', watchCsp);
  const page = await context.newPage();
  page.on('pageerror', (err) => console.error(`# page error (customer): ${err.message}`));
  return page;
}

describe('web journey: offers, the offer link and the order wizard', { skip: skipReason }, () => {
  let web: Web;
  let ada: WebUser;
  let seller: Page;
  let customer: Page;
  let ws: string;
  let offerId: string;
  let link: string;
  let draftPath: string;
  let paidHash: string;

  before(async () => {
    web = await startWeb();
    ada = await web.user('Ada');
    seller = await web.signIn(ada);
    await recordClipboard(seller, web.base);
    const created = await api(seller, 'POST', '/v1/workspaces', { name: 'Acme' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ws = created.body.id;
    const pkg = await api(seller, 'POST', '/v1/packages', { name: 'hello' }, ws);
    assert.equal(pkg.status, 201, JSON.stringify(pkg.body));
    const v = await api(seller, 'POST', `/v1/packages/${pkg.body.id}/versions`, { semver: '1.0.0', input_schema: SCHEMA, manifest: MANIFEST }, ws);
    assert.equal(v.status, 201, JSON.stringify(v.body));
    await seller.reload();
    await seller.getByRole('combobox', { name: 'Workspace' }).waitFor();
  });
  after(() => web?.close());

  test('the seller makes a test offer with a locked value in the form and copies its link', async () => {
    await open(seller, '/offers', 'Offers');
    await seller.getByText('No offers yet.').waitFor();
    await seller.getByRole('link', { name: 'New offer' }).click();
    await seller.getByRole('heading', { level: 1, name: 'New offer' }).waitFor();
    await seller.getByLabel('Title').fill('Hello, hosted');
    await seller.getByLabel('Price').fill('49,90');
    await seller.getByLabel('Payment').selectOption('non_billable_test');
    await seller.getByLabel('Greeting', { exact: true }).fill('Hi from ACME');
    await seller.getByLabel('Lock Greeting').check();
    await seller.getByLabel('For (customer name)').fill('Globex');
    await seller.getByRole('button', { name: 'Make offer' }).click();
    // A price the browser cannot read is refused at its field before anything is sent.
    await seller.getByText('a price such as 49 or 49.90').waitFor();
    await seller.getByLabel('Price').fill('49.90');
    await checkA11y(seller, 'new offer');
    await seller.getByRole('button', { name: 'Make offer' }).click();
    await seller.getByRole('heading', { level: 1, name: 'Hello, hosted' }).waitFor();
    offerId = new URL(seller.url()).pathname.split('/').pop()!;
    assert.match(offerId, /^ofr_/);
    link = await seller.getByLabel('Customer link').inputValue();
    assert.match(link, new RegExp(`^${web.base}/i/[0-9A-Za-z]{8}$`));
    await seller.getByRole('button', { name: 'Copy', exact: true }).click();
    await seller.getByRole('button', { name: 'Copied' }).waitFor();
    assert.equal(await copiedText(seller), link);
    const details = seller.getByRole('region', { name: 'Details' });
    await details.getByText('Test: nothing is charged').waitFor();
    await details.getByText('0 of 1').waitFor();
    await details.getByText('Hi from ACME').waitFor();
    await checkA11y(seller, 'offer');
    await shot(seller, 'offer');
  });

  test('an edit over a change made meanwhile is refused (409), shows the current offer and applies again', async () => {
    const edit = seller.getByRole('region', { name: 'Edit' });
    await edit.getByText('Change the offer').click();
    await edit.getByLabel('Title').fill('Hello, hosted for Globex');
    const current = await api(seller, 'GET', `/v1/offers/${offerId}`, undefined, ws);
    const elsewhere = await api(seller, 'PATCH', `/v1/offers/${offerId}`, { notes: 'Set up within a minute.' }, ws, { 'if-match': current.body.etag });
    assert.equal(elsewhere.status, 200, JSON.stringify(elsewhere.body));
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await seller.getByRole('alert').filter({ hasText: 'The offer changed since this page loaded it.' }).waitFor();
    await seller.getByRole('region', { name: 'Details' }).getByText('Set up within a minute.').waitFor();
    await seller.getByRole('button', { name: 'Apply my change again' }).click();
    await seller.getByRole('heading', { level: 1, name: 'Hello, hosted for Globex' }).waitFor();
    const after = await api(seller, 'GET', `/v1/offers/${offerId}`, undefined, ws);
    // Only what the person changed was sent again: the notes set meanwhile stay.
    assert.equal(after.body.title, 'Hello, hosted for Globex');
    assert.equal(after.body.notes, 'Set up within a minute.');
  });

  test('a signed-out visitor opens the link at 360 px, makes an account there and stays on the offer', async () => {
    customer = await phone(web);
    await customer.goto(new URL(link).pathname);
    await customer.getByRole('heading', { level: 1, name: 'Hello, hosted for Globex' }).waitFor();
    await customer.getByText('Acme', { exact: true }).first().waitFor();
    await customer.getByText('A test order: nothing is charged.').waitFor();
    assert.equal(await noOverflow(customer), 0, 'the offer fits 360 px');
    await checkA11y(customer, 'offer link, signed out');
    await shot(customer, 'wizard-1-offer');
    await customer.getByLabel('Your name').fill('Grace');
    await customer.getByLabel('Email').fill('grace@globex.example');
    await customer.getByLabel('Password').fill('grace has a long password');
    await customer.getByRole('button', { name: 'Create account and continue' }).click();
    await customer.getByRole('button', { name: 'Sign out' }).waitFor();
    await customer.getByRole('heading', { level: 1, name: 'Hello, hosted for Globex' }).waitFor();
    assert.equal(new URL(customer.url()).pathname, new URL(link).pathname);
  });

  test('the customer orders with the keyboard, names a new workspace and sees the locked value fixed', async () => {
    await tabTo(customer, 'Order');
    await customer.keyboard.press('Enter');
    await customer.getByRole('heading', { level: 1, name: 'Your order' }).waitFor();
    draftPath = new URL(customer.url()).pathname;
    assert.match(draftPath, /^\/order_drafts\/odft_/);
    await customer.getByRole('region', { name: 'Where should it run?' }).waitFor();
    await checkA11y(customer, 'wizard: workspace');
    await shot(customer, 'wizard-2-workspace');
    await customer.getByLabel('Name of the new workspace').fill('Globex');
    await customer.keyboard.press('Enter');
    // The cluster is prepared by the service; the page follows the draft on its own.
    const config = customer.getByRole('region', { name: 'Configuration' });
    await config.waitFor({ timeout: 60_000 });
    await config.getByText('Hi from ACME').waitFor();
    await config.getByText('fixed').waitFor();
    // The locked key is not a field of the form: only replicas can be changed.
    assert.equal(await config.getByLabel('Greeting').count(), 0);
    assert.equal(await customer.getByLabel('Replicas').inputValue(), '1');
    assert.equal(await noOverflow(customer), 0, 'the configure step fits 360 px');
    await checkA11y(customer, 'wizard: configure');
    await shot(customer, 'wizard-3-configure');
    await customer.getByLabel('Replicas').fill('2');
    await config.getByRole('button', { name: 'Continue' }).click();
    const delivered = customer.getByRole('region', { name: 'Delivered' });
    await delivered.waitFor({ timeout: 60_000 });
    const url = delivered.getByRole('list', { name: 'URLs' }).getByRole('link').first();
    assert.match((await url.getAttribute('href')) ?? '', /^https?:\/\//);
    await delivered.getByRole('link', { name: 'Open the installation' }).waitFor();
    await checkA11y(customer, 'wizard: done');
    await shot(customer, 'wizard-4-done');
    const draft = await api(customer, 'GET', `/v1${draftPath}`);
    assert.deepEqual(draft.body.field_values, { greeting: 'Hi from ACME', replicas: 2 });
  });

  test('the seller sees the draft without the values, and the order with its delivery', async () => {
    await open(seller, `/offers/${offerId}`, 'Hello, hosted for Globex');
    await seller.getByRole('region', { name: 'Order drafts' }).getByRole('link', { name: 'grace@globex.example' }).click();
    await seller.getByRole('heading', { level: 1, name: 'Order draft' }).waitFor();
    await seller.getByRole('region', { name: 'Details' }).getByText('Delivered').waitFor();
    assert.equal(await seller.getByText('Hi from ACME').count(), 0, 'the customer\'s values are not shown to the seller');
    await checkA11y(seller, 'order draft, seller view');
    await seller.getByRole('region', { name: 'Details' }).getByRole('link', { name: /^ord_/ }).click();
    await seller.getByRole('heading', { level: 1, name: /^Order ord_/ }).waitFor();
    await seller.getByRole('region', { name: 'Details' }).getByText('Delivered').first().waitFor();
    await seller.getByRole('list', { name: 'Delivered URLs' }).getByRole('link').first().waitFor();
    await checkA11y(seller, 'order');
    await open(seller, '/orders', 'Orders');
    await seller.getByRole('table').getByText('Delivered').waitFor();
    await checkA11y(seller, 'orders');
  });

  test('a customer cancels an order before paying; the seller revokes another', async () => {
    const offer = await api(seller, 'POST', '/v1/offers', {
      package_id: (await api(seller, 'GET', `/v1/offers/${offerId}`, undefined, ws)).body.package_id,
      title: 'Hello, paid', pricing: { currency: 'eur', unit_amount: 1500, interval: 'month' }, max_uses: null,
    }, ws);
    assert.equal(offer.status, 201, JSON.stringify(offer.body));
    await customer.goto(`/i/${offer.body.short_hash}`);
    await customer.getByText('€15.00 per month').waitFor();
    await customer.getByRole('button', { name: 'Order' }).click();
    await customer.getByRole('region', { name: 'Where should it run?' }).waitFor();
    await customer.getByLabel('Install in').selectOption({ label: 'Globex' });
    await customer.getByRole('button', { name: 'Continue' }).click();
    await customer.getByRole('region', { name: 'Configuration' }).waitFor({ timeout: 60_000 });
    await customer.getByRole('button', { name: 'Continue' }).click();
    await customer.getByRole('button', { name: 'Pay €15.00 per month' }).waitFor();
    await checkA11y(customer, 'wizard: payment');
    await shot(customer, 'wizard-5-payment');
    await customer.getByRole('button', { name: 'Cancel order' }).click();
    await customer.getByRole('dialog').getByRole('button', { name: 'Cancel order' }).click();
    await customer.getByText('The order was cancelled.').waitFor();
    await customer.getByText('Ended', { exact: true }).first().waitFor({ timeout: 60_000 });
    await checkA11y(customer, 'wizard: cancelled');

    // The same offer ordered again; its seller revokes the draft from its page.
    await customer.goto(`/i/${offer.body.short_hash}`);
    await customer.getByRole('button', { name: 'Order' }).click();
    await customer.getByRole('region', { name: 'Where should it run?' }).waitFor();
    const drafts = await api(customer, 'GET', `/v1/order_drafts?offer=${offer.body.id}&status=workspace`);
    await open(seller, `/order_drafts/${drafts.body.data[0].id}`, 'Order draft');
    await seller.getByRole('button', { name: 'Revoke' }).click();
    await seller.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await seller.getByText('The order was cancelled.').waitFor();
    await customer.reload();
    await customer.getByText('The order was cancelled.').waitFor();
    paidHash = offer.body.short_hash;
  });

  test('the paid journey: a declined card, Cancel back to the order, then paid on the hosted checkout page', async () => {
    await customer.goto(`/i/${paidHash}`);
    await customer.getByRole('button', { name: 'Order' }).click();
    await customer.getByRole('region', { name: 'Where should it run?' }).waitFor();
    await customer.getByLabel('Install in').selectOption({ label: 'Globex' });
    await customer.getByRole('button', { name: 'Continue' }).click();
    await customer.getByRole('region', { name: 'Configuration' }).waitFor({ timeout: 60_000 });
    await customer.getByLabel('Replicas').fill('3');
    await customer.getByRole('button', { name: 'Continue' }).click();
    const draftUrl = customer.url();
    const pay = customer.getByRole('button', { name: 'Pay €15.00 per month' });
    const card = async (number: string) => {
      await customer.getByLabel('Card number').fill(number);
      await customer.getByLabel('Expiry (MM / YY)').fill('12 / 40');
      await customer.getByLabel('CVC').fill('123');
      await customer.getByRole('button', { name: /^Pay/ }).click();
    };

    // Declined, then Cancel: back on the order, still to be paid.
    await pay.click();
    await customer.waitForURL(/\/checkout\/chk_/);
    await card('4000 0000 0000 0002');
    await customer.getByText('Your card was declined. Try another card.').waitFor();
    await customer.getByRole('button', { name: 'Cancel' }).click();
    await customer.waitForURL(draftUrl);
    await pay.waitFor();

    // Paid: the provider's page sends the person back, the page confirms, then installs and delivers.
    await pay.click();
    await customer.waitForURL(/\/checkout\/chk_/);
    await card('4242 4242 4242 4242');
    await customer.waitForURL(/\/order_drafts\/odft_[^?]+\?checkout=returned$/);
    const delivered = customer.getByRole('region', { name: 'Delivered' });
    await delivered.waitFor({ timeout: 60_000 });
    await delivered.getByRole('list', { name: 'URLs' }).getByRole('link').first().waitFor();
    await checkA11y(customer, 'wizard: paid and delivered');

    // The seller's order: paid through the local provider, monthly, with its next renewal.
    await open(seller, '/orders', 'Orders');
    const row = seller.getByRole('row').filter({ hasText: '€15.00 per month' }).first();
    await row.getByRole('link').click();
    const details = seller.getByRole('region', { name: 'Details' });
    await details.getByText('local', { exact: true }).waitFor();
    await details.getByText('Next renewal').waitFor();
    assert.equal(await details.getByText('None', { exact: true }).count(), 0, 'a monthly order shows its next renewal');
    await checkA11y(seller, 'paid order');
    await shot(seller, 'order');
  });

  test('bring your own server: the join command is shown once with Copy, and the page moves on when the server joins', async () => {
    const pkgId = (await api(seller, 'GET', `/v1/offers/${offerId}`, undefined, ws)).body.package_id;
    const offer = await api(seller, 'POST', '/v1/offers', {
      package_id: pkgId, title: 'Hello on your server', pricing: { currency: 'usd', unit_amount: 0, interval: 'one_time' }, compute: { mode: 'bring_your_own' },
    }, ws);
    assert.equal(offer.status, 201, JSON.stringify(offer.body));
    await recordClipboard(customer, web.base);
    await customer.goto(`/i/${offer.body.short_hash}`);
    await customer.getByText('You join a server of your own to run it').waitFor();
    await customer.getByRole('button', { name: 'Order' }).click();
    await customer.getByLabel('Install in').selectOption({ label: 'Globex' });
    await customer.getByRole('button', { name: 'Continue' }).click();
    const join = customer.getByRole('region', { name: 'Join your server' });
    await join.waitFor({ timeout: 60_000 });
    await join.getByRole('button', { name: 'Create join command' }).click();
    const command = await join.getByLabel('Command').inputValue();
    assert.match(command, /machine join --server .* --token svcb_\S+$/);
    await join.getByText('shown only this once').waitFor();
    await join.getByRole('button', { name: 'Copy', exact: true }).click();
    assert.equal(await copiedText(customer), command);
    await join.getByText('Waiting for your server to join…').waitFor();
    assert.equal(await noOverflow(customer), 0, 'the join step fits 360 px');
    await checkA11y(customer, 'wizard: join your server');
    await shot(customer, 'wizard-join');
    // The server runs the command: its agent trades the token for its machine, as `svc machine join` does.
    const token = /--token (svcb_\S+)/.exec(command)![1]!;
    const facts = { hostname: 'globex-1', os: 'linux', arch: 'x64', cpu_count: 2, memory_bytes: 4 * 1024 ** 3, kernel: '6.1.0', agent_version: '0.1.0' };
    const joined = await fetch(`${web.base}/v1/machine_joins`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token, facts }) });
    assert.equal(joined.status, 201, await joined.text());
    await customer.getByRole('region', { name: 'Configuration' }).waitFor({ timeout: 60_000 });
  });
});
