// Journey: a forgotten password reset through the local mail outbox (read with `svc admin mail
// list`, as an operator on a laptop would), the e-mail notifications choice on the account page, and
// an instance admin's Users page: disabling an account signs its browser out, enabling lets it back,
// a reset link is made to hand over, and the outbox lists what was e-mailed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { checkA11y, open, shot, skipReason, startWeb, watchCsp, type Web, type WebUser } from './harness.js';

describe('web journey: password reset, e-mail choice, the Users page', { skip: skipReason }, () => {
  let web: Web;
  let root: WebUser;
  let ada: WebUser;
  let rootPage: Page;

  before(async () => {
    web = await startWeb({ SVC_ADMIN_EMAILS: 'root@example.com' });
    root = await web.user('Root');
    ada = await web.user('Ada');
    rootPage = await web.signIn(root);
  });
  after(() => web?.close());

  test('a forgotten password: the link arrives in the outbox, sets a new password once, and the new one signs in', async () => {
    const context = await web.browser.newContext({ baseURL: web.base });
    const page = await context.newPage();
    watchCsp(page);
    await page.goto('/');
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByRole('heading', { level: 1, name: 'Reset your password' }).waitFor();
    await page.getByLabel('Email').fill(ada.email);
    await page.getByRole('button', { name: 'Send me a link' }).click();
    await page.getByRole('status').filter({ hasText: `If an account has the address ${ada.email}` }).waitFor();
    await checkA11y(page, 'reset asked');
    await shot(page, 'reset-asked');

    let link: string | undefined;
    for (let i = 0; i < 100 && !link; i++) {
      const out = await web.admin(['mail', 'list', '--to', ada.email, '--limit', '1']);
      link = /http:\/\/\S+\/reset-password#[A-Za-z0-9]{32}/.exec(out)?.[0];
      if (!link) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(link, 'the outbox holds the link');
    await page.goto(link);
    await page.getByRole('heading', { level: 1, name: 'Choose a new password' }).waitFor();
    await page.getByText(`For ${ada.email}.`).waitFor();
    await page.getByLabel(/^New password(?! again)/).fill('ada chose this one');
    await page.getByLabel('New password again').fill('ada chose this one');
    await checkA11y(page, 'choose a new password');
    await shot(page, 'reset-choose');
    await page.getByRole('button', { name: 'Set the new password' }).click();
    await page.getByRole('heading', { name: 'Your password is set' }).waitFor();
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.getByLabel('Email').fill(ada.email);
    await page.getByLabel('Password').fill('ada chose this one');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    // Used once.
    await page.goto(link);
    await page.getByRole('heading', { level: 1, name: 'This reset link does not work' }).waitFor();
    await context.close();
    ada.password = 'ada chose this one';
  });

  test('the account page: which notifications are e-mailed', async () => {
    const page = await web.signIn(ada);
    await open(page, '/account', 'Your account');
    await page.getByRole('radio', { name: /^None/ }).waitFor();
    assert.equal(await page.getByRole('radio', { name: /^None/ }).isChecked(), true);
    await page.getByRole('radio', { name: 'All of them' }).check();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await page.reload();
    await page.getByRole('radio', { name: 'All of them' }).waitFor();
    assert.equal(await page.getByRole('radio', { name: 'All of them' }).isChecked(), true);
    // Only instance admins see the Users page.
    assert.equal(await page.getByRole('link', { name: 'Users' }).count(), 0);
    await checkA11y(page, 'account with e-mail choice');
    await shot(page, 'account-email');
  });

  test('the Users page: disable signs the account out at once, enable lets it back, a reset link to hand over, the outbox', async () => {
    const adaPage = await web.signIn(ada);
    await rootPage.getByRole('link', { name: 'Users' }).click();
    await rootPage.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
    const row = rootPage.getByRole('row').filter({ hasText: ada.email });
    await row.filter({ hasText: 'Active' }).waitFor();
    await rootPage.getByRole('row').filter({ hasText: root.email }).filter({ hasText: 'Instance admin (SVC_ADMIN_EMAILS)' }).waitFor();
    await checkA11y(rootPage, 'users');
    await shot(rootPage, 'users');

    await row.getByRole('button', { name: `Disable ${ada.email}` }).click();
    await rootPage.getByRole('dialog').getByRole('button', { name: 'Disable' }).click();
    await rootPage.getByRole('status').filter({ hasText: `${ada.email} is disabled and signed out everywhere.` }).waitFor();
    await row.filter({ hasText: 'Disabled since' }).waitFor();
    // Ada's browser is signed out at its next request.
    await adaPage.reload();
    await adaPage.getByRole('button', { name: 'Sign in' }).waitFor();
    await adaPage.getByLabel('Email').fill(ada.email);
    await adaPage.getByLabel('Password').fill(ada.password);
    await adaPage.getByRole('button', { name: 'Sign in' }).click();
    await adaPage.getByText('this account is disabled').waitFor();

    await row.getByRole('button', { name: `Enable ${ada.email}` }).click();
    await rootPage.getByRole('dialog').getByRole('button', { name: 'Enable' }).click();
    await row.filter({ hasText: 'Active' }).waitFor();
    await adaPage.getByRole('button', { name: 'Sign in' }).click();
    await adaPage.getByRole('button', { name: 'Sign out' }).waitFor();

    await row.getByRole('button', { name: `Reset link ${ada.email}` }).click();
    await rootPage.getByRole('dialog').getByRole('button', { name: 'Make link' }).click();
    const link = await rootPage.getByRole('textbox', { name: 'Password reset link' }).inputValue();
    assert.match(link, new RegExp(`^${web.base}/reset-password#[A-Za-z0-9]{32}$`));
    // The outbox lists the e-mailed reset of the first test (the admin's link was not e-mailed).
    await rootPage.getByText('Reset your svc password').first().waitFor();
    await shot(rootPage, 'users-reset-link');
  });
});
