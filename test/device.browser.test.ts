// The device grant in a real browser: headless Debian Chromium driven by playwright-core against a
// listening server. Skips, saying why, where no Chromium is installed (.ci/run installs it).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import type { Services } from '../src/services.js';
import { chromiumSkipReason as skipReason, startChromiumApp, type ChromiumApp } from './chromium-app.js';

const GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
if (skipReason) console.log(`# skipping device.browser.test: ${skipReason}`);

async function poll(base: string, deviceCode: string): Promise<{ status: number; body: Record<string, string | number> }> {
  const res = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: GRANT, device_code: deviceCode, client_id: 'svc-cli' }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string | number> };
}

describe('device grant in headless Chromium', () => {
  let env: ChromiumApp;
  let services: Services;
  let browser: ChromiumApp['browser'];
  let base: string;

  before(async () => {
    if (skipReason) return;
    env = await startChromiumApp();
    ({ services, browser, base } = env);
  });

  after(async () => {
    clock.offsetMs = 0;
    await env?.close();
  });

  test('sign in, approve, and the polling CLI gets a working token', { timeout: 90_000, skip: skipReason ?? false }, async () => {
    const email = 'browser-user@example.test';
    const password = 'correct horse battery';
    const user = await services.users.createUser({ email, password });

    const issued = await fetch(`${base}/oauth/device/code`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: 'svc-cli' }),
    });
    assert.equal(issued.status, 200);
    const code = (await issued.json()) as { device_code: string; user_code: string; verification_uri_complete: string; interval: number };
    assert.ok(code.verification_uri_complete.startsWith(`${base}/device?user_code=`));
    assert.equal((await poll(base, code.device_code)).body.error, 'authorization_pending');

    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(code.verification_uri_complete);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Wrong email or password.').waitFor();

    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Approve this device?' }).waitFor();
    assert.equal(await page.locator('.code').textContent(), code.user_code);
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'svc_session');
    assert.ok(session, 'signed-in cookie set');
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Lax');

    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { name: 'Device approved' }).waitFor();
    await context.close();

    // The CLI waits `interval` seconds between polls (the server runs in this process, so move its clock).
    clock.offsetMs += code.interval * 1000;
    const granted = await poll(base, code.device_code);
    assert.equal(granted.status, 200, JSON.stringify(granted.body));
    const token = String(granted.body.access_token);
    assert.match(token, /^[A-Za-z0-9]{32}$/);
    const me = await fetch(`${base}/v1/me`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(me.status, 200);
    assert.equal(((await me.json()) as { id: string }).id, user.id);
    assert.equal((await poll(base, code.device_code)).body.error, 'invalid_grant');
  });
});
