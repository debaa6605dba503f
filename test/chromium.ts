// The headless Debian Chromium the browser tests drive through playwright-core. test/run.js starts
// one for the whole run (launchSharedBrowser) and hands its address to the files in
// SVC_TEST_BROWSER_WS; each file then connects to it instead of starting a Chromium of its own
// (about 2.5 s of CPU each). A file shares the process, never state: everything it opens is in
// browser contexts of its own (cookies, storage, cache), closed with its connection. A file run
// on its own, outside test/run.js, launches its own browser as before.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's chromium-headless-shell (the "old" headless mode, what Playwright itself runs headless
 * by default): no browser UI under the page, a fraction of the CPU of `chromium --headless` per
 * context and navigation (measured here: a new context with its first page about 0.3 s of CPU
 * instead of 2 s). The full chromium is the fallback where only it is installed.
 */
const HEADLESS_SHELL = '/usr/lib/chromium/chromium-headless-shell';
export const CHROMIUM = existsSync(HEADLESS_SHELL) ? HEADLESS_SHELL : '/usr/bin/chromium';
/** Why the browser tests skip here, or null when Chromium is installed (.ci/run installs it). */
export const chromiumMissing = existsSync(CHROMIUM) ? null : `${CHROMIUM} not found; install Debian's chromium-headless-shell (or chromium) package to run the browser tests`;

/** The variable test/run.js sets to the shared browser's WebSocket address. */
export const SHARED_BROWSER_ENV = 'SVC_TEST_BROWSER_WS';

/**
 * Every test page is of one site (the loopback address of the file's server), in contexts of its
 * own: without site isolation and with one process per site and context, Chromium forks fewer
 * renderers (the blank page's process is kept for the first navigation), a few hundred ms of CPU
 * saved per context on a 2-core CI machine where the browser is the largest consumer.
 */
const LAUNCH = {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-site-isolation-trials', '--process-per-site'],
};

/** Starts the run's one browser (test/run.js); its address goes to the files in SHARED_BROWSER_ENV. */
export async function launchSharedBrowser(): Promise<{ wsEndpoint: string; close(): Promise<void> }> {
  const server = await chromium.launchServer(LAUNCH);
  return { wsEndpoint: server.wsEndpoint(), close: () => server.close() };
}

/**
 * A browser for this test file: a connection to the run's shared one, or one of its own outside
 * test/run.js. Closing it closes the file's contexts (and, for its own, the browser).
 */
export async function openBrowser(): Promise<Browser> {
  const shared = process.env[SHARED_BROWSER_ENV];
  return shared ? chromium.connect(shared) : chromium.launch(LAUNCH);
}
