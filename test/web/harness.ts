// The web app's journeys: a real `svc serve` (the build, see processes.ts; on a migrated copy of the template database) serving
// the built app, headless Debian Chromium driven by playwright-core (the run's one, see
// test/chromium.ts), a signed-in page per user,
// axe-core run in the page, and screenshots under test/web/screenshots (git-ignored; the README's
// pictures are copied from there by `npm run screenshots`).
// Skips, saying why, where no Chromium is installed (.ci/run installs it).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { chromiumMissing, openBrowser } from '../chromium.js';
import { ROOT } from '../paths.js';
import { createTestDatabase, DIALECT, freePort, type TestDatabase } from '../harness.js';
import { dbEnv, runSvc, startSvc, type RunningSvc } from '../processes.js';

export const skipReason = chromiumMissing ?? undefined;

export { ROOT };
export const WEB_BUILD = join(ROOT, 'dist/app');
export const SCREENSHOTS = join(ROOT, 'test/web/screenshots');
const AXE = readFileSync(join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');

function newest(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((n) => newest(join(path, n))));
}

/**
 * Builds the app when dist/app is missing or older than its sources (web/, the generated API
 * types), so a journey never tests an old build. `npm ci` builds it once; a change rebuilds it here.
 */
export async function ensureBuilt(): Promise<void> {
  const index = join(WEB_BUILD, 'index.html');
  const sources = Math.max(newest(join(ROOT, 'web')), newest(join(ROOT, 'src/cli/generated/api.ts')));
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return;
  const { build } = await import('vite');
  await build({ configFile: join(ROOT, 'web/vite.config.ts'), logLevel: 'warn' });
}

export interface WebUser {
  email: string;
  password: string;
  name: string;
}

export interface Web {
  base: string;
  svc: RunningSvc;
  db: TestDatabase;
  browser: Browser;
  /** A new user account (svc admin create-user, as an operator makes one). */
  user(name: string): Promise<WebUser>;
  /** Runs `svc admin <args>` against this service's database, as its operator would; its stdout (exit 0 asserted). */
  admin(args: string[]): Promise<string>;
  /** A fresh browser context signed in as the user through the sign-in page, on `/`. */
  signIn(user: WebUser, opts?: { width?: number; colorScheme?: 'light' | 'dark' }): Promise<Page>;
  close(): Promise<void>;
}

export async function startWeb(extraEnv: Record<string, string> = {}): Promise<Web> {
  await ensureBuilt();
  const db = await createTestDatabase({ migrated: true });
  // A journey may choose the port (PORT in extraEnv), when another server must know the address first.
  const port = extraEnv.PORT ? Number(extraEnv.PORT) : await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = dbEnv(db, { PORT: String(port), SVC_PUBLIC_URL: base, ...extraEnv });
  const svc = await startSvc(env);
  const browser = await openBrowser();
  const contexts: BrowserContext[] = [];
  return {
    base,
    svc,
    db,
    browser,
    async user(name) {
      const u = { name, email: `${name.toLowerCase()}@example.com`, password: `${name} has a long password` };
      const res = await runSvc(['admin', 'create-user', '--email', u.email, '--password', u.password, '--name', name], env);
      assert.equal(res.code, 0, res.stderr);
      return u;
    },
    async admin(args) {
      const res = await runSvc(['admin', ...args], env);
      assert.equal(res.code, 0, res.stderr);
      return res.stdout;
    },
    async signIn(user, opts = {}) {
      const context = await browser.newContext({ baseURL: base, viewport: { width: opts.width ?? 1280, height: 900 }, colorScheme: opts.colorScheme ?? 'light' });
      contexts.push(context);
      context.on('page', watchCsp);
      const page = await context.newPage();
      page.on('pageerror', (err) => console.error(`# page error (${user.email}): ${err.message}`));
      await page.goto('/');
      await page.getByLabel('Email').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      return page;
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => {});
      await browser.close().catch(() => {});
      await svc.stop();
      await db.drop?.();
    },
  };
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** What the CSP refused in each page (the console says so): the app must need nothing it forbids. */
const cspViolations = new WeakMap<Page, string[]>();
export function watchCsp(page: Page): void {
  const seen: string[] = [];
  cspViolations.set(page, seen);
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/.test(msg.text())) seen.push(msg.text());
  });
}

/**
 * Fails on a CSP refusal in the page, then runs axe-core in it and fails on any serious or critical
 * violation, naming each. The audit reads the page's markup, which the database dialect does not
 * change, so it runs in the SQLite pass of a journey only (the journey itself runs on both): each
 * audit costs the shared browser around a second of CPU, and a pass makes some 90 of them.
 */
export async function checkA11y(page: Page, name: string): Promise<void> {
  assert.deepEqual(cspViolations.get(page) ?? [], [], `content security policy violations on ${name}`);
  if (DIALECT !== 'sqlite') return;
  // Evaluated through the DevTools protocol: the page's CSP (scripts from 'self' only) stays on.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE);
  const violations = (await page.evaluate(async () => {
    const w = window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: AxeViolation[] }> } };
    const result = await w.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  })) as AxeViolation[];
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(
    bad.map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
    [],
    `axe-core on ${name}`,
  );
}

/**
 * Saves a screenshot of the page as test/web/screenshots/<name>.png, in the SQLite pass (the
 * PostgreSQL pass of the same journey would write the same files, at the same time).
 */
export async function shot(page: Page, name: string): Promise<void> {
  if (DIALECT !== 'sqlite') return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: false });
}

/** Wraps navigator.clipboard.writeText so that the document keeps what it copied (still written through). */
const RECORD_COPIES = () => {
  const write = navigator.clipboard.writeText.bind(navigator.clipboard);
  navigator.clipboard.writeText = (text: string) => {
    (window as unknown as { svcCopied?: string }).svcCopied = text;
    return write(text);
  };
};

/**
 * Records what the page puts on the clipboard (navigator.clipboard.writeText, still called through,
 * with the permission it needs granted): the system clipboard is one for the whole shared browser,
 * so two journeys running side by side (a file's SQLite and PostgreSQL passes) would read each
 * other's copies back from it. Applies to the page's document now and to every later load in its
 * context; copiedText reads what this page copied.
 */
export async function recordClipboard(page: Page, origin: string): Promise<void> {
  await page.context().grantPermissions(['clipboard-write'], { origin });
  await page.context().addInitScript(RECORD_COPIES);
  await page.evaluate(RECORD_COPIES);
}

/** The text the page last put on the clipboard (see recordClipboard), once it has put one. */
export async function copiedText(page: Page): Promise<string> {
  const copied = await page.waitForFunction(() => (window as unknown as { svcCopied?: string }).svcCopied);
  return (await copied.jsonValue()) as string;
}

/** Goes to a path of the app and waits for its main heading. */
export async function open(page: Page, path: string, heading: string | RegExp): Promise<void> {
  await page.goto(path);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

/**
 * Calls the API from inside the page, as the app does (the session cookie, x-svc-csrf, svc-context
 * when given, and any `extra` headers such as if-match): for a journey's setup that is not itself
 * the journey. The function handed to page.evaluate declares no named inner functions (tsx would wrap them in a helper the page lacks).
 */
export async function api<T = any>(page: Page, method: string, path: string, body?: unknown, workspace?: string, extra: Record<string, string> = {}): Promise<{ status: number; body: T }> {
  return page.evaluate(
    async ([m, p, b, ws, more]) => {
      const headers: Record<string, string> = { 'x-svc-csrf': '1', ...more };
      if (b !== undefined) headers['content-type'] = 'application/json';
      if (ws) headers['svc-context'] = ws;
      const res = await fetch(p, { method: m, headers, body: b === undefined ? undefined : JSON.stringify(b) });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    [method, path, body, workspace, extra] as const,
  );
}

/**
 * Waits until a form control holds `value`: pages fill a control once their data arrives (a
 * version list, a schema's default), so reading it at once would race the page. Fails with the
 * value it last had after 30 s (a safety net, not a timing assertion).
 */
export async function expectValue(locator: Locator, value: string, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  let last = await locator.inputValue();
  while (last !== value && Date.now() < deadline) {
    await locator.page().evaluate(() => new Promise((resolve) => requestAnimationFrame(resolve)));
    last = await locator.inputValue();
  }
  assert.equal(last, value, what);
}

/** Tabs until the focused element's text is `text` (a keyboard user moving through the page). */
export async function tabTo(page: Page, text: string, max = 60): Promise<void> {
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    if ((await page.evaluate(() => document.activeElement?.textContent?.trim())) === text) return;
  }
  assert.fail(`no focusable "${text}" within ${max} tabs`);
}

/** How far the page scrolls sideways (0: it fits its viewport, as a 360 px screen needs). */
export const noOverflow = (p: Page): Promise<number> => p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
