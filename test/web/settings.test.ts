// Journey: the workspace settings and account pages. An owner creates and revokes an API token (the
// token shown once and copyable; once revoked it no longer authenticates), registers and deletes
// an OAuth client, adds a member who then sees the narrower view of their role, marks
// notifications read while the bell counts down, changes the plan (and applies it again after a
// 409), and reads the audit log.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { ID_IN_TEXT } from '../notification-wording.js';
import { api, checkA11y, copiedText, open, recordClipboard, shot, skipReason, startWeb, watchCsp, type Web, type WebUser } from './harness.js';

describe('web journey: settings, tokens, members, notifications, plan, audit', { skip: skipReason }, () => {
  let web: Web;
  let ada: WebUser;
  let bob: WebUser;
  let page: Page;
  let wsId: string;

  before(async () => {
    web = await startWeb();
    ada = await web.user('Ada');
    bob = await web.user('Bob');
    page = await web.signIn(ada);
    const ws = await api(page, 'POST', '/v1/workspaces', { name: 'Acme' });
    assert.equal(ws.status, 201);
    wsId = ws.body.id;
    await page.reload();
    await page.getByRole('combobox', { name: 'Workspace' }).waitFor();
  });
  after(() => web?.close());

  test('an API token is shown once and copyable, authenticates, and stops working once revoked', async () => {
    await recordClipboard(page, web.base);
    await open(page, '/settings/tokens', 'API tokens');
    await page.getByText('No API tokens yet.').waitFor();
    await page.getByLabel('Name').fill('ci');
    await page.getByLabel('Expires').selectOption({ label: 'In 30 days' });
    await page.getByRole('button', { name: 'Create token' }).click();
    const value = page.getByLabel('The token ci');
    await value.waitFor();
    const token = await value.inputValue();
    assert.match(token, /^sk_svc_[0-9A-Za-z]{46}$/);
    await page.getByRole('status').filter({ hasText: 'shown only this once' }).waitFor();
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    assert.equal(await copiedText(page), token);
    const row = page.getByRole('row').filter({ hasText: token.slice(0, 12) });
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /ci.*Member.*Never/);
    await checkA11y(page, 'token created');
    await shot(page, 'token-created');

    const asToken = (path: string) => fetch(`${web.base}${path}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal((await asToken('/v1/api_tokens')).status, 200);

    // Shown once: a new visit of the page lists the token by its prefix only.
    await open(page, '/settings/tokens', 'API tokens');
    await row.waitFor();
    assert.equal((await page.content()).includes(token), false);
    await checkA11y(page, 'tokens');
    await shot(page, 'tokens');

    await page.getByRole('button', { name: 'Revoke ci' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke the token ci?' });
    await dialog.getByRole('button', { name: 'Revoke token' }).click();
    await page.getByText('No API tokens yet.').waitFor();
    assert.equal((await asToken('/v1/api_tokens')).status, 401);
  });

  test('an OAuth client is registered with its secret shown once, and deleted', async () => {
    await open(page, '/settings/oauth-clients', 'OAuth clients');
    await page.getByLabel('Name').fill('deployer');
    await page.getByRole('button', { name: 'Register client' }).click();
    const secret = await page.getByLabel('Client secret of deployer').inputValue();
    assert.match(secret, /^svc_cs_/);
    const clientId = await page.getByLabel('Client ID of deployer').inputValue();
    await page.getByRole('row').filter({ hasText: clientId }).waitFor();
    await checkA11y(page, 'oauth client registered');
    await page.getByRole('button', { name: 'Delete deployer' }).click();
    await page.getByRole('dialog', { name: 'Delete the client deployer?' }).getByRole('button', { name: 'Delete client' }).click();
    await page.getByText('No OAuth clients yet.').waitFor();
  });

  test('a member is added and their role changed; they see the workspace with the narrower view of a member', async () => {
    await open(page, '/settings/members', 'Members');
    await page.getByLabel('E-mail address').fill(bob.email);
    await page.getByLabel('Role', { exact: true }).selectOption('admin');
    await page.getByRole('button', { name: 'Add or invite' }).click();
    await page.getByRole('status').filter({ hasText: `${bob.email} is now an admin of Acme.` }).waitFor();
    const bobRow = page.getByRole('row').filter({ hasText: bob.email });
    await bobRow.filter({ hasText: 'Admin' }).waitFor();

    await page.getByRole('button', { name: `Change role of ${bob.email}` }).click();
    const dialog = page.getByRole('dialog', { name: `Change the role of ${bob.email}` });
    await dialog.getByLabel('New role').selectOption('member');
    await dialog.getByRole('button', { name: 'Change role' }).click();
    await bobRow.filter({ hasText: 'Member' }).waitFor();
    await checkA11y(page, 'members');
    await shot(page, 'members');

    const bobPage = await web.signIn(bob);
    const switcher = bobPage.getByRole('combobox', { name: 'Workspace' });
    assert.equal(await switcher.locator('option:checked').textContent(), 'Acme');
    await open(bobPage, '/settings/tokens', 'API tokens');
    await bobPage.getByText('Only owners and admins can create and revoke API tokens; your role in this workspace is member.').waitFor();
    assert.equal(await bobPage.getByRole('button', { name: 'Create token' }).count(), 0);
    await checkA11y(bobPage, 'tokens as a member');
    await open(bobPage, '/settings/members', 'Members');
    await bobPage.getByRole('row').filter({ hasText: ada.email }).waitFor();
    assert.equal(await bobPage.getByRole('button', { name: /^Remove/ }).count(), 0);
    await open(bobPage, '/audit', 'Audit log');
    await bobPage.getByRole('alert').filter({ hasText: 'Your role in this workspace does not allow this.' }).waitFor();
    await checkA11y(bobPage, 'audit as a member');
    await bobPage.context().close();
  });

  test('someone without an account is invited: the link is shown once; opened signed out, it makes the account and opens the workspace', async () => {
    await open(page, '/settings/members', 'Members');
    await page.getByLabel('E-mail address').fill('grace@example.com');
    await page.getByRole('button', { name: 'Add or invite' }).click();
    const notice = page.getByRole('status').filter({ hasText: 'grace@example.com has no account here yet: they are invited as a member.' });
    await notice.waitFor();
    const link = await notice.getByRole('textbox', { name: 'Invitation link' }).inputValue();
    assert.match(link, new RegExp(`^${web.base}/invite#[A-Za-z0-9]{32}$`));
    const row = page.getByRole('row').filter({ hasText: 'grace@example.com' });
    await row.filter({ hasText: 'Pending' }).waitFor();
    await checkA11y(page, 'members with an invitation');
    await shot(page, 'members-invited');

    // Grace opens the link in a browser of her own, signed out.
    const context = await web.browser.newContext({ baseURL: web.base });
    const grace = await context.newPage();
    watchCsp(grace);
    await grace.goto(link);
    await grace.getByRole('heading', { level: 1, name: 'Join Acme' }).waitFor();
    await grace.getByText('You are invited as a member of Acme, as grace@example.com.').waitFor();
    await checkA11y(grace, 'invitation');
    await shot(grace, 'invitation');
    await grace.getByLabel('Your name').fill('Grace');
    await grace.getByLabel('Choose a password').fill('grace has a long password');
    await grace.getByRole('button', { name: 'Join Acme' }).click();
    await grace.getByRole('button', { name: 'Sign out' }).waitFor();
    assert.equal(await grace.getByRole('combobox', { name: 'Workspace' }).locator('option:checked').textContent(), 'Acme');
    assert.equal(new URL(grace.url()).hash, '', 'the token left the address');
    // The link works once.
    await grace.goto(link);
    await grace.getByRole('heading', { level: 1, name: 'This invitation link does not work' }).waitFor();
    await context.close();

    await page.reload();
    await page.getByRole('row').filter({ hasText: 'grace@example.com' }).filter({ hasText: 'Accepted' }).waitFor();
  });

  test('notifications: the bell counts them, marking one read and then all brings it down', async () => {
    // Deleting a secret notifies the workspace's owners and admins that it will be purged.
    for (const name of ['alpha', 'beta']) {
      const created = await api(page, 'POST', '/v1/secrets', { name, value: 'x' }, wsId);
      assert.equal(created.status, 201);
      const deleted = await api(page, 'DELETE', `/v1/secrets/${created.body.id}`, undefined, wsId, { 'if-match': created.body.etag });
      assert.equal(deleted.status, 200);
    }
    // A cluster that cannot be provisioned: its failed operation is named by what it did (issue 34).
    const doomed = await api(page, 'POST', '/v1/clusters', { name: 'doomed', local: { faults: [{ action: 'provision', fail_times: 50 }] } }, wsId);
    assert.equal(doomed.status, 202, JSON.stringify(doomed.body));
    assert.equal((await api(page, 'POST', `/v1/operations/${doomed.body.id}:wait?timeout=60`, undefined, wsId)).body.state, 'FAILED');
    await open(page, '/notifications', 'Notifications');
    await page.getByRole('link', { name: 'Notifications, 3 unread' }).waitFor();
    const alpha = page.getByRole('link', { name: 'Secret "alpha" will be destroyed' });
    assert.match((await alpha.getAttribute('href')) ?? '', /^\/secrets\/sec_/);
    const failed = page.getByRole('link', { name: 'Creating cluster doomed failed' });
    assert.equal(await failed.getAttribute('href'), `/operations/${doomed.body.id}`, 'the id stays in the link');
    // Titles and bodies name things; no id shows anywhere in the list.
    assert.doesNotMatch(await page.getByRole('table', { name: 'Notifications' }).innerText(), ID_IN_TEXT);
    await checkA11y(page, 'notifications');
    await shot(page, 'notifications');

    await page.getByRole('button', { name: 'Mark read Secret "alpha" will be destroyed' }).click();
    await page.getByRole('link', { name: 'Notifications, 2 unread' }).waitFor();
    await alpha.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Mark all read' }).click();
    await page.getByRole('link', { name: 'Notifications', exact: true }).waitFor();
    await page.getByText('Nothing unread.').waitFor();
    await page.getByLabel('Show').selectOption({ label: 'All' });
    await page.getByRole('row').filter({ hasText: 'Secret "alpha" will be destroyed' }).waitFor();
  });

  test('the plan page shows quota bars and who raises a plan; the operator\'s raise shows, and a change applies again after a 409', async () => {
    await open(page, '/settings/plan', 'Plan and quotas');
    const secrets = page.getByRole('meter', { name: 'Secrets' });
    await secrets.waitFor();
    assert.equal(await secrets.getAttribute('value'), '2');
    await page.getByText(/^2 of \d+ secrets/).waitFor();
    await page.getByRole('heading', { name: 'Free' }).waitFor();
    // SVC_BILLING=operator (the default): the higher plans say whom to ask; no button would be refused.
    await page.getByText('The operator of this service moves workspaces to Pro: ask them.').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Upgrade to Pro' }).count(), 0);
    await checkA11y(page, 'plan');
    await shot(page, 'plan');

    // The operator raises the plan; the page shows it once reloaded, with the operator's change request.
    assert.match(await web.admin(['workspaces', 'set-plan', wsId, 'pro']), /: free -> pro /);
    await page.reload();
    await page.getByRole('row').filter({ hasText: 'Upgrade from Free to Pro' }).filter({ hasText: 'Applied' }).filter({ hasText: 'set by the operator' }).waitFor();
    // The limits agree: workspaces owned is Ada's limit, set by her best plan (this one's now), and the Pro card says the same figure.
    const proLimits = (await api(page, 'GET', '/v1/plans')).body.data.find((p: any) => p.tier === 'pro').limits;
    await page.getByText(`1 of ${proLimits['workspaces/owned']} workspaces owned · your limit, set by the best plan among the workspaces you own: Pro, this one's`).waitFor();
    await page.getByText(/a limit of each person, not of one workspace/).waitFor();

    // The operator changes the subscription again while the page shows it: the page's etag is stale.
    await web.admin(['workspaces', 'set-plan', wsId, 'enterprise']);
    await page.getByRole('button', { name: 'Downgrade to Free' }).click();
    await page.getByRole('dialog', { name: 'Downgrade to Free?' }).getByRole('button', { name: 'Downgrade to Free' }).click();
    const conflict = page.getByRole('alert').filter({ hasText: 'The subscription changed since this page loaded it.' });
    await conflict.waitFor();
    await page.getByRole('button', { name: 'Apply my change again' }).click();
    await page.getByRole('row').filter({ hasText: 'Downgrade from Enterprise to Free' }).filter({ hasText: 'Pending' }).waitFor({ timeout: 60_000 });
    await page.getByText(/Downgrade to Free on/).waitFor();
    await checkA11y(page, 'plan with a scheduled downgrade');
  });

  test('the audit log lists who did what, filtered by action, linked to the resource', async () => {
    await open(page, '/audit', 'Audit log');
    await page.getByRole('row').filter({ hasText: 'Member role changed' }).waitFor();
    await checkA11y(page, 'audit');
    await shot(page, 'audit');
    await page.getByLabel('Action').selectOption({ label: 'API token revoked' });
    // The filtered page replaces the whole list: the other actions leave it.
    await page.getByRole('row').filter({ hasText: 'Member role changed' }).waitFor({ state: 'detached' });
    const revoked = page.getByRole('row').filter({ hasText: 'API token revoked' });
    await revoked.waitFor();
    assert.equal(await page.getByRole('row').count(), 2, 'the header row and the one revocation');
    // People and resources by name, as the event recorded them (issue 34): "Ada <ada@example.com>", the token "ci".
    assert.match((await revoked.textContent()) ?? '', new RegExp(`Ada <${ada.email}>`));
    assert.equal(await revoked.getByRole('link', { name: 'API token ci' }).getAttribute('href'), '/settings/tokens');
    await checkA11y(page, 'audit filtered');
  });

  test('readable at 360 px wide, in dark mode', async () => {
    const narrow = await web.signIn(ada, { width: 360, colorScheme: 'dark' });
    for (const [path, heading] of [['/settings/members', 'Members'], ['/audit', 'Audit log'], ['/settings/plan', 'Plan and quotas']]) {
      await open(narrow, path!, heading!);
      await narrow.getByRole('table').first().waitFor();
      const overflow = await narrow.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.equal(overflow, 0, `no horizontal scrolling at 360 px on ${path}`);
      await checkA11y(narrow, `${heading} at 360 px, dark`);
    }
    await narrow.getByRole('heading', { name: 'Quotas', exact: true }).scrollIntoViewIfNeeded();
    await shot(narrow, 'plan-narrow-dark');
  });

  test('the account page changes the password: a wrong current one shows at its field; changed, another browser is signed out, this one stays', async () => {
    const elsewhere = await web.signIn(bob);
    const mine = await web.signIn(bob);
    await mine.getByRole('link', { name: `Your account: ${bob.email}` }).click();
    await mine.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    await checkA11y(mine, 'account');
    const newPassword = 'bob has a newer password';
    await mine.getByLabel('Current password').fill('not the password');
    await mine.getByLabel(/^New password(?! again)/).fill(newPassword);
    await mine.getByLabel('New password again').fill(`${newPassword}!`);
    await mine.getByRole('button', { name: 'Change password' }).click();
    await mine.getByText('The two passwords differ.').waitFor();
    await mine.getByLabel('New password again').fill(newPassword);
    await mine.getByRole('button', { name: 'Change password' }).click();
    await mine.getByText('not your current password').waitFor();
    await mine.getByLabel('Current password').fill(bob.password);
    await mine.getByRole('button', { name: 'Change password' }).click();
    await mine.getByRole('status').filter({ hasText: /^Your password was changed\. \d+ other sessions? (was|were) signed out\.$/ }).waitFor();
    assert.equal(await mine.getByLabel('Current password').inputValue(), '', 'the form is cleared');
    await shot(mine, 'account');
    // The other browser's session ended at once: a reload shows the sign-in page; this one stays signed in.
    await elsewhere.reload();
    await elsewhere.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
    await mine.reload();
    await mine.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    bob.password = newPassword;
  });
});
