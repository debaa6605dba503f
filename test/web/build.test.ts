// Journey of the Build area: a person creates a secret, adds a version, reveals it after the
// audited-read confirmation (and the audit log has the read), disables and enables a version, has
// a stale write refused (409) and applies it again, destroys a version, deletes and restores the
// secret; a member sees the secret but not its values; a person writes a table snippet with an
// input, tries it unsaved, saves and runs it from its form and sees the table; a run's page; a stat
// snippet with its console lines; an edit through a 409; archiving and restoring; 360 px.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { api, checkA11y, expectValue, open, shot, skipReason, startWeb, type Web, type WebUser } from './harness.js';

/** A setup call through the harness's api(), which must succeed: its body. */
async function call<T = any>(page: Page, method: string, path: string, body?: unknown, workspace?: string, extra?: Record<string, string>): Promise<T> {
  const res = await api<T>(page, method, path, body, workspace, extra);
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const TABLE_CODE = `console.info('squares up to', inputs.count);
return Array.from({ length: inputs.count }, (_, i) => ({ n: i + 1, square: (i + 1) ** 2 }));`;
const TABLE_INPUTS = '[{"key": "count", "label": "How many", "kind": "number", "min": 1, "max": 50, "default": 3}]';

describe('web journey: secrets and snippets', { skip: skipReason }, () => {
  let web: Web;
  let ada: WebUser;
  let page: Page;
  let workspace: string;
  let secretPath: string;
  let snippetPath: string;

  before(async () => {
    web = await startWeb();
    ada = await web.user('Ada');
    page = await web.signIn(ada);
    workspace = (await call<{ id: string }>(page, 'POST', '/v1/workspaces', { name: 'Acme' })).id;
    await page.reload();
    await page.getByRole('combobox', { name: 'Workspace' }).waitFor();
  });
  after(() => web?.close());

  test('creating a secret: the value field is a password field with a Show toggle, and the value never reaches the URL', async () => {
    await open(page, '/secrets', 'Secrets');
    await checkA11y(page, 'secrets (empty)');
    await page.getByRole('link', { name: 'New secret' }).click();
    await page.getByRole('heading', { level: 1, name: 'New secret' }).waitFor();
    await page.getByLabel('Name').fill('registry-password');
    await page.getByLabel('Kind').selectOption('oci_registry');
    const value = page.getByLabel('Value (required)');
    assert.equal(await value.getAttribute('type'), 'password');
    await value.fill('first-value-1');
    await page.getByRole('button', { name: 'Show value' }).click();
    assert.equal(await page.getByLabel('Value (required)').inputValue(), 'first-value-1');
    await page.getByRole('button', { name: 'Show value' }).click();
    await checkA11y(page, 'new secret');
    await page.getByRole('button', { name: 'Create secret' }).click();
    await page.getByRole('heading', { level: 1, name: 'registry-password' }).waitFor();
    secretPath = new URL(page.url()).pathname;
    assert.match(secretPath, /^\/secrets\/sec_/);
    assert.doesNotMatch(page.url(), /first-value/);
    assert.equal(await page.evaluate(() => JSON.stringify(localStorage)).then((s) => s.includes('first-value')), false);
    await page.getByRole('cell', { name: 'Version 1', exact: true }).waitFor();
  });

  test('adding a version, then revealing it after the audited-read confirmation; Hide drops it; the audit log has the read', async () => {
    await page.getByLabel('New value').fill('second-value-2');
    await page.getByLabel('Comment').fill('rotated');
    await page.getByRole('button', { name: 'Add version' }).click();
    await page.getByRole('cell', { name: /Version 2/ }).waitFor();
    assert.equal(await page.getByLabel('New value').inputValue(), '', 'the form forgets the value once added');
    await checkA11y(page, 'secret page');
    await shot(page, 'secret');

    await page.getByRole('button', { name: 'Reveal version 2' }).click();
    const dialog = page.getByRole('dialog', { name: 'Reveal the value of version 2?' });
    await dialog.waitFor();
    assert.match((await dialog.textContent()) ?? '', /audit/);
    await checkA11y(page, 'reveal confirmation');
    await dialog.getByRole('button', { name: 'Reveal value' }).click();
    const revealed = page.getByLabel('Value of version 2');
    await revealed.waitFor();
    assert.equal(await revealed.inputValue(), 'second-value-2');
    assert.equal(await revealed.getAttribute('readonly'), '');
    await checkA11y(page, 'secret revealed');
    await shot(page, 'secret-revealed');
    await page.getByRole('button', { name: 'Hide' }).click();
    await revealed.waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.body.innerHTML.includes('second-value-2')), false);

    const secretId = secretPath.split('/').pop()!;
    const events = await call<{ data: { action: string; metadata: Record<string, string> }[] }>(page, 'GET', `/v1/audit_events?resource_id=${secretId}`, undefined, workspace);
    const access = events.data.filter((e) => e.action === 'secret.version.access');
    assert.equal(access.length, 1);
    assert.equal(access[0]!.metadata.version_number, '2');
  });

  test('disabling and enabling a version', async () => {
    const row = page.getByRole('row', { name: /Version 1/ });
    await page.getByRole('button', { name: 'Disable version 1' }).click();
    await row.getByText('Disabled', { exact: true }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Reveal version 1' }).count(), 0, 'a disabled version cannot be revealed');
    await page.getByRole('button', { name: 'Enable version 1' }).click();
    await row.getByText('Enabled', { exact: true }).waitFor();
    await page.getByText('2 enabled of 2').waitFor();
    await checkA11y(page, 'secret after enable');
  });

  test('a version changed since the page read it: the write is refused (409), the page says so and applies it again on request', async () => {
    const secretId = secretPath.split('/').pop()!;
    const versions = await call<{ data: { id: string; version_number: number }[] }>(page, 'GET', `/v1/secrets/${secretId}/versions`, undefined, workspace);
    const v1 = versions.data.find((v) => v.version_number === 1)!;
    // Someone else disables and enables it again: the same state, a newer etag.
    for (const action of ['disable', 'enable']) await call(page, 'POST', `/v1/secrets/${secretId}/versions/${v1.id}:${action}`, undefined, workspace, { 'if-match': '*' });
    await page.getByRole('button', { name: 'Disable version 1' }).click();
    const conflict = page.getByRole('alert').filter({ hasText: 'changed since this page loaded it' });
    await conflict.waitFor();
    await checkA11y(page, 'secret version conflict');
    await conflict.getByRole('button', { name: 'Apply my change again' }).click();
    await page.getByRole('row', { name: /Version 1/ }).getByText('Disabled', { exact: true }).waitFor();
    await conflict.waitFor({ state: 'detached' });
    await page.getByRole('button', { name: 'Enable version 1' }).click();
    await page.getByRole('row', { name: /Version 1/ }).getByText('Enabled', { exact: true }).waitFor();
  });

  test('a member sees the secret and its versions, with the admin actions disabled and the reason given', async () => {
    const bob = await web.user('Bob');
    await call(page, 'POST', `/v1/workspaces/${workspace}/members`, { email: bob.email, role: 'member' });
    const bobPage = await web.signIn(bob);
    await open(bobPage, secretPath, 'registry-password');
    await bobPage.getByRole('note').filter({ hasText: 'need the admin or owner role' }).waitFor();
    assert.equal(await bobPage.getByRole('button', { name: 'Reveal version 2' }).isDisabled(), true);
    assert.equal(await bobPage.getByRole('button', { name: 'Delete' }).isDisabled(), true);
    assert.equal(await bobPage.getByRole('button', { name: 'Add version' }).count(), 0);
    await checkA11y(bobPage, 'secret page as a member');
    await open(bobPage, '/secrets', 'Secrets');
    await bobPage.getByRole('link', { name: 'registry-password' }).waitFor();
    await open(page, '/secrets', 'Secrets');
    await checkA11y(page, 'secrets');
    await shot(page, 'secrets');
  });

  test('destroying a version, deleting the secret and restoring it, each after its confirmation', async () => {
    await open(page, secretPath, 'registry-password');
    await page.getByRole('button', { name: 'Destroy version 1' }).click();
    const destroy = page.getByRole('dialog', { name: 'Destroy version 1?' });
    await destroy.getByText('cannot be undone').waitFor();
    await destroy.getByRole('button', { name: 'Destroy version' }).click();
    await page.getByRole('row', { name: /Version 1/ }).getByText('Destroyed', { exact: true }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Enable version 1' }).count(), 0, 'destroyed is final');

    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('dialog', { name: 'Delete the secret registry-password?' }).getByRole('button', { name: 'Delete secret' }).click();
    await page.getByRole('status').filter({ hasText: 'destroyed for good' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Reveal version 2' }).isDisabled(), true, "a deleted secret's values cannot be read");
    await checkA11y(page, 'deleted secret');
    await page.getByRole('button', { name: 'Restore' }).click();
    await page.getByRole('button', { name: 'Delete', exact: true }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Reveal version 2' }).isDisabled(), false);
  });

  test('writing a table snippet with an input: a parse error shows at the field, Try it runs it unsaved, then it is saved', async () => {
    await open(page, '/snippets', 'Snippets');
    await checkA11y(page, 'snippets (empty)');
    await page.getByRole('link', { name: 'New snippet' }).click();
    await page.getByRole('heading', { level: 1, name: 'New snippet' }).waitFor();
    await page.getByLabel('Name').fill('Squares');
    await page.getByLabel('Display as').selectOption('table');
    await page.getByLabel('Code').fill(TABLE_CODE);
    await page.getByLabel('Inputs').fill('[{"key": "count",');
    await page.getByRole('button', { name: 'Save snippet' }).click();
    await page.getByText(/not valid JSON/).waitFor();
    assert.equal(new URL(page.url()).pathname, '/snippets/new', 'nothing was sent');
    await page.getByLabel('Inputs').fill(TABLE_INPUTS);

    const tryIt = page.getByRole('form', { name: 'Try it' });
    await tryIt.getByLabel('How many').fill('2');
    await tryIt.getByRole('button', { name: 'Run without saving' }).click();
    const tried = page.getByRole('table', { name: 'Output of the try' });
    await tried.waitFor();
    assert.equal(await tried.getByRole('row').count(), 3, 'a header and two rows');
    await checkA11y(page, 'new snippet, tried');

    await page.getByRole('button', { name: 'Save snippet' }).click();
    await page.getByRole('heading', { level: 1, name: 'Squares' }).waitFor();
    snippetPath = new URL(page.url()).pathname;
    assert.match(snippetPath, /^\/snippets\/snp_/);
  });

  test('running it from its form shows the table, and the run is listed', async () => {
    const form = page.getByRole('form', { name: 'Run the snippet' });
    await expectValue(form.getByLabel('How many'), '3', 'the input starts at its default');
    await form.getByLabel('How many').fill('4');
    await form.getByRole('button', { name: 'Run' }).click();
    const table = page.getByRole('table', { name: 'Output of Squares' });
    await table.waitFor();
    assert.deepEqual(await table.getByRole('columnheader').allTextContents(), ['n', 'square']);
    assert.deepEqual(await table.getByRole('row').last().getByRole('cell').allTextContents(), ['4', '16']);
    await page.getByText(/Console: 1 line/).waitFor();
    await page.getByRole('table', { name: 'Runs' }).getByText('Succeeded').waitFor();
    await checkA11y(page, 'snippet run (table)');
    await shot(page, 'snippet-run-table');
  });

  test("a run's page shows its state, duration, inputs and output", async () => {
    await page.getByRole('link', { name: 'Open this run' }).click();
    await page.getByRole('heading', { level: 1, name: 'Run of Squares' }).waitFor();
    await page.getByRole('table', { name: 'Output' }).waitFor();
    const inputs = page.getByRole('region', { name: 'Inputs' });
    assert.match((await inputs.textContent()) ?? '', /How many\s*4/);
    await page.getByRole('region', { name: 'Details' }).getByText('Duration').waitFor();
    await page.getByText('squares up to 4').waitFor({ state: 'attached' });
    await checkA11y(page, 'snippet run page');
    await shot(page, 'snippet-run');
    await page.getByRole('link', { name: /Squares/ }).first().click();
    await page.getByRole('heading', { level: 1, name: 'Squares' }).waitFor();
  });

  test('a stat snippet shows its value big, with its label; its logs are listed with their levels', async () => {
    await open(page, '/snippets/new', 'New snippet');
    await page.getByLabel('Name').fill('Answer');
    await page.getByLabel('Display as').selectOption('stat');
    await page.getByLabel('Code').fill("console.warn('careful'); console.log('thinking');\nreturn { value: 42000, label: 'The answer' };");
    await page.getByLabel('Inputs').fill('[]');
    await page.getByRole('button', { name: 'Save snippet' }).click();
    await page.getByRole('heading', { level: 1, name: 'Answer' }).waitFor();
    await page.getByRole('form', { name: 'Run the snippet' }).getByRole('button', { name: 'Run' }).click();
    const stat = page.getByRole('figure', { name: 'Output of Answer' });
    await stat.waitFor();
    assert.match((await stat.textContent()) ?? '', /42,?000\s*The answer/);
    await page.getByText(/Console: 2 lines, 1 warning/).click();
    const lines = page.getByRole('list', { name: 'Console lines' }).getByRole('listitem');
    assert.match((await lines.first().textContent()) ?? '', /warn\s+careful/);
    await checkA11y(page, 'snippet run (stat)');

    await open(page, '/snippets', 'Snippets');
    await page.getByRole('link', { name: 'Answer' }).waitFor();
    await checkA11y(page, 'snippets');
    await shot(page, 'snippets');
  });

  test('editing a snippet that changed meanwhile: 409, then the change applied again; archiving and restoring it', async () => {
    await open(page, snippetPath, 'Squares');
    const id = snippetPath.split('/').pop()!;
    await page.getByRole('button', { name: 'Edit' }).click();
    // Someone else changes the description while the form is open.
    await call(page, 'PATCH', `/v1/snippets/${id}`, { description: 'squares of 1..n' }, workspace, { 'if-match': '*' });
    await page.getByRole('region', { name: 'Edit' }).getByLabel('Name').fill('Squares table');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const conflict = page.getByRole('alert').filter({ hasText: 'changed since this page loaded it' });
    await conflict.waitFor();
    await page.getByRole('region', { name: 'Details' }).getByText('squares of 1..n').waitFor();
    await conflict.getByRole('button', { name: 'Apply my change again' }).click();
    await page.getByRole('heading', { level: 1, name: 'Squares table' }).waitFor();
    assert.equal(await page.getByRole('region', { name: 'Details' }).getByText('squares of 1..n').count(), 1, 'only the name was sent: the other change stays');

    await page.getByRole('button', { name: 'Archive' }).click();
    await page.getByText(/cannot run or be edited/).waitFor();
    assert.equal(await page.getByRole('form', { name: 'Run the snippet' }).getByRole('button', { name: 'Run' }).isDisabled(), true);
    await page.getByRole('button', { name: 'Restore' }).click();
    await page.getByRole('button', { name: 'Archive' }).waitFor();
  });

  test('readable at 360 px wide: the secret and the snippet pages do not scroll sideways', async () => {
    const narrow = await web.signIn(ada, { width: 360, colorScheme: 'dark' });
    for (const [path, heading] of [
      [secretPath, 'registry-password'],
      [snippetPath, 'Squares table'],
    ] as const) {
      await open(narrow, path, heading);
      const overflow = await narrow.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.equal(overflow, 0, `no horizontal scrolling at 360 px on ${path}`);
      await checkA11y(narrow, `${path} at 360 px, dark`);
    }
  });
});
