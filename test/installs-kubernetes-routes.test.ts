// Traffic to an install on a kubernetes cluster, through HTTP, the workers and the kubernetes driver,
// against the stand-in Kubernetes API server: installing applies an HTTPRoute attached to the
// cluster's Gateway (an Ingress on a cluster without the Gateway API) holding the install URL's
// hostname; binding a preview hostname adds it to the route, releasing it removes it; a crashing
// container fails the install with its reason and message; a route naming no Service is refused.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { installNamespace } from '../src/drivers/cluster/driver.js';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';
import { readyStatus, standinKubeconfig, startK8sStandin, type K8sStandin } from './k8s-standin.js';
import { assertOperationInvariants } from './operation-invariants.js';

const SCHEMA = { type: 'object', properties: {}, additionalProperties: false };

function manifest(image = 'nginx:1.27', env: unknown[] = []) {
  return {
    routes: [{ route_key: 'web', service: { name: 'web', port: 80 } }],
    resources: [
      {
        apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' },
        spec: {
          replicas: 2, selector: { matchLabels: { app: 'web' } },
          template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image, env, ports: [{ containerPort: 8080 }] }] } },
        },
      },
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] } },
    ],
  };
}

type RouteObject = { spec: { hostnames: string[]; parentRefs: unknown[]; ingressClassName: string; rules: { host: string }[] } };

describe('installs on a kubernetes cluster: route objects and rollout failures', () => {
  let t: TestApp;
  let alice: TestUser;
  let ws: string;
  let gw: K8sStandin;
  let plain: K8sStandin;
  let gwCluster: string;
  let plainCluster: string;

  const call = (method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}): Promise<Response> =>
    t.request(method, url, { token: alice.token, ...opts, headers: { 'svc-context': ws, ...opts.headers } });

  async function waitOp(id: string) {
    const res = await call('POST', `/v1/operations/${id}:wait?timeout=60`);
    assert.equal(res.status, 200, res.text);
    assertOperationInvariants(res.body);
    assert.equal(res.body.done, true, res.text);
    return res.body;
  }

  async function cluster(name: string, k8s: K8sStandin): Promise<string> {
    const res = await call('POST', '/v1/clusters', { body: { name, provider: 'kubernetes', kubeconfig: standinKubeconfig(k8s.url) } });
    assert.equal(res.status, 202, res.text);
    assert.equal((await waitOp(res.body.id)).state, 'SUCCEEDED');
    return res.body.owner_id;
  }

  async function publish(name: string, m: unknown): Promise<Response> {
    const pkg = await call('POST', '/v1/packages', { body: { name } });
    assert.equal(pkg.status, 201, pkg.text);
    const version = await call('POST', `/v1/packages/${pkg.body.id}/versions`, { body: { semver: '1.0.0', input_schema: SCHEMA, manifest: m } });
    return Object.assign(version, { packageId: pkg.body.id as string });
  }

  async function install(packageId: string, clusterId: string) {
    const res = await call('POST', '/v1/installs', { body: { package_id: packageId, package_version_pin: { kind: 'latest' }, cluster_id: clusterId } });
    assert.equal(res.status, 202, res.text);
    return { installId: res.body.owner_id as string, done: await waitOp(res.body.id) };
  }

  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
    ws = (await t.workspace(alice, 'A')).id;
    gw = await startK8sStandin();
    plain = await startK8sStandin({ gatewayApi: false });
    // Every workload is ready as soon as it is applied; what is tested is routing and pods.
    gw.objects.statusFor = readyStatus;
    plain.objects.statusFor = readyStatus;
    gwCluster = await cluster('with-gateway', gw);
    plainCluster = await cluster('ingress-only', plain);
  });
  after(async () => {
    await gw.close();
    await plain.close();
    await t.close();
  });

  test('an HTTPRoute on the Gateway holds the install URL\'s hostname; binding a preview hostname adds it, releasing removes it', async () => {
    const version = await publish('routed', manifest());
    assert.equal(version.status, 201, version.text);
    const { installId, done } = await install((version as Response & { packageId: string }).packageId, gwCluster);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    const ns = installNamespace(installId);
    const installHost = new URL(done.response.urls[0].url).hostname;
    const route = () => gw.objects.get('gateway.networking.k8s.io/v1', 'HTTPRoute', ns, 'svc-route-web') as RouteObject | undefined;
    assert.deepEqual(route()?.spec.hostnames, [installHost]);
    assert.deepEqual(route()!.spec.parentRefs, [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'public-gw' }]);

    const bind = await call('POST', `/v1/installs/${installId}/preview_hostnames:bindFloating`, {
      headers: { 'idempotency-key': randomUUID() }, body: { track: 'feature-x', render_id: done.response.render_id },
    });
    assert.equal(bind.status, 202, bind.text);
    const bound = await waitOp(bind.body.id);
    assert.equal(bound.state, 'SUCCEEDED', JSON.stringify(bound));
    assert.deepEqual(bound.steps.map((s: { name: string }) => s.name), ['check_render', 'activate', 'route']);
    const preview = bound.response.hostname as string;
    assert.deepEqual(route()!.spec.hostnames, [installHost, preview]);

    const hostnames = await call('GET', `/v1/installs/${installId}/preview_hostnames`);
    const release = await call('DELETE', `/v1/installs/${installId}/preview_hostnames/${hostnames.body.data[0].id}`, { headers: { 'if-match': '*' } });
    assert.equal(release.status, 202, release.text);
    const released = await waitOp(release.body.id);
    assert.equal(released.state, 'SUCCEEDED', JSON.stringify(released));
    assert.equal(released.steps.find((s: { name: string }) => s.name === 'route').status, 'completed');
    assert.deepEqual(route()!.spec.hostnames, [installHost]);

    const detail = await call('GET', `/v1/installs/${installId}`);
    const del = await call('DELETE', `/v1/installs/${installId}`, { headers: { 'if-match': detail.body.etag } });
    assert.equal((await waitOp(del.body.id)).state, 'SUCCEEDED');
    assert.equal(route(), undefined, 'the namespace went, and the route with it');
  });

  test('on a cluster without the Gateway API: an Ingress of its default class', async () => {
    const version = await publish('ingressed', manifest());
    const { installId, done } = await install((version as Response & { packageId: string }).packageId, plainCluster);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    const ingress = plain.objects.get('networking.k8s.io/v1', 'Ingress', installNamespace(installId), 'svc-route-web') as RouteObject;
    assert.equal(ingress.spec.ingressClassName, 'nginx');
    assert.deepEqual(ingress.spec.rules.map((r) => r.host), [new URL(done.response.urls[0].url).hostname]);
  });

  test('a crashing container fails install.create with its reason and last message in the step\'s error', async () => {
    const version = await publish('crashing', manifest('fail.example/crashloop:2', [{ name: 'STANDIN_EXIT_MESSAGE', value: 'panic: DATABASE_URL is not set' }]));
    const { installId, done } = await install((version as Response & { packageId: string }).packageId, gwCluster);
    assert.equal(done.state, 'FAILED', JSON.stringify(done));
    const step = done.steps.find((s: { name: string }) => s.name === 'wait_healthy');
    assert.equal(step.status, 'failed');
    assert.equal(step.attempts, 1, 'a crash loop is not waited out');
    assert.match(step.error_message, /pod web-[b-z2-9]{10}-[b-z2-9]{5} container web: CrashLoopBackOff: back-off .*; last run ended: Error \(exit code 1\): panic: DATABASE_URL is not set/);
    assert.match(done.error.message, /CrashLoopBackOff/);
    assert.equal((await call('GET', `/v1/installs/${installId}`)).body.state, 'failed');
  });

  test('a route naming no Service of the manifest is refused at publish', async () => {
    const m = manifest();
    m.routes[0]!.service.name = 'frontend';
    const res = await publish('unrouted', m);
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.reason, 'MANIFEST_INVALID');
    assert.deepEqual(res.body.error.field_violations.map((v: { field: string }) => v.field), ['body.manifest.routes.0.service.name']);
  });
});
