// Journey: single sign-on through a real OpenID provider (oidc-provider, test/oidc-standin.ts) in
// Chromium. A person signed out opens a page of the web app, chooses "Sign in with Acme SSO",
// signs in on the provider's own page and is back on that page, signed in; the device approval
// page offers the same and comes back to the code being approved; a person the service has no
// account for reads why on a page of the service; a person with two-factor sign-in on enters a
// code on the service's page after the provider's, and a wrong one is said to be wrong.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as OTPAuth from 'otpauth';
import type { Browser, Page } from 'playwright-core';
import { freePort } from '../harness.js';
import { startOidcStandin, type OidcStandin } from '../oidc-standin.js';
import { api, checkA11y, shot, skipReason, startWeb, watchCsp, type Web } from './harness.js';

describe('web journey: single sign-on', { skip: skipReason }, () => {
  let web: Web;
  let op: OidcStandin;

  before(async () => {
    const port = await freePort();
    op = await startOidcStandin({ redirectUri: `http://127.0.0.1:${port}/v1/auth/oidc/callback` });
    web = await startWeb({ PORT: String(port), ...op.env({ SVC_OIDC_NAME: 'Acme SSO' }) } as Record<string, string>);
    const ada = await web.user('Ada');
    op.accounts.set('ada-at-acme', { sub: 'ada-at-acme', email: ada.email.toUpperCase(), email_verified: true, name: 'Ada' });
    op.accounts.set('stranger', { sub: 'stranger', email: 'stranger@example.com', email_verified: true });
  });
  after(async () => {
    await web?.close();
    await op?.close();
  });

  async function newPage(browser: Browser): Promise<Page> {
    const context = await browser.newContext({ baseURL: web.base, viewport: { width: 1280, height: 900 } });
    context.on('page', watchCsp);
    return context.newPage();
  }

  /** The provider's own sign-in page (its development login: any login, any password). */
  async function atProvider(page: Page, login: string): Promise<void> {
    await page.waitForURL((url) => url.href.startsWith(op.issuer));
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('anything');
    await page.getByRole('button', { name: 'Sign-in' }).click();
  }

  test('signed out on a page of the app: Sign in with Acme SSO, the provider\'s page, back on that page signed in', async () => {
    const page = await newPage(web.browser);
    await page.goto('/settings/tokens?from=journey');
    const link = page.getByRole('link', { name: 'Sign in with Acme SSO' });
    await link.waitFor();
    await checkA11y(page, 'sign-in with single sign-on');
    await shot(page, 'sign-in-sso');
    await link.click();
    await atProvider(page, 'ada-at-acme');
    await page.waitForURL(`${web.base}/settings/tokens?from=journey`);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    const me = await api(page, 'GET', '/v1/me');
    assert.equal(me.body.email, 'ada@example.com');
    assert.equal(me.body.credential, 'cookie');
    await page.context().close();
  });

  test('the device page offers the same sign-in and comes back to the code', async () => {
    const page = await newPage(web.browser);
    await page.goto('/device?user_code=BCDF-GHJK');
    await page.getByRole('link', { name: 'Sign in with Acme SSO' }).click();
    await atProvider(page, 'ada-at-acme');
    await page.waitForURL(`${web.base}/device?user_code=BCDF-GHJK`);
    assert.match(await page.locator('main').innerText(), /Signed in as ada@example\.com/);
    await page.context().close();
  });

  test('with two-factor sign-in on: after the provider, the service asks for the code; a wrong one is refused, a recovery code signs in', async () => {
    const bob = await web.user('Bob');
    // Two factors on through the API, as the account page does it.
    const call = async (method: string, path: string, token?: string, body?: unknown) => {
      const res = await fetch(`${web.base}${path}`, {
        method, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      assert.ok(res.ok, `${method} ${path}: ${res.status}`);
      return res.json() as Promise<any>;
    };
    const { token } = await call('POST', '/v1/auth/sessions', undefined, { email: bob.email, password: bob.password });
    const { secret } = await call('POST', '/v1/me/two_factor:enroll', token);
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' });
    const { recovery_codes: recovery } = await call('POST', '/v1/me/two_factor:confirm', token, { code: totp.generate() });
    op.accounts.set('bob-at-acme', { sub: 'bob-at-acme', email: bob.email, email_verified: true, name: 'Bob' });

    const page = await newPage(web.browser);
    await page.goto('/settings/tokens?from=two-factors');
    await page.getByRole('link', { name: 'Sign in with Acme SSO' }).click();
    await atProvider(page, 'bob-at-acme');
    await page.getByRole('heading', { name: 'Two-factor sign-in' }).waitFor();
    assert.match(await page.locator('main').innerText(), /You signed in as bob@example\.com at the sign-in provider/);
    assert.ok(!(await page.context().cookies()).some((c) => c.name === 'svc_session'), 'not signed in before the code');
    await checkA11y(page, 'single sign-on: the second factor');
    await shot(page, 'sign-in-sso-two-factor');

    // A code from five minutes ahead is no current code.
    await page.getByLabel('Authentication code').fill(totp.generate({ timestamp: Date.now() + 300_000 }));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /That code is not right, or was used already/);

    await page.getByLabel('Authentication code').fill(recovery[0]);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(`${web.base}/settings/tokens?from=two-factors`);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    assert.equal((await api(page, 'GET', '/v1/me')).body.email, 'bob@example.com');
    await page.context().close();
  });

  test('a person without an account here reads why, and nobody is signed in', async () => {
    const page = await newPage(web.browser);
    await page.goto('/');
    await page.getByRole('link', { name: 'Sign in with Acme SSO' }).click();
    await atProvider(page, 'stranger');
    await page.getByRole('heading', { name: 'Could not sign you in' }).waitFor();
    assert.match(await page.getByRole('alert').innerText(), /There is no account for stranger@example\.com on this service/);
    await checkA11y(page, 'single sign-on refused');
    await shot(page, 'sign-in-sso-refused');
    await page.getByRole('link', { name: 'Back to the sign-in page' }).click();
    await page.getByRole('link', { name: 'Sign in with Acme SSO' }).waitFor();
    await page.context().close();
  });
});
