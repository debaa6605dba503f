// Journey: machines (issue 23). An owner opens a cluster, adds a server through the dialog (the
// command shown once, copied; the cloud-init in its disclosure), then a server joins with that
// token through the agent's own calls (plain fetch, as `svc machine join` makes them) and the
// open dialog says it joined; the machine page turns ACTIVE live with the first heartbeat and
// shows the server's facts; a rename with a stale etag shows the conflict and applies again;
// suspend and resume are followed live; a second bootstrap is revoked; keyboard only, axe and
// 360 px dark on the new pages; a member sees no owner-and-admin actions; delete -> gone, and the
// agent's next heartbeat is told its machine was deleted; a machine is provisioned (its server type
// refused first, then machine.create followed live) and is ACTIVE with its facts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { api, checkA11y, copiedText, noOverflow, open, recordClipboard, shot, skipReason, startWeb, tabTo, type Web, type WebUser } from './harness.js';

const FACTS = { hostname: 'build-host', os: 'linux', arch: 'x64', cpu_count: 4, memory_bytes: 8_254_390_272, kernel: '6.1.0-28-amd64', agent_version: '0.1.0' };

/** One of the agent's calls, made as the agent makes it: no session, no CSRF header, JSON. */
async function agentCall(base: string, path: string, body: unknown, credential?: string): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (credential) headers.authorization = `Bearer ${credential}`;
  const res = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

describe('web journey: machines', { skip: skipReason }, () => {
  let web: Web;
  let ada: WebUser;
  let page: Page;
  let ws: string;
  let clusterId: string;
  let machineId: string;
  let nodeName: string;
  let credential: string;

  before(async () => {
    // A long heartbeat interval: the machine stays reachable while the journey takes its time.
    web = await startWeb({ SVC_MACHINE_HEARTBEAT_S: '3600' });
    ada = await web.user('Ada');
    page = await web.signIn(ada);
    await recordClipboard(page, web.base);
    const created = await api(page, 'POST', '/v1/workspaces', { name: 'Acme' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ws = created.body.id;
    const op = await api(page, 'POST', '/v1/clusters', { name: 'dev' }, ws);
    assert.equal(op.status, 202, JSON.stringify(op.body));
    clusterId = op.body.owner_id;
    assert.equal((await api(page, 'POST', `/v1/operations/${op.body.id}:wait?timeout=60`, undefined, ws)).body.state, 'SUCCEEDED');
    await page.reload();
    await page.getByRole('combobox', { name: 'Workspace' }).waitFor();
  });
  after(() => web?.close());

  test('adding a server: the command is shown once and copied, and the open dialog sees the server join', async () => {
    await open(page, '/clusters', 'Clusters');
    await page.getByRole('link', { name: 'dev' }).click();
    await page.getByRole('heading', { level: 1, name: 'dev' }).waitFor();
    const machines = page.getByRole('region', { name: 'Machines' });
    await machines.getByText('No machines in this cluster yet.').waitFor();
    await machines.getByText('No worker bootstraps yet.').waitFor();
    await checkA11y(page, 'cluster with no machines');

    await machines.getByRole('button', { name: 'Add a server' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add a server to dev' });
    await dialog.getByLabel('The token works for').selectOption({ label: '1 hour' });
    await dialog.getByRole('button', { name: 'Create join command' }).click();
    const command = await dialog.getByLabel('Command').inputValue();
    assert.match(command, new RegExp(`machine join --server ${web.base} --token svcb_[0-9A-Za-z_-]{43}$`));
    await dialog.getByRole('status').filter({ hasText: 'shown only this once' }).waitFor();
    await dialog.getByRole('button', { name: 'Copy', exact: true }).first().click();
    await dialog.getByRole('button', { name: 'Copied' }).waitFor();
    assert.equal(await copiedText(page), command);
    await dialog.getByText('Cloud-init user data').click();
    assert.match(await dialog.getByLabel('Cloud-init').inputValue(), /^#cloud-config/);
    await dialog.getByText('Waiting for the server to join…').waitFor();
    await checkA11y(page, 'add-server dialog');

    // The server runs the command: the agent trades the token for its machine and credential.
    const token = /--token (svcb_\S+)/.exec(command)![1]!;
    const joined = await agentCall(web.base, '/v1/machine_joins', { token, facts: FACTS });
    assert.equal(joined.status, 201, JSON.stringify(joined.body));
    ({ machine_id: machineId, node_name: nodeName, credential } = joined.body);
    await dialog.getByText('Machine joined.').waitFor();
    await checkA11y(page, 'add-server dialog, joined');
    await shot(page, 'add-server');
    await dialog.getByRole('link', { name: 'Open the machine' }).click();
    await page.getByRole('heading', { level: 1, name: nodeName }).waitFor();
    await page.getByText('Waiting for its agent to join and send its first heartbeat.').waitFor();
  });

  test('the machine page turns ACTIVE live with the first heartbeat and shows the facts under human labels', async () => {
    const beat = await agentCall(web.base, '/v1/machine_heartbeats', { facts: FACTS }, credential);
    assert.equal(beat.status, 200, JSON.stringify(beat.body));
    assert.equal(beat.body.state, 'ACTIVE');
    // No reload: the page reads the machine again on its own.
    await page.getByText('A ready node of its cluster.').waitFor({ timeout: 30_000 });
    const details = page.getByRole('region', { name: 'Details' });
    await details.getByText('Active', { exact: true }).waitFor();
    await details.getByRole('link', { name: 'dev' }).waitFor();
    await details.getByText('Your own server').waitFor();
    const server = page.getByRole('region', { name: 'Server' });
    for (const [label, value] of [['CPUs', '4'], ['Memory', '7.7 GiB'], ['OS', 'Linux'], ['Kernel', '6.1.0-28-amd64'], ['Architecture', 'x64'], ['Agent version', '0.1.0']]) {
      const row = server.locator('div').filter({ has: page.getByRole('term').filter({ hasText: new RegExp(`^${label}$`) }) });
      assert.equal((await row.getByRole('definition').textContent())?.trim(), value, label);
    }
    await checkA11y(page, 'machine');
    await shot(page, 'machine');
  });

  test('a rename over a change made meanwhile is refused (409), shows the current machine and applies again', async () => {
    await page.getByLabel('Name', { exact: true }).fill('build-01');
    // Someone else sets its expiry while the person types.
    const current = await api(page, 'GET', `/v1/machines/${machineId}`, undefined, ws);
    const expiry = Math.floor(Date.now() / 1000) + 30 * 86400;
    const elsewhere = await api(page, 'PATCH', `/v1/machines/${machineId}`, { expires_at: expiry }, ws, { 'if-match': current.body.etag });
    assert.equal(elsewhere.status, 200, JSON.stringify(elsewhere.body));
    await page.getByRole('button', { name: 'Save changes' }).click();
    const conflict = page.getByRole('alert').filter({ hasText: 'The machine changed since this page loaded it.' });
    await conflict.waitFor();
    // The page shows the machine as it is now: with the expiry set meanwhile.
    await page.getByRole('region', { name: 'Details' }).getByText('next month').waitFor();
    await checkA11y(page, 'machine rename conflict');
    await conflict.getByRole('button', { name: 'Apply my change again' }).click();
    await page.getByRole('heading', { level: 1, name: 'build-01' }).waitFor();
    await conflict.waitFor({ state: 'detached' });
    const renamed = await api(page, 'GET', `/v1/machines/${machineId}`, undefined, ws);
    assert.equal(renamed.body.name, 'build-01');
    assert.equal(renamed.body.expires_at, expiry, 'the change made meanwhile is kept');
  });

  test('suspend and resume are operations followed live; the state follows', async () => {
    await page.getByRole('button', { name: 'Suspend' }).click();
    await page.getByRole('region', { name: /Suspension/ }).getByText('Succeeded').waitFor({ timeout: 60_000 });
    await page.getByText('Cordoned: no new work lands on it until it is resumed.').waitFor();
    await page.getByRole('region', { name: 'Details' }).getByText('Suspended', { exact: true }).waitFor();
    assert.equal((await api(page, 'GET', `/v1/machines/${machineId}`, undefined, ws)).body.state, 'SUSPENDED');
    assert.equal(await page.getByRole('button', { name: 'Suspend' }).count(), 0, 'a suspended machine offers Resume instead');
    await page.getByRole('region', { name: 'Operations' }).getByRole('link', { name: 'Machine suspend' }).waitFor();

    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByRole('region', { name: /Resumption/ }).getByText('Succeeded').waitFor({ timeout: 60_000 });
    await page.getByText('A ready node of its cluster.').waitFor();
    assert.equal((await api(page, 'GET', `/v1/machines/${machineId}`, undefined, ws)).body.state, 'ACTIVE');
    await checkA11y(page, 'machine after resume');
  });

  test('the cluster page lists the machine and its used bootstrap; another bootstrap is revoked after a confirmation', async () => {
    await open(page, `/clusters/${clusterId}`, 'dev');
    const machines = page.getByRole('region', { name: 'Machines' });
    const row = machines.getByRole('table', { name: 'Machines' }).getByRole('row').filter({ hasText: 'build-01' });
    await row.getByText('Active').waitFor();
    await machines.getByRole('table', { name: 'Worker bootstraps' }).getByRole('row').filter({ hasText: 'Used' }).getByRole('link', { name: machineId }).waitFor();

    await machines.getByRole('button', { name: 'Add a server' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add a server to dev' });
    await dialog.getByRole('button', { name: 'Create join command' }).click();
    await dialog.getByLabel('Command').waitFor();
    await dialog.getByRole('button', { name: 'Close' }).click();
    const bootstraps = machines.getByRole('table', { name: 'Worker bootstraps' });
    await bootstraps.getByRole('row').filter({ hasText: 'Active' }).getByRole('button', { name: /^Revoke/ }).click();
    await page.getByRole('dialog', { name: /^Revoke the bootstrap/ }).getByRole('button', { name: 'Revoke bootstrap' }).click();
    await bootstraps.getByRole('row').filter({ hasText: 'Revoked' }).waitFor();
    assert.equal(await bootstraps.getByRole('button', { name: /^Revoke/ }).count(), 0, 'nothing left to revoke');
    // The provisioning form opens in the section (its server types come from the compute provider).
    await machines.getByRole('button', { name: 'Provision a machine' }).click();
    const form = machines.getByRole('form', { name: 'Provision a machine' });
    await form.getByLabel('Server type').waitFor();
    await form.getByLabel('Expires').selectOption({ label: 'On a date…' });
    await form.getByLabel('Deletion date').waitFor();
    await checkA11y(page, 'cluster with machines and the provisioning form');
    await form.getByRole('button', { name: 'Cancel' }).click();
    await form.waitFor({ state: 'detached' });
    await machines.scrollIntoViewIfNeeded();
    await shot(page, 'cluster-machines');
  });

  test('keyboard only: the dialog opens and closes from the keyboard, the machines list reaches the machine page', async () => {
    await open(page, `/clusters/${clusterId}`, 'dev');
    await tabTo(page, 'Add a server');
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Add a server to dev' });
    await dialog.waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.closest('dialog') !== null), true, 'focus moved into the dialog');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    assert.equal(await page.evaluate(() => document.activeElement?.textContent?.trim()), 'Add a server', 'focus returned to the button');

    await open(page, '/machines', 'Machines');
    await page.getByRole('link', { name: 'build-01' }).waitFor();
    await checkA11y(page, 'machines');
    await tabTo(page, 'build-01', 80);
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.tagName === 'H1' && document.activeElement.textContent === 'build-01');
    await tabTo(page, 'Suspend');
    await page.keyboard.press('Enter');
    await page.getByRole('region', { name: /Suspension/ }).getByText('Succeeded').waitFor({ timeout: 60_000 });
    await tabTo(page, 'Resume', 80);
    await page.keyboard.press('Enter');
    await page.getByRole('region', { name: /Resumption/ }).getByText('Succeeded').waitFor({ timeout: 60_000 });
  });

  test('the machines list filters by cluster and state', async () => {
    await open(page, '/machines', 'Machines');
    const table = page.getByRole('table', { name: 'Machines' });
    await table.getByRole('link', { name: 'build-01' }).waitFor();
    await page.getByLabel('State').selectOption({ label: 'Suspended' });
    await page.getByText('No machines match these filters.').waitFor();
    await page.getByLabel('State').selectOption({ label: 'Active' });
    await page.getByLabel('Cluster').selectOption({ label: 'dev' });
    await table.getByRole('link', { name: 'build-01' }).waitFor();
  });

  test('readable at 360 px wide, in dark mode', async () => {
    const narrow = await web.signIn(ada, { width: 360, colorScheme: 'dark' });
    for (const [path, heading] of [['/machines', 'Machines'], [`/clusters/${clusterId}`, 'dev'], [`/machines/${machineId}`, 'build-01']]) {
      await open(narrow, path!, heading!);
      await narrow.getByRole('table').first().waitFor();
      assert.equal(await noOverflow(narrow), 0, `no horizontal scrolling at 360 px on ${path}`);
      await checkA11y(narrow, `${heading} at 360 px, dark`);
    }
    await narrow.getByRole('region', { name: 'Server' }).waitFor();
    await shot(narrow, 'machine-narrow-dark');
  });

  test('a member sees the machine and the cluster, without the owner-and-admin actions', async () => {
    const bob = await web.user('Bob');
    assert.equal((await api(page, 'POST', `/v1/workspaces/${ws}/members`, { email: bob.email, role: 'member' }, ws)).status, 201);
    const asBob = await web.signIn(bob);
    await open(asBob, `/clusters/${clusterId}`, 'dev');
    await asBob.getByText('Only owners and admins can add servers or provision machines').waitFor();
    assert.equal(await asBob.getByRole('button', { name: 'Add a server' }).count(), 0);
    await open(asBob, `/machines/${machineId}`, 'build-01');
    await asBob.getByRole('region', { name: 'Server' }).getByText('7.7 GiB').waitFor();
    assert.equal(await asBob.getByRole('button', { name: 'Delete' }).count(), 0);
    await checkA11y(asBob, 'machine (member)');
  });

  test('deleting the machine is confirmed and followed live; it is gone and its agent is told so', async () => {
    await open(page, `/machines/${machineId}`, 'build-01');
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog', { name: 'Delete the machine build-01?' }).getByRole('button', { name: 'Delete machine' }).click();
    await page.getByRole('heading', { level: 1, name: 'Machines' }).waitFor({ timeout: 60_000 });
    await page.getByText('No machines yet.').waitFor();
    assert.equal((await api(page, 'GET', `/v1/machines/${machineId}`, undefined, ws)).status, 404);
    const beat = await agentCall(web.base, '/v1/machine_heartbeats', {}, credential);
    assert.equal(beat.status, 401);
    assert.equal(beat.body.error.reason, 'MACHINE_DELETED');
  });

  test('provisioning a machine: a type the provider lacks is refused at its field with those it has; machine.create is followed live', async () => {
    await open(page, `/clusters/${clusterId}`, 'dev');
    const machines = page.getByRole('region', { name: 'Machines' });
    await machines.getByRole('button', { name: 'Provision a machine' }).click();
    const form = machines.getByRole('form', { name: 'Provision a machine' });
    await form.getByLabel('Server type').fill('huge');
    await form.getByLabel('Name', { exact: true }).fill('ci-runner');
    await form.getByRole('button', { name: 'Provision machine' }).click();
    await form.getByText('the local compute provider offers local-small, local-medium, local-large', { exact: true }).waitFor();
    assert.equal(await form.getByLabel('Server type').getAttribute('aria-invalid'), 'true');
    await checkA11y(page, 'provisioning form with a refused server type');
    await form.getByLabel('Server type').fill('local-small');
    await form.getByRole('button', { name: 'Provision machine' }).click();
    await machines.getByRole('region', { name: /Provisioning/ }).getByText('Succeeded').waitFor({ timeout: 90_000 });
    await machines.getByRole('table', { name: 'Machines' }).getByRole('row').filter({ hasText: 'ci-runner' }).getByText('Active').waitFor();
    await machines.getByRole('link', { name: 'Open the new machine' }).click();
    await page.getByRole('heading', { level: 1, name: 'ci-runner' }).waitFor();
    const details = page.getByRole('region', { name: 'Details' });
    await details.getByText('Provisioned by the service').waitFor();
    await details.getByText('local-small').waitFor();
    await page.getByRole('region', { name: 'Server' }).getByText('2.0 GiB').waitFor();
    await checkA11y(page, 'provisioned machine');
  });
});
