// An install on a kubernetes cluster, end to end through HTTP, the workers and the kubernetes driver,
// against the stand-in Kubernetes API server: the package's objects are applied into the install's
// namespace, the operation waits until the stand-in reports the Deployment ready, and deleting the
// install deletes the namespace. A manifest the API server rejects fails the install with its message.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { installNamespace } from '../src/drivers/cluster/driver.js';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';
import { readyStatus, standinKubeconfig, startK8sStandin, type K8sStandin } from './k8s-standin.js';
import { assertOperationInvariants } from './operation-invariants.js';

const SCHEMA = { type: 'object', properties: { replicas: { type: 'integer', minimum: 1, maximum: 5, default: 1 } }, additionalProperties: false };

function manifest(o: { selector?: boolean } = {}) {
  return {
    routes: [{ route_key: 'web', service: { name: 'web', port: 80 } }],
    resources: [
      {
        apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', labels: { app: 'web' } },
        spec: {
          replicas: '{{ values.replicas }}',
          ...(o.selector === false ? {} : { selector: { matchLabels: { app: 'web' } } }),
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'nginx:1.27', env: [{ name: 'SVC_INSTALL', value: '{{ install.id }}' }], ports: [{ containerPort: 8080 }] }] },
          },
        },
      },
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] } },
    ],
  };
}

describe('installs on a kubernetes cluster', () => {
  let t: TestApp;
  let alice: TestUser;
  let ws: string;
  let k8s: K8sStandin;
  let clusterId: string;

  const call = (method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}): Promise<Response> =>
    t.request(method, url, { token: alice.token, ...opts, headers: { 'svc-context': ws, ...opts.headers } });

  async function waitOp(id: string) {
    const res = await call('POST', `/v1/operations/${id}:wait?timeout=30`);
    assert.equal(res.status, 200, res.text);
    assertOperationInvariants(res.body);
    assert.equal(res.body.done, true, res.text);
    return res.body;
  }

  async function publish(name: string, m: unknown): Promise<string> {
    const pkg = await call('POST', '/v1/packages', { body: { name } });
    assert.equal(pkg.status, 201, pkg.text);
    const version = await call('POST', `/v1/packages/${pkg.body.id}/versions`, { body: { semver: '1.0.0', input_schema: SCHEMA, manifest: m } });
    assert.equal(version.status, 201, version.text);
    return pkg.body.id;
  }

  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
    ws = (await t.workspace(alice, 'A')).id;
    k8s = await startK8sStandin();
    const res = await call('POST', '/v1/clusters', { body: { name: 'prod', provider: 'kubernetes', kubeconfig: standinKubeconfig(k8s.url) } });
    assert.equal(res.status, 202, res.text);
    assert.equal((await waitOp(res.body.id)).state, 'SUCCEEDED');
    clusterId = res.body.owner_id;
  });
  after(async () => {
    await k8s.close();
    await t.close();
  });

  test('install applies the objects, waits for readiness, publishes URLs; delete removes the namespace', async () => {
    const pkgId = await publish('web-app', manifest());
    const res = await call('POST', '/v1/installs', { body: { package_id: pkgId, package_version_pin: { kind: 'latest' }, cluster_id: clusterId, initial_values: { replicas: 2 } } });
    assert.equal(res.status, 202, res.text);
    const installId: string = res.body.owner_id;
    const ns = installNamespace(installId);

    // The stand-in's controller has not reported yet: the operation polls, showing why.
    let waiting: { last_error: { message: string } | null; done: boolean } | undefined;
    for (let i = 0; i < 400 && !waiting?.last_error; i++) {
      await sleep(10);
      waiting = (await call('GET', `/v1/operations/${res.body.id}`)).body;
      assert.equal(waiting!.done, false, JSON.stringify(waiting));
    }
    assert.match(waiting!.last_error!.message, /deployment\/web: waiting for the controller to observe the new spec/);
    const web = k8s.objects.get('apps/v1', 'Deployment', ns, 'web')!;
    assert.ok(web, 'the Deployment was applied');
    assert.equal((await call('GET', `/v1/installs/${installId}`)).body.state, 'syncing');

    k8s.objects.statusFor = readyStatus;
    const done = await waitOp(res.body.id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    const renderId: string = done.response.render_id;

    // What the cluster holds: the namespace, and both objects in it, rendered and labelled.
    const namespace = k8s.objects.get('v1', 'Namespace', undefined, ns)!;
    assert.deepEqual((namespace.metadata as { labels: unknown }).labels, { 'app.kubernetes.io/managed-by': 'svc', 'svc.dev/install-id': installId });
    const applied = k8s.objects.get('apps/v1', 'Deployment', ns, 'web')!;
    const spec = applied.spec as { replicas: number; template: { spec: { containers: { env: { value: string }[] }[] } } };
    assert.equal(spec.replicas, 2);
    assert.equal(spec.template.spec.containers[0]!.env[0]!.value, installId);
    assert.deepEqual((applied.metadata as { labels: unknown }).labels, { app: 'web', 'svc.dev/install-id': installId, 'svc.dev/render-id': renderId });
    assert.equal((k8s.objects.get('v1', 'Service', ns, 'web')!.metadata as { namespace: string }).namespace, ns);

    const install = await call('GET', `/v1/installs/${installId}`);
    assert.equal(install.body.state, 'healthy');
    assert.equal(install.body.current_render_id, renderId);
    assert.deepEqual(install.body.urls.map((u: { route_key: string }) => u.route_key), ['web']);

    const del = await call('DELETE', `/v1/installs/${installId}`, { headers: { 'if-match': install.body.etag } });
    assert.equal(del.status, 202, del.text);
    assert.equal((await waitOp(del.body.id)).state, 'SUCCEEDED');
    assert.equal(k8s.objects.get('v1', 'Namespace', undefined, ns), undefined);
    assert.ok(![...k8s.objects.objects.keys()].some((key) => key.includes(`|${ns}|`)), 'nothing left in the namespace');
    assert.ok(k8s.requests.some((r) => r.method === 'DELETE' && r.path === `/api/v1/namespaces/${ns}`));
    assert.equal((await call('GET', `/v1/installs/${installId}`)).status, 404);
  });

  test('an object the API server rejects fails the install at once with the server\'s message', async () => {
    const pkgId = await publish('broken-app', manifest({ selector: false }));
    const res = await call('POST', '/v1/installs', { body: { package_id: pkgId, package_version_pin: { kind: 'latest' }, cluster_id: clusterId } });
    assert.equal(res.status, 202, res.text);
    const done = await waitOp(res.body.id);
    assert.equal(done.state, 'FAILED', JSON.stringify(done));
    assert.match(done.error.message, /applying deployment\/web: the cluster API answered HTTP 422: Deployment.apps "web" is invalid: spec.selector: Required value/);
    assert.equal(done.steps.find((s: { name: string }) => s.name === 'apply').attempts, 1, 'a 422 is not retried');
    assert.equal((await call('GET', `/v1/installs/${res.body.owner_id}`)).body.state, 'failed');
  });
});
