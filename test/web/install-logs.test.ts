// Journey: an install's logs on its page (issue 36). An install on the local cluster, whose
// simulated deploy steps write log lines, shows them live with their pod and container; Pause holds
// the screen still while an update writes more (counted on Resume), Resume shows them; scrolling up
// stops following and Follow goes back to the newest; a 503 and a connection cut without `end` are
// tried again from the last line, nothing shown twice; a stream without lines says so (the empty
// state); a refusal (403) is said and Follow again follows; a flood keeps the last 2,000 lines; the
// container filter starts over with one container; Copy copies the lines shown; the page reads at
// 360 px; deleting the install ends the stream, which the page says. The workspace, cluster,
// package and install are made through the API from the page, as the deploy journey covers their
// pages; the 503, the cut, the empty, the refused and the flooding streams are the page's requests
// answered by the browser (page.route), the rest the server's.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { api, checkA11y, copiedText, noOverflow, open, recordClipboard, shot, skipReason, startWeb, tabTo, type Web, type WebUser } from './harness.js';

const MANIFEST = {
  routes: [{ route_key: 'web' }],
  resources: [
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: '{{ values.replicas }}' } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } },
  ],
};
const SCHEMA = { type: 'object', properties: { replicas: { type: 'integer', minimum: 1, maximum: 3, default: 1 } }, additionalProperties: false };

/** Waits for an operation the page's API call started to succeed. */
async function succeeded(page: Page, ws: string, started: { status: number; body: any }): Promise<void> {
  assert.equal(started.status, 202, JSON.stringify(started.body));
  const done = await api(page, 'POST', `/v1/operations/${started.body.id}:wait?timeout=60`, undefined, ws);
  assert.equal(done.body.state, 'SUCCEEDED', JSON.stringify(done.body));
}

/** The text of each line the log shows. */
const shownLines = (log: Locator) => log.locator('.log-line').allInnerTexts();

describe('web journey: an install’s live logs', { skip: skipReason }, () => {
  let web: Web;
  let ada: WebUser;
  let page: Page;
  let ws: string;
  let installId: string;
  let installPath: string;

  before(async () => {
    web = await startWeb();
    ada = await web.user('Ada');
    page = await web.signIn(ada);
    await recordClipboard(page, web.base);
    const created = await api(page, 'POST', '/v1/workspaces', { name: 'Acme' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ws = created.body.id;
    const pkg = await api(page, 'POST', '/v1/packages', { name: 'hello' }, ws);
    assert.equal(pkg.status, 201, JSON.stringify(pkg.body));
    const version = await api(page, 'POST', `/v1/packages/${pkg.body.id}/versions`, { semver: '1.0.0', manifest: MANIFEST, input_schema: SCHEMA }, ws);
    assert.equal(version.status, 201, JSON.stringify(version.body));
    const cluster = await api(page, 'POST', '/v1/clusters', { name: 'dev' }, ws);
    await succeeded(page, ws, cluster);
    const install = await api(page, 'POST', '/v1/installs', { package_id: pkg.body.id, package_version_pin: { kind: 'latest' }, cluster_id: cluster.body.owner_id, initial_values: { replicas: 1 } }, ws);
    await succeeded(page, ws, install);
    installId = install.body.owner_id;
    installPath = `/installs/${installId}`;
    await page.reload();
    await page.getByRole('combobox', { name: 'Workspace' }).waitFor();
  });
  after(() => web?.close());

  test('the install page follows its logs: each line with its pod and container, the newest in sight', async () => {
    await open(page, installPath, 'hello on dev');
    const region = page.getByRole('region', { name: 'Logs' });
    const log = region.getByRole('log', { name: 'Log lines' });
    await log.getByText(/applied render/).first().waitFor();
    await log.locator('.log-src', { hasText: /^web…\w{5}$/ }).first().waitFor();
    await log.locator('.log-src', { hasText: 'svc-local-cluster/driver' }).first().waitFor();
    await region.getByRole('status').getByText('Following live').waitFor();
    assert.equal(await region.getByRole('button', { name: 'Follow' }).getAttribute('aria-pressed'), 'true');
    await checkA11y(page, 'install logs');
  });

  test('Pause holds the lines still while an update writes more; Resume shows them, counted', async () => {
    const region = page.getByRole('region', { name: 'Logs' });
    const log = region.getByRole('log', { name: 'Log lines' });
    // A keyboard user pauses.
    await tabTo(page, 'Pause');
    await page.keyboard.press('Enter');
    await region.getByRole('status').getByText('Paused').waitFor();
    const before = await shownLines(log);
    const etag = (await api(page, 'GET', `/v1/installs/${installId}`, undefined, ws)).body.etag;
    await succeeded(page, ws, await api(page, 'PATCH', `/v1/installs/${installId}`, { values: { replicas: 2 } }, ws, { 'if-match': etag }));
    const resume = region.getByRole('button', { name: /^Resume · \d+ new lines?$/ });
    await resume.waitFor();
    assert.deepEqual(await shownLines(log), before, 'nothing new on screen while paused');
    await resume.click();
    await region.getByRole('button', { name: 'Pause' }).waitFor();
    const after = await shownLines(log);
    assert.ok(after.length > before.length, `${after.length} lines after Resume, ${before.length} before`);
    assert.deepEqual(after.slice(0, before.length), before, 'the waiting lines come after the ones shown');
    await region.evaluate((el) => el.scrollIntoView({ block: 'center' }));
    await shot(page, 'install-logs');
  });

  test('scrolling up stops following; Follow goes back to the newest line', async () => {
    const region = page.getByRole('region', { name: 'Logs' });
    const log = region.getByRole('log', { name: 'Log lines' });
    const follow = region.getByRole('button', { name: 'Follow' });
    const scrollable = await log.evaluate((el) => el.scrollHeight > el.clientHeight);
    if (scrollable) {
      await log.evaluate((el) => el.scrollTo(0, 0));
      await waitAttr(follow, 'aria-pressed', 'false');
    } else {
      // Too few lines to scroll: Follow is a toggle a person can turn off too.
      await follow.click();
      await waitAttr(follow, 'aria-pressed', 'false');
    }
    await follow.click();
    await waitAttr(follow, 'aria-pressed', 'true');
    assert.ok(await log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight <= 8), 'the newest line in sight');
  });

  test('a 503 and a dropped connection are tried again, from the last line: nothing is lost or shown twice', async () => {
    const listed = (await api(page, 'GET', `/v1/installs/${installId}/logs`, undefined, ws)).body.items as { time: number; line: string }[];
    assert.ok(listed.length > 3, JSON.stringify(listed));
    // The page's first request answers 503, its second gets the lines and the connection ends
    // without `end` (as a proxy's timeout cuts it), the third reaches the server.
    const asked: URL[] = [];
    let reached!: () => void;
    const third = new Promise<void>((resolve) => (reached = resolve));
    await page.route(/\/v1\/installs\/[^/]+\/logs\?/, async (route) => {
      asked.push(new URL(route.request().url()));
      if (asked.length === 1) {
        const body = { error: { code: 'UNAVAILABLE', reason: 'CLUSTER_UNREACHABLE', message: 'the cluster dev did not answer within 10 s', request_id: 'req_test' } };
        return route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify(body) });
      }
      if (asked.length === 2) return route.fulfill({ status: 200, contentType: 'text/event-stream', body: listed.map((i) => `event: line\ndata: ${JSON.stringify(i)}\n\n`).join('') });
      reached();
      return route.continue();
    });
    await open(page, installPath, 'hello on dev');
    const region = page.getByRole('region', { name: 'Logs' });
    const log = region.getByRole('log', { name: 'Log lines' });
    await region.getByText('Trying again: the cluster dev did not answer within 10 s').waitFor();
    await third;
    await region.getByRole('status').getByText('Following live').waitFor();
    await page.unroute(/\/v1\/installs\/[^/]+\/logs\?/);
    assert.equal(asked[0]!.searchParams.get('follow'), 'true');
    assert.equal(asked[1]!.searchParams.get('since'), null, 'nothing shown yet: the tail');
    assert.equal(asked[2]!.searchParams.get('since'), String(listed.at(-1)!.time), 'from the second of the last line');
    // The server's stream starts again from that second, then sends what is new: once a line of a
    // later deploy shows, any line of that second shown again would be on screen before it.
    await log.locator('.log-line').nth(listed.length - 1).waitFor();
    const before = await shownLines(log);
    const applied = await log.locator('.log-line', { hasText: 'applied render' }).count();
    const etag = (await api(page, 'GET', `/v1/installs/${installId}`, undefined, ws)).body.etag;
    await succeeded(page, ws, await api(page, 'PATCH', `/v1/installs/${installId}`, { values: { replicas: 1 } }, ws, { 'if-match': etag }));
    await log.locator('.log-line', { hasText: 'applied render' }).nth(applied).waitFor();
    const after = await shownLines(log);
    assert.equal(before.length, listed.length, before.join('\n'));
    assert.deepEqual(after.slice(0, before.length), before);
    assert.equal(new Set(after).size, after.length, `no line twice:\n${after.join('\n')}`);
    assert.equal(await region.getByText('Trying again').count(), 0, 'the warning goes once the stream is back');
  });

  test('before any line, the log says it has none yet', async () => {
    // The page's first stream holds no line (a keepalive, then the connection ends); the next reaches the server.
    const logs = /\/v1\/installs\/[^/]+\/logs\?/;
    let served = false;
    await page.route(logs, (route) => {
      if (served) return route.continue();
      served = true;
      return route.fulfill({ status: 200, contentType: 'text/event-stream', body: ': keepalive\n\n' });
    });
    await open(page, installPath, 'hello on dev');
    const region = page.getByRole('region', { name: 'Logs' });
    await region.getByText('No log lines yet').waitFor();
    assert.equal(await region.getByRole('button', { name: 'Copy lines' }).isDisabled(), true, 'nothing to copy');
    await checkA11y(page, 'install logs (none yet)');
    await page.unroute(logs);
    await region.getByRole('log', { name: 'Log lines' }).getByText(/applied render/).first().waitFor();
  });

  test('an answer that trying again will not change stops the view, said for people; Follow again follows', async () => {
    const logs = /\/v1\/installs\/[^/]+\/logs\?/;
    let served = false;
    await page.route(logs, (route) => {
      if (served) return route.continue();
      served = true;
      const body = { error: { code: 'PERMISSION_DENIED', message: 'your role in this workspace may not read logs', request_id: 'req_test' } };
      return route.fulfill({ status: 403, contentType: 'application/json', body: JSON.stringify(body) });
    });
    await open(page, installPath, 'hello on dev');
    const region = page.getByRole('region', { name: 'Logs' });
    const alert = region.getByRole('alert');
    await alert.getByText('The logs could not be followed.').waitFor();
    await alert.getByText('your role in this workspace may not read logs').waitFor();
    await region.getByRole('status').getByText('Not following').waitFor();
    await checkA11y(page, 'install logs (refused)');
    await page.unroute(logs);
    await region.getByRole('button', { name: 'Follow again' }).click();
    await region.getByRole('log', { name: 'Log lines' }).getByText(/applied render/).first().waitFor();
    assert.equal(await alert.count(), 0);
  });

  test('a flood keeps the last 2,000 lines and says that older ones were dropped', async () => {
    const logs = /\/v1\/installs\/[^/]+\/logs\?/;
    const now = Math.floor(Date.now() / 1000);
    const flood = Array.from({ length: 2100 }, (_, n) => ({ time: now, timestamp: new Date(now * 1000).toISOString(), pod: 'flood-5d8f7c9b6d-x2k4q', container: 'flood', line: `flood ${n}` }));
    let served = false;
    await page.route(logs, (route) => {
      if (served) return route.continue();
      served = true;
      return route.fulfill({ status: 200, contentType: 'text/event-stream', body: flood.map((i) => `event: line\ndata: ${JSON.stringify(i)}\n\n`).join('') });
    });
    await open(page, installPath, 'hello on dev');
    const region = page.getByRole('region', { name: 'Logs' });
    const log = region.getByRole('log', { name: 'Log lines' });
    await log.getByText('flood 2099', { exact: true }).waitFor();
    await region.getByText('Older lines were dropped: this view keeps the last 2,000.').waitFor();
    await page.unroute(logs);
    assert.equal(await log.locator('.log-line').count(), 2000);
    assert.match(await log.locator('.log-line').first().innerText(), /flood 100$/);
    // The next tests start again from the install's own lines.
    await open(page, installPath, 'hello on dev');
    await log.getByText(/applied render/).first().waitFor();
  });

  test('Copy copies the lines shown; the container filter starts over with that container only', async () => {
    const region = page.getByRole('region', { name: 'Logs' });
    const log = region.getByRole('log', { name: 'Log lines' });
    await region.getByRole('button', { name: 'Copy lines' }).click();
    const all = await copiedText(page);
    assert.match(all, /^\S+ svc-local-cluster\/driver \| applied render/m);
    assert.match(all, /^\S+ web-\w+-\w+\/web \| /m);
    assert.equal(all.split('\n').length, await log.locator('.log-line').count());
    await region.getByRole('button', { name: 'Copied' }).waitFor();

    await region.getByLabel('Container').selectOption('driver');
    // The lines of every container stay until the new stream's replace them: wait for that, not
    // for a line both streams have.
    await page.waitForFunction(() => {
      const sources = [...document.querySelectorAll('[role="log"] .log-src')].map((e) => (e as HTMLElement).innerText);
      return sources.length > 0 && sources.every((s) => s === 'svc-local-cluster/driver');
    });
    await log.getByText(/applied render/).first().waitFor();
    assert.deepEqual([...new Set(await log.locator('.log-src').allInnerTexts())], ['svc-local-cluster/driver']);
    await page.evaluate(() => delete (window as unknown as { svcCopied?: string }).svcCopied);
    await region.getByRole('button', { name: 'Copy lines' }).click();
    const driver = await copiedText(page);
    assert.doesNotMatch(driver, / \| /, 'one container: the lines alone');
    assert.match(driver, /^\S+ applied render/m);
    await checkA11y(page, 'install logs (one container)');
    await region.getByLabel('Container').selectOption('');
    await log.locator('.log-src', { hasText: /^web…/ }).first().waitFor();
  });

  test('the logs read at 360 px wide, the log scrolling itself', async () => {
    const narrow = await web.signIn(ada, { width: 360 });
    await open(narrow, installPath, 'hello on dev');
    const region = narrow.getByRole('region', { name: 'Logs' });
    await region.getByRole('log', { name: 'Log lines' }).getByText(/applied render/).first().waitFor();
    assert.equal(await noOverflow(narrow), 0, 'no horizontal scrolling at 360 px');
    await checkA11y(narrow, 'install logs at 360 px');
    await region.evaluate((el) => el.scrollIntoView({ block: 'center' }));
    await shot(narrow, 'install-logs-narrow');
  });

  test('deleting the install ends the stream, and the page says so', async () => {
    const region = page.getByRole('region', { name: 'Logs' });
    const etag = (await api(page, 'GET', `/v1/installs/${installId}`, undefined, ws)).body.etag;
    const started = await api(page, 'DELETE', `/v1/installs/${installId}`, undefined, ws, { 'if-match': etag });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    await region.getByRole('status').getByText(/deleted/).waitFor({ timeout: 60_000 });
    assert.equal(await region.getByRole('button', { name: 'Follow again' }).count(), 0, 'nothing to follow again');
    await checkA11y(page, 'install logs ended');
  });
});

/** Waits until the element's attribute reads `value` (the page updates it after a scroll event). */
async function waitAttr(locator: Locator, name: string, value: string): Promise<void> {
  await locator.page().waitForFunction(([el, n, v]) => (el as Element).getAttribute(n as string) === v, [await locator.elementHandle(), name, value] as const);
}
