// Journey: the deploy area. A person creates a package, publishes a version (a broken JSON is
// refused at its field before anything is sent, then the API's violation shows at its field),
// installs it from the form made from its input schema and watches the operation finish live,
// opens the install and follows its URL to the preview router, binds and releases a preview
// hostname, updates the inputs through a 409, cancels a slow install on the page, filters the
// operations and installs lists, deletes the install; a member sees the pages without the
// owner-only actions. Clusters and the workspace are made through the API from the page, as the
// clusters journey already covers their pages.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { api, checkA11y, expectValue, open, shot, skipReason, startWeb, type Web, type WebUser } from './harness.js';

/** GET of a preview URL at 127.0.0.1 with its Host header (*.localhost resolves to this machine, as the README says). */
function preview(url: string): Promise<{ status: number; body: any }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: u.port || 80, path: u.pathname, headers: { host: u.host } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Waits until no row of the table shows `text`: the filter's page replaced the one before. */
const gone = (rows: Locator, text: string) => rows.filter({ hasText: text }).first().waitFor({ state: 'detached' });

const SCHEMA = {
  type: 'object',
  properties: {
    greeting: { type: 'string', title: 'Greeting', maxLength: 50, default: 'hello', description: 'what the page says' },
    replicas: { type: 'integer', title: 'Replicas', minimum: 1, maximum: 10, default: 1 },
  },
  required: ['greeting'],
  additionalProperties: false,
};
const MANIFEST = {
  routes: [{ route_key: 'web' }],
  resources: [
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: '{{ values.replicas }}' } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'page' }, data: { greeting: '{{ values.greeting }}' } },
  ],
};

describe('web journey: packages, versions, installs, operations', { skip: skipReason }, () => {
  let web: Web;
  let ada: WebUser;
  let page: Page;
  let ws: string;
  let installPath: string;

  before(async () => {
    web = await startWeb();
    ada = await web.user('Ada');
    page = await web.signIn(ada);
    const created = await api(page, 'POST', '/v1/workspaces', { name: 'Acme' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ws = created.body.id;
    // dev deploys at once; slow never gets healthy (its readiness check keeps failing), so its install stays RUNNING until cancelled.
    for (const body of [{ name: 'dev' }, { name: 'slow', local: { faults: [{ action: 'health', fail_times: 100 }] } }]) {
      const op = await api(page, 'POST', '/v1/clusters', body, ws);
      assert.equal(op.status, 202, JSON.stringify(op.body));
      assert.equal((await api(page, 'POST', `/v1/operations/${op.body.id}:wait?timeout=60`, undefined, ws)).body.state, 'SUCCEEDED');
    }
    await page.reload();
    await page.getByRole('combobox', { name: 'Workspace' }).waitFor();
  });
  after(() => web?.close());

  test('a package is created from the packages page', async () => {
    await open(page, '/packages', 'Packages');
    await checkA11y(page, 'packages (empty)');
    await page.getByRole('link', { name: 'Create a package' }).click();
    await page.getByLabel('Name').fill('hello');
    await page.getByLabel('Description').fill('A page that says hello');
    await page.getByRole('button', { name: 'Create package' }).click();
    await page.getByRole('heading', { level: 1, name: 'hello' }).waitFor();
    await page.getByText('No versions yet').waitFor();
    await checkA11y(page, 'package (no versions)');
  });

  test('publishing a version: broken JSON is refused at its field, then the API names its field, then it publishes', async () => {
    await page.getByRole('link', { name: 'Publish a version' }).click();
    await page.getByRole('heading', { level: 1, name: 'Publish a version of hello' }).waitFor();
    const manifest = page.getByLabel('Manifest (JSON)');
    await manifest.fill('{"routes": [');
    await page.getByRole('button', { name: 'Publish version' }).click();
    await page.getByText(/^not valid JSON/).waitFor();
    assert.equal(await manifest.getAttribute('aria-invalid'), 'true');
    const pkgId = page.url().split('/')[4]!;
    assert.deepEqual((await api(page, 'GET', `/v1/packages/${pkgId}/versions`, undefined, ws)).body.data, [], 'nothing was sent');

    await manifest.fill(JSON.stringify({ routes: [{ route_key: 'web' }, { route_key: 'web' }] }));
    await page.getByRole('button', { name: 'Publish version' }).click();
    await page.getByText('routes.1.route_key: route_key "web" appears more than once').waitFor();
    assert.equal(await manifest.getAttribute('aria-invalid'), 'true');
    await checkA11y(page, 'version-publish');
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot(page, 'version-publish');

    await page.getByLabel('Input schema (JSON)').fill(JSON.stringify(SCHEMA, null, 2));
    await manifest.fill(JSON.stringify(MANIFEST, null, 2));
    await page.getByRole('button', { name: 'Publish version' }).click();
    await page.getByRole('heading', { level: 1, name: 'hello 1.0.0' }).waitFor();
    await page.getByRole('heading', { name: 'Input schema' }).waitFor();
    await checkA11y(page, 'version');

    await page.getByRole('link', { name: '← hello' }).click();
    await page.getByRole('link', { name: '1.0.0' }).waitFor();
    await page.getByRole('cell', { name: 'Latest release' }).waitFor();
    await checkA11y(page, 'package');
    await shot(page, 'package');
    await open(page, '/packages', 'Packages');
    await page.getByRole('link', { name: 'hello', exact: true }).waitFor();
    await checkA11y(page, 'packages');
    await shot(page, 'packages');
  });

  test('installing from the form made from the input schema: a bad value is shown at its field, then the operation finishes live', async () => {
    await page.getByRole('link', { name: 'hello', exact: true }).click();
    await page.getByRole('link', { name: '1.0.0' }).click();
    await page.getByRole('link', { name: 'Install this version' }).click();
    await page.getByRole('heading', { level: 1, name: 'Install a package' }).waitFor();
    await expectValue(page.getByLabel('Version'), '1.0.0', 'the version the link named');
    await page.getByLabel('Cluster').selectOption({ label: 'dev' });
    await expectValue(page.getByLabel('Greeting'), 'hello', 'the schema default');
    await page.getByLabel('Greeting').fill('hi from the web');
    await page.getByLabel('Replicas').fill('50');
    await page.getByRole('button', { name: 'Install', exact: true }).click();
    await page.getByText('must be <= 10', { exact: true }).waitFor();
    assert.equal(await page.getByLabel('Replicas').getAttribute('aria-invalid'), 'true');
    await checkA11y(page, 'install-new');
    await shot(page, 'install-new');

    await page.getByLabel('Replicas').fill('2');
    await page.getByRole('button', { name: 'Install', exact: true }).click();
    const progress = page.getByRole('region', { name: /Installation/ });
    await progress.getByText('Succeeded').waitFor({ timeout: 60_000 });
    assert.ok((await progress.getByRole('list', { name: 'Steps' }).getByRole('listitem').count()) >= 5);
    await checkA11y(page, 'installation');
    await page.getByRole('link', { name: 'Open the install' }).click();
    installPath = new URL(page.url()).pathname;
  });

  test('the install page: healthy, linked to its package, version and cluster, its URL opens the preview', async () => {
    await page.getByRole('heading', { level: 1, name: 'hello on dev' }).waitFor();
    const details = page.getByRole('region', { name: 'Details' });
    await details.getByText('Healthy', { exact: true }).waitFor();
    assert.match((await details.getByRole('link', { name: 'dev' }).getAttribute('href')) ?? '', /^\/clusters\/clu_\w+$/);
    assert.match((await details.getByRole('link', { name: 'hello' }).getAttribute('href')) ?? '', /^\/packages\/pkg_\w+$/);
    assert.match((await details.getByRole('link', { name: '1.0.0' }).getAttribute('href')) ?? '', /^\/packages\/pkg_\w+\/versions\/pkv_\w+$/);
    const link = page.getByRole('region', { name: 'URLs' }).getByRole('link');
    assert.equal(await link.getAttribute('target'), '_blank');
    assert.match((await link.getAttribute('rel')) ?? '', /\bnoopener\b/);
    const href = (await link.getAttribute('href'))!;
    const installId = installPath.split('/')[2]!;
    const answer = await preview(href);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.install_id, installId);

    const renders = page.getByRole('region', { name: 'Renders' });
    await renders.getByText('Current').waitFor();
    await renders.getByRole('button', { name: /Show/ }).click();
    await renders.getByText('hi from the web').waitFor();
    await page.getByRole('region', { name: 'Operations' }).getByRole('link', { name: 'Install create' }).waitFor();
    await checkA11y(page, 'install');
    await shot(page, 'install');
  });

  test('a preview hostname is bound to the current render, answers, and is released', async () => {
    const section = page.getByRole('region', { name: 'Preview hostnames' });
    await section.getByLabel('Track').fill('main');
    await section.getByRole('button', { name: 'Bind hostname' }).click();
    await section.getByRole('region', { name: /Binding/ }).getByText('Succeeded').waitFor({ timeout: 60_000 });
    const link = section.getByRole('link', { name: /^main--/ });
    assert.equal((await preview((await link.getAttribute('href'))!)).status, 200);
    await checkA11y(page, 'install with a preview hostname');
    await section.getByRole('button', { name: /^Release main--/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Release hostname' }).click();
    await section.getByRole('region', { name: /Release/ }).getByText('Succeeded').waitFor({ timeout: 60_000 });
    await section.getByText('No preview hostnames').waitFor();
  });

  test('updating the inputs: a change made elsewhere meanwhile is a conflict, shown, and applied again', async () => {
    const installId = installPath.split('/')[2]!;
    const form = page.getByRole('region', { name: 'Update inputs' });
    await form.getByLabel('Greeting').fill('hello again');
    // Someone else updates the install meanwhile (with its current etag).
    const etag = (await api(page, 'GET', `/v1/installs/${installId}`, undefined, ws)).body.etag;
    const other = (await api(page, 'PATCH', `/v1/installs/${installId}`, { values: { greeting: 'changed elsewhere' } }, ws, { 'if-match': etag })).body;
    assert.equal((await api(page, 'POST', `/v1/operations/${other.id}:wait?timeout=60`, undefined, ws)).body.state, 'SUCCEEDED');

    await form.getByRole('button', { name: 'Update install' }).click();
    await form.getByText('The install changed since this page loaded it.').waitFor();
    await page.getByRole('region', { name: 'Details' }).getByText('changed elsewhere').waitFor();
    await checkA11y(page, 'install conflict');
    await form.getByRole('button', { name: 'Apply my change again' }).click();
    await page.getByRole('region', { name: /^Update/ }).filter({ has: page.getByRole('list', { name: 'Steps' }) }).getByText('Succeeded').waitFor({ timeout: 60_000 });
    await page.getByRole('region', { name: 'Details' }).getByText('hello again').waitFor();
  });

  test('a slow install is cancelled on the page and ends CANCELLED; the operations list filters by state', async () => {
    await open(page, '/installs/new', 'Install a package');
    await page.getByLabel('Cluster').selectOption({ label: 'slow' });
    await page.getByRole('button', { name: 'Install', exact: true }).click();
    const progress = page.getByRole('region', { name: /Installation/ });
    await progress.getByText('Retrying after an error').waitFor({ timeout: 60_000 });
    await progress.getByRole('button', { name: 'Cancel operation' }).click();
    await progress.getByText('Cancelled', { exact: true }).waitFor({ timeout: 60_000 });

    await open(page, '/operations', 'Operations');
    const rows = page.getByRole('table', { name: 'Operations' }).getByRole('row');
    await rows.filter({ hasText: 'Succeeded' }).first().waitFor();
    await page.getByLabel('State').selectOption('CANCELLED');
    await gone(rows, 'Succeeded');
    assert.deepEqual(await rows.allInnerTexts().then((t) => t.slice(1).map((r) => r.split('\t').slice(0, 3).join(' | '))), ['Install create | install | Cancelled']);
    await page.getByLabel('State').selectOption('SUCCEEDED');
    await gone(rows, 'Cancelled');
    await rows.filter({ hasText: 'Install update' }).first().waitFor();
    await checkA11y(page, 'operations');
    await shot(page, 'operations');
    await page.getByLabel('State').selectOption('CANCELLED');
    await gone(rows, 'Succeeded');
    await rows.getByRole('link', { name: 'Install create' }).click();
    await page.getByRole('heading', { level: 1, name: 'Install create' }).waitFor();
    await page.getByRole('region', { name: /Progress/ }).getByText('Cancelled', { exact: true }).waitFor();
    await checkA11y(page, 'operation');
    await shot(page, 'operation');
  });

  test('the installs list filters by cluster, package and state', async () => {
    await open(page, '/installs', 'Installs');
    const rows = page.getByRole('table', { name: 'Installs' }).getByRole('row');
    await rows.nth(2).waitFor();
    assert.equal(await rows.count(), 3);
    await page.getByLabel('State').selectOption('failed');
    await gone(rows, 'Healthy');
    assert.equal(await rows.count(), 2, 'the cancelled install failed');
    await rows.filter({ hasText: 'slow' }).waitFor();
    await page.getByLabel('State').selectOption('');
    await page.getByLabel('Cluster').selectOption({ label: 'dev' });
    await gone(rows, 'Failed');
    await rows.filter({ hasText: 'Healthy' }).waitFor();
    assert.equal(await rows.count(), 2);
    await page.getByLabel('State').selectOption('degraded');
    await page.getByText('No installs match these filters.').waitFor();
    await checkA11y(page, 'installs');
    await shot(page, 'installs');
  });

  test('the home page shows the workspace at a glance: installs and their health, operations, quotas, notifications', async () => {
    await page.getByRole('link', { name: 'Home' }).click();
    await page.getByRole('heading', { level: 2, name: 'Installs' }).waitFor();
    const installs = page.getByRole('region', { name: 'Installs' }).getByRole('table', { name: 'Installs' });
    await installs.getByRole('row').filter({ hasText: 'Healthy' }).first().waitFor();
    await page.getByRole('region', { name: 'Running operations' }).getByText('Nothing running.').waitFor();
    await page.getByRole('region', { name: 'Recently failed' }).waitFor();
    // The quotas load on their own request; wait for the bars rather than count them at once.
    await page.getByRole('region', { name: 'Quotas' }).getByRole('meter').first().waitFor();
    await page.getByRole('region', { name: 'Unread notifications' }).waitFor();
    await checkA11y(page, 'home');
    await shot(page, 'home');
    await installs.getByRole('link').first().click();
    await page.getByRole('region', { name: 'Details' }).waitFor();
  });

  test('the install page reads at 360 px wide; deleting it is confirmed and followed live', async () => {
    const narrow = await web.signIn(ada, { width: 360 });
    await open(narrow, installPath, 'hello on dev');
    await narrow.getByRole('region', { name: 'Renders' }).getByText('Current').waitFor();
    assert.equal(await narrow.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), 0, 'no horizontal scrolling at 360 px');
    await checkA11y(narrow, 'install at 360 px');

    await open(page, installPath, 'hello on dev');
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete install' }).click();
    await page.getByRole('heading', { level: 1, name: 'Installs' }).waitFor({ timeout: 60_000 });
    assert.equal((await api(page, 'GET', `/v1${installPath}`, undefined, ws)).status, 404);
  });

  test('a member sees packages and installs, but not the owner-and-admin actions', async () => {
    const bob = await web.user('Bob');
    assert.equal((await api(page, 'POST', `/v1/workspaces/${ws}/members`, { email: bob.email, role: 'member' }, ws)).status, 201);
    const asBob = await web.signIn(bob);
    await open(asBob, '/packages', 'Packages');
    await asBob.getByText('Only owners and admins can create packages').waitFor();
    assert.equal(await asBob.getByRole('link', { name: 'Create a package' }).count(), 0);
    await asBob.getByRole('link', { name: 'hello', exact: true }).click();
    await asBob.getByText('Only owners and admins can publish versions').waitFor();
    assert.equal(await asBob.getByRole('link', { name: 'Install', exact: true }).count(), 1, 'members install');
    await checkA11y(asBob, 'package (member)');
  });
});
