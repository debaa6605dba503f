// Journey: a person signs in, creates their first workspace, registers a cluster and watches its
// operation finish on the page without reloading, opens the cluster, and signs out.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { api, checkA11y, open, shot, skipReason, startWeb, watchCsp, type Web, type WebUser } from './harness.js';

describe('web journey: sign in, workspace, cluster', { skip: skipReason }, () => {
  let web: Web;
  let ada: WebUser;
  let page: Page;

  before(async () => {
    web = await startWeb();
    ada = await web.user('Ada');
  });
  after(() => web?.close());

  test('a wrong password is refused on the sign-in page, then the right one signs in', async () => {
    const context = await web.browser.newContext({ baseURL: web.base });
    const p = await context.newPage();
    watchCsp(p);
    await p.goto('/clusters');
    await p.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
    // Sign-up is closed by default: the page says where accounts come from, and offers no form.
    await p.getByText('Ask someone on your team to invite you').waitFor();
    assert.equal(await p.getByRole('button', { name: 'Create one' }).count(), 0);
    await checkA11y(p, 'sign-in');
    await shot(p, 'sign-in');
    await p.getByLabel('Email').fill(ada.email);
    await p.getByLabel('Password').fill('not the password');
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('alert').filter({ hasText: 'Could not sign in' }).waitFor();
    await context.close();
    page = await web.signIn(ada);
  });

  test('with SVC_SIGNUP=open, a person makes an account from the sign-in page and is signed in', async () => {
    const open = await startWeb({ SVC_SIGNUP: 'open' });
    try {
      const context = await open.browser.newContext({ baseURL: open.base });
      const p = await context.newPage();
      watchCsp(p);
      await p.goto('/');
      await p.getByRole('button', { name: 'Create one' }).click();
      await p.getByRole('heading', { name: 'Create an account' }).waitFor();
      await p.getByLabel('Your name').fill('Grace');
      await p.getByLabel('Email').fill('grace@example.com');
      await p.getByLabel('Password').fill('grace has a long password');
      await p.getByRole('button', { name: 'Create account and continue' }).click();
      // Signed in: the app asks for a first workspace.
      await p.getByRole('heading', { level: 1, name: 'No workspace yet' }).waitFor();
      await context.close();
    } finally {
      await open.close();
    }
  });

  test('with no workspace yet the app asks for one, and switches to it once created', async () => {
    await page.getByRole('heading', { level: 1, name: 'No workspace yet' }).waitFor();
    await page.getByRole('link', { name: 'Create a workspace' }).click();
    await page.getByRole('heading', { level: 1, name: 'Create your first workspace' }).waitFor();
    await checkA11y(page, 'new workspace');
    await page.getByLabel('Name').fill('Acme');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await page.getByRole('combobox', { name: 'Workspace' }).waitFor();
    assert.equal(await page.getByRole('combobox', { name: 'Workspace' }).locator('option:checked').textContent(), 'Acme');
  });

  test('registering a cluster shows its operation live until it succeeds', async () => {
    await open(page, '/clusters', 'Clusters');
    await checkA11y(page, 'clusters (empty)');
    await page.getByRole('link', { name: 'Register a cluster' }).first().click();
    await page.getByLabel('Name').fill('dev');
    await page.getByRole('button', { name: 'Register cluster' }).click();
    const progress = page.getByRole('region', { name: /Registration/ });
    await progress.waitFor();
    await progress.getByText('Succeeded').waitFor({ timeout: 60_000 });
    assert.ok(await progress.getByRole('list', { name: 'Steps' }).getByRole('listitem').count() > 0);
    await checkA11y(page, 'cluster registration');
    await shot(page, 'cluster-registered');
    await page.getByRole('link', { name: 'Open the cluster' }).click();
    await page.getByRole('heading', { level: 1, name: 'dev' }).waitFor();
    await page.getByRole('heading', { name: 'Nodes' }).waitFor();
    await checkA11y(page, 'cluster page');
    await shot(page, 'cluster');
  });

  test('the cluster list shows it, and its html_url opens its page directly', async () => {
    await open(page, '/clusters', 'Clusters');
    const link = page.getByRole('link', { name: 'dev' });
    const href = await link.getAttribute('href');
    assert.match(href ?? '', /^\/clusters\/clu_/);
    await open(page, href!, 'dev');
  });

  test("a link to a record of another of the person's workspaces opens it there, switching workspace", async () => {
    const ws = await api(page, 'POST', '/v1/workspaces', { name: 'Side project' });
    assert.equal(ws.status, 201);
    const op = await api(page, 'POST', '/v1/clusters', { name: 'side' }, ws.body.id);
    assert.equal(op.status, 202);
    const clusterId = op.body.owner_id as string;
    assert.equal(await page.getByRole('combobox', { name: 'Workspace' }).locator('option:checked').textContent(), 'Acme');
    await page.goto(`/clusters/${clusterId}`);
    await page.getByRole('heading', { level: 1, name: 'side' }).waitFor();
    await page.getByRole('combobox', { name: 'Workspace' }).locator('option:checked', { hasText: 'Side project' }).waitFor({ state: 'attached' });
    await page.goto('/clusters');
    await page.getByRole('link', { name: 'side' }).waitFor();
  });

  test('keyboard only: skip to the content, reach a page from the navigation, fill a form and submit it', async () => {
    await open(page, '/operations', 'Operations');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
    // Tab through the header and the navigation to the Clusters link, as a keyboard user would.
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate(() => document.activeElement?.textContent)) === 'Clusters') break;
    }
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Clusters');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Clusters' }).waitFor();
    // Focus moves to the new page's heading (set once the page has rendered).
    await page.waitForFunction(() => document.activeElement?.tagName === 'H1' && document.activeElement.textContent === 'Clusters');
    for (let i = 0; i < 10; i++) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate(() => document.activeElement?.textContent)) === 'Register a cluster') break;
    }
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.textContent === 'Register a cluster' && document.activeElement.tagName === 'H1');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.labels?.[0]?.textContent), 'Name (required)', 'the first field follows the heading');
    await page.keyboard.type('kbd');
    await page.keyboard.press('Enter');
    await page.getByRole('region', { name: /Registration/ }).getByText('Succeeded').waitFor({ timeout: 60_000 });
  });

  test('readable at 360 px wide, in dark mode', async () => {
    const narrow = await web.signIn(ada, { width: 360, colorScheme: 'dark' });
    await open(narrow, '/clusters', 'Clusters');
    const overflow = await narrow.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.equal(overflow, 0, 'no horizontal scrolling at 360 px');
    await checkA11y(narrow, 'clusters at 360 px, dark');
    await shot(narrow, 'clusters-narrow-dark');
  });

  test('signing out ends the session: the app shows the sign-in page, and the cookie no longer works', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
    const status = await page.evaluate(async () => (await fetch('/v1/me')).status);
    assert.equal(status, 401);
  });
});
