// Journey: a person registers a Kubernetes cluster (a stand-in API server) with the address of its
// gateway, is told at the field when the address is not one, then changes the gateway on the
// cluster's page and goes back to the API server's service proxy (issue 36, gateway_url).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startK8sStandin, standinKubeconfig, type K8sStandin } from '../k8s-standin.js';
import { api, checkA11y, open, shot, skipReason, startWeb, type Web, type WebUser } from './harness.js';

describe('web journey: a Kubernetes cluster and its gateway', { skip: skipReason }, () => {
  let web: Web;
  let ada: WebUser;
  let page: Page;
  let k8s: K8sStandin;
  let ws: string;

  before(async () => {
    k8s = await startK8sStandin();
    web = await startWeb();
    ada = await web.user('Ada');
    page = await web.signIn(ada);
    const created = await api(page, 'POST', '/v1/workspaces', { name: 'Acme' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ws = created.body.id;
    await page.reload();
    await page.getByRole('combobox', { name: 'Workspace' }).waitFor();
  });
  after(async () => {
    await web?.close();
    await k8s?.close();
  });

  test('registering with a gateway URL: a wrong one is refused at its field, a right one is shown on the cluster', async () => {
    await open(page, '/clusters/new', 'Register a cluster');
    await page.getByLabel('Name').fill('prod');
    await page.getByLabel('Provider').selectOption('kubernetes');
    await page.getByLabel('Kubeconfig').fill(standinKubeconfig(k8s.url));
    const gateway = page.getByLabel('Gateway URL');
    await gateway.fill('http://203.0.113.7/some/path');
    await page.getByRole('button', { name: 'Register cluster' }).click();
    await page.getByText('gateway_url must have no path, query or fragment').first().waitFor();
    assert.equal(await gateway.getAttribute('aria-invalid'), 'true');
    await checkA11y(page, 'register a kubernetes cluster (refused)');
    await gateway.fill('http://203.0.113.7');
    await page.getByRole('button', { name: 'Register cluster' }).click();
    const progress = page.getByRole('region', { name: /Registration/ });
    await progress.getByText('Succeeded').waitFor({ timeout: 60_000 });
    await page.getByRole('link', { name: 'Open the cluster' }).click();
    await page.getByRole('heading', { level: 1, name: 'prod' }).waitFor();
    const traffic = page.getByRole('region', { name: 'Traffic' });
    await traffic.getByText('sends this cluster\'s install URLs and preview hostnames to').waitFor();
    assert.equal(await traffic.locator('code').first().textContent(), 'http://203.0.113.7');
    await checkA11y(page, 'kubernetes cluster');
    await traffic.scrollIntoViewIfNeeded();
    await shot(page, 'cluster-gateway');
  });

  test('the cluster page changes the gateway, then goes back to the service proxy', async () => {
    const traffic = page.getByRole('region', { name: 'Traffic' });
    await traffic.getByLabel('Gateway URL').fill('https://gateway.example.com:8443');
    await traffic.getByRole('button', { name: 'Save gateway' }).click();
    await traffic.locator('code').filter({ hasText: 'https://gateway.example.com:8443' }).waitFor();
    const id = page.url().split('/').pop()!;
    const read = await api(page, 'GET', `/v1/clusters/${id}`, undefined, ws);
    assert.equal(read.body.gateway_url, 'https://gateway.example.com:8443', JSON.stringify(read.body));

    await traffic.getByRole('button', { name: 'Use the service proxy' }).click();
    await traffic.getByText('The preview router reaches this cluster\'s workloads through').waitFor();
    assert.equal(await traffic.getByRole('button', { name: 'Use the service proxy' }).count(), 0);
    assert.equal((await api(page, 'GET', `/v1/clusters/${id}`, undefined, ws)).body.gateway_url, null);
    await checkA11y(page, 'kubernetes cluster (service proxy)');
  });
});
