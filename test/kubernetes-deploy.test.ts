// The kubernetes driver's deploy, deploymentStatus and undeploy against the stand-in API server over a
// real socket: namespaces, server-side apply, readiness of workloads, error mapping, abort. No
// database here, so these run the same on both dialects.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  ClusterDriverError, installNamespace, type ClusterTarget, type DeploymentSpec, type DriverCallContext, type KubernetesObject,
} from '../src/drivers/cluster/driver.js';
import { createKubernetesDriver } from '../src/drivers/cluster/kubernetes.js';
import { newId } from '../src/platform/ids.js';
import { STANDIN_SERVER_CERT, readyStatus, standinKubeconfig, startK8sStandin, type K8sStandin } from './k8s-standin.js';

const ctx = (signal = new AbortController().signal, attempt = 1): DriverCallContext => ({ attempt, signal });

async function driverFailure(p: Promise<unknown>): Promise<ClusterDriverError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ClusterDriverError, `expected ClusterDriverError, got ${String(err)}`);
    return err;
  }
  assert.fail('the call succeeded');
}

function deployment(name: string, replicas: number, image = 'nginx:1.27'): KubernetesObject {
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, labels: { app: name } },
    spec: {
      replicas, selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name, image, ports: [{ containerPort: 8080 }] }] } },
    },
  };
}

/** A render of a web app: a ConfigMap, a Deployment and its Service. */
function webRender(o: { installId?: string; renderId?: string; replicas?: number; image?: string; extra?: KubernetesObject[]; hostnames?: DeploymentSpec['hostnames'] } = {}): DeploymentSpec {
  const installId = o.installId ?? newId('install');
  return {
    installId,
    namespace: installNamespace(installId),
    renderId: o.renderId ?? newId('render'),
    routes: [{ route_key: 'web', protocol: 'http', service: { name: 'web', port: 80 } }],
    hostnames: o.hostnames ?? [],
    resources: [
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web-config' }, data: { GREETING: 'hello' } },
      deployment('web', o.replicas ?? 3, o.image),
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', labels: { tier: 'front' } }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] } },
      ...(o.extra ?? []),
    ],
  };
}

describe('kubernetes driver: deploy, status, undeploy', () => {
  const driver = createKubernetesDriver();
  let k8s: K8sStandin;
  let target: ClusterTarget;
  before(async () => {
    k8s = await startK8sStandin();
    target = { clusterId: 'clu_test', provider: 'kubernetes', faults: [], kubeconfig: standinKubeconfig(k8s.url) };
  });
  after(() => k8s.close());

  test('deploy creates the labelled namespace and server-side applies every object into it', async () => {
    const spec = webRender();
    // A field client-node's models do not know must reach the API server, which judges it.
    (spec.resources[1]!.spec as Record<string, unknown>).futureField = { enabled: true };
    k8s.requests.length = 0;
    await driver.deploy(target, spec, ctx());

    const ns = k8s.objects.get('v1', 'Namespace', undefined, spec.namespace);
    assert.ok(ns, 'namespace created');
    assert.match(spec.namespace, /^svc-[0-9a-z]{26}$/);
    assert.deepEqual((ns.metadata as { labels: unknown }).labels, { 'app.kubernetes.io/managed-by': 'svc', 'svc.dev/install-id': spec.installId });

    const web = k8s.objects.get('apps/v1', 'Deployment', spec.namespace, 'web')!;
    const meta = web.metadata as { namespace: string; labels: Record<string, string>; generation: number };
    assert.equal(meta.namespace, spec.namespace);
    assert.deepEqual(meta.labels, { app: 'web', 'svc.dev/install-id': spec.installId, 'svc.dev/render-id': spec.renderId });
    assert.equal(meta.generation, 1);
    assert.deepEqual((web.spec as { futureField: unknown }).futureField, { enabled: true });
    // The render label is on the object, not on its pod template (a new render must not restart pods).
    assert.deepEqual((web.spec as { template: { metadata: unknown } }).template.metadata, { labels: { app: 'web' } });
    const svc = k8s.objects.get('v1', 'Service', spec.namespace, 'web')!;
    assert.equal((svc.metadata as { labels: Record<string, string> }).labels.tier, 'front');
    assert.ok(k8s.objects.get('v1', 'ConfigMap', spec.namespace, 'web-config'));

    const patches = k8s.requests.filter((r) => r.method === 'PATCH');
    assert.deepEqual(patches.map((r) => r.path), [
      `/api/v1/namespaces/${spec.namespace}`,
      `/api/v1/namespaces/${spec.namespace}/configmaps/web-config`,
      `/apis/apps/v1/namespaces/${spec.namespace}/deployments/web`,
      `/api/v1/namespaces/${spec.namespace}/services/web`,
    ]);
    for (const p of patches) {
      assert.equal(p.contentType, 'application/apply-patch+yaml');
      assert.deepEqual(p.query, { fieldManager: 'svc', force: 'true' });
    }
    // Discovery once per group version, not once per object.
    assert.equal(k8s.requests.filter((r) => r.path === '/api/v1').length, 1);
    assert.equal(k8s.requests.filter((r) => r.path === '/apis/apps/v1').length, 1);
  });

  test('applying again is idempotent: no duplicate, generation moves only with the spec', async () => {
    const spec = webRender();
    await driver.deploy(target, spec, ctx());
    // What the driver applied (not the ReplicaSets and pods the stand-in's controllers add).
    const applied = () => [...k8s.objects.objects.keys()].filter((k) => !/^(apps\/v1\|ReplicaSet|v1\|Pod)\|/.test(k)).length;
    const count = applied();
    await driver.deploy(target, spec, ctx());
    assert.equal(applied(), count);
    const gen = (o: Record<string, unknown> | undefined) => (o?.metadata as { generation: number }).generation;
    assert.equal(gen(k8s.objects.get('apps/v1', 'Deployment', spec.namespace, 'web')), 1);

    // A new render with the same objects: relabelled, generation unchanged.
    const same = { ...spec, renderId: newId('render') };
    await driver.deploy(target, same, ctx());
    const web = k8s.objects.get('apps/v1', 'Deployment', spec.namespace, 'web')!;
    assert.equal(gen(web), 1);
    assert.equal((web.metadata as { labels: Record<string, string> }).labels['svc.dev/render-id'], same.renderId);
    // A new image: the spec changed, the generation moves.
    const changed = webRender({ installId: spec.installId, image: 'nginx:1.28' });
    await driver.deploy(target, changed, ctx());
    assert.equal(gen(k8s.objects.get('apps/v1', 'Deployment', spec.namespace, 'web')), 2);
    assert.equal(applied(), count);
  });

  test('status follows the workloads: not observed, partly ready, then ready', async () => {
    const spec = webRender({ replicas: 3 });
    const before = await driver.deploymentStatus(target, spec, ctx());
    assert.equal(before.ready, false);
    assert.match(before.message, /configmap\/web-config: not found/);

    await driver.deploy(target, spec, ctx());
    const fresh = await driver.deploymentStatus(target, spec, ctx());
    assert.deepEqual(fresh, { ready: false, message: 'deployment/web: waiting for the controller to observe the new spec' });

    k8s.objects.setStatus('apps/v1', 'Deployment', spec.namespace, 'web', { observedGeneration: 1, replicas: 3, updatedReplicas: 3, readyReplicas: 1, availableReplicas: 1 });
    assert.deepEqual(await driver.deploymentStatus(target, spec, ctx()), { ready: false, message: 'deployment/web: 1 of 3 ready' });

    k8s.objects.setStatus('apps/v1', 'Deployment', spec.namespace, 'web', { observedGeneration: 1, replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3 });
    assert.deepEqual(await driver.deploymentStatus(target, spec, ctx()), { ready: true, message: '3 object(s) ready' });

    // A newer spec: the old status no longer counts until the controller observes generation 2.
    const scaled = { ...webRender({ installId: spec.installId, replicas: 5 }) };
    await driver.deploy(target, scaled, ctx());
    assert.match((await driver.deploymentStatus(target, scaled, ctx())).message, /deployment\/web: waiting for the controller/);
    k8s.objects.setStatus('apps/v1', 'Deployment', spec.namespace, 'web', { observedGeneration: 2, replicas: 7, updatedReplicas: 5, readyReplicas: 5, availableReplicas: 5 });
    assert.deepEqual(await driver.deploymentStatus(target, scaled, ctx()), { ready: false, message: 'deployment/web: 2 old replica(s) pending termination' });
    // The earlier render is not the one on the cluster any more.
    const stale = await driver.deploymentStatus(target, spec, ctx());
    assert.equal(stale.ready, false);
    assert.match(stale.message, new RegExp(`configmap/web-config: render ${spec.renderId} is not applied \\(the cluster has ${scaled.renderId}\\)`));
  });

  test('a Job is ready once it succeeded; a failed Job is a non-retryable failure', async () => {
    const job: KubernetesObject = {
      apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'migrate' },
      spec: { backoffLimit: 2, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'migrate', image: 'app:1', args: ['migrate'] }] } } },
    };
    const spec = webRender({ extra: [job] });
    await driver.deploy(target, spec, ctx());
    k8s.objects.setStatus('apps/v1', 'Deployment', spec.namespace, 'web', readyStatus(k8s.objects.get('apps/v1', 'Deployment', spec.namespace, 'web')!)!);
    k8s.objects.setStatus('batch/v1', 'Job', spec.namespace, 'migrate', { active: 1 });
    assert.deepEqual(await driver.deploymentStatus(target, spec, ctx()), { ready: false, message: 'job/migrate: 0 of 1 succeeded (1 running)' });
    k8s.objects.setStatus('batch/v1', 'Job', spec.namespace, 'migrate', { succeeded: 1 });
    assert.deepEqual(await driver.deploymentStatus(target, spec, ctx()), { ready: true, message: '4 object(s) ready' });

    k8s.objects.setStatus('batch/v1', 'Job', spec.namespace, 'migrate', {
      failed: 3, conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }],
    });
    const err = await driverFailure(driver.deploymentStatus(target, spec, ctx()));
    assert.equal(err.retryable, false);
    assert.equal(err.message, 'job/migrate failed: BackoffLimitExceeded: Job has reached the specified backoff limit');
  });

  test('StatefulSets and DaemonSets are read from their status', async () => {
    const sts: KubernetesObject = {
      apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'db' },
      spec: { replicas: 2, serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'db', image: 'postgres:16' }] } } },
    };
    const ds: KubernetesObject = {
      apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'agent' },
      spec: { selector: { matchLabels: { app: 'agent' } }, template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'agent', image: 'agent:1' }] } } },
    };
    const installId = newId('install');
    const spec: DeploymentSpec = { installId, namespace: installNamespace(installId), renderId: newId('render'), routes: [], hostnames: [], resources: [sts, ds] };
    await driver.deploy(target, spec, ctx());
    k8s.objects.setStatus('apps/v1', 'StatefulSet', spec.namespace, 'db', { observedGeneration: 1, replicas: 2, updatedReplicas: 2, readyReplicas: 1 });
    k8s.objects.setStatus('apps/v1', 'DaemonSet', spec.namespace, 'agent', { observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberReady: 2 });
    assert.deepEqual(await driver.deploymentStatus(target, spec, ctx()), { ready: false, message: 'statefulset/db: 1 of 2 ready; daemonset/agent: 2 of 3 ready' });
    k8s.objects.statusFor = readyStatus;
    try {
      assert.deepEqual(await driver.deploymentStatus(target, spec, ctx()), { ready: true, message: '2 object(s) ready' });
    } finally {
      k8s.objects.statusFor = undefined;
    }
  });

  test('an object the API server finds invalid (422) fails at once, naming the object and field', async () => {
    const spec = webRender();
    const broken = deployment('worker', 1);
    delete (broken.spec as Record<string, unknown>).selector;
    spec.resources.splice(1, 0, broken);
    const err = await driverFailure(driver.deploy(target, spec, ctx()));
    assert.equal(err.retryable, false);
    assert.equal(err.message, `applying deployment/worker: the cluster API answered HTTP 422: Deployment.apps "worker" is invalid: spec.selector: Required value`);
    // Objects before it were applied (apply is per object), none after it.
    assert.ok(k8s.objects.get('v1', 'ConfigMap', spec.namespace, 'web-config'));
    assert.equal(k8s.objects.get('apps/v1', 'Deployment', spec.namespace, 'web'), undefined);
  });

  test('a resource RBAC denies (403) is non-retryable; 5xx is retryable and the retry succeeds', async () => {
    const secret: KubernetesObject = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'creds' }, stringData: { password: 'pw' } };
    const spec = webRender({ extra: [secret] });
    k8s.objects.forbidden.add('secrets');
    try {
      const err = await driverFailure(driver.deploy(target, spec, ctx()));
      assert.equal(err.retryable, false);
      assert.match(err.message, /^applying secret\/creds: access forbidden \(HTTP 403\): secrets "creds" is forbidden: User "system:serviceaccount:svc:deployer" cannot patch resource "secrets"/);
    } finally {
      k8s.objects.forbidden.delete('secrets');
    }

    k8s.failRemaining = 1;
    const unavailable = await driverFailure(driver.deploy(target, spec, ctx()));
    assert.equal(unavailable.retryable, true);
    assert.match(unavailable.message, /HTTP 503/);
    await driver.deploy(target, spec, ctx(undefined, 2));
    assert.ok(k8s.objects.get('v1', 'Secret', spec.namespace, 'creds'));
  });

  test('kinds the cluster does not serve, or cluster-scoped ones, are refused before anything is applied', async () => {
    const crd: KubernetesObject = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec: {} };
    const clusterRole: KubernetesObject = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'admin-ish' }, rules: [] };
    for (const [extra, pattern] of [[crd, /applying widget\/w: the cluster does not serve Widget in example.com\/v1/], [clusterRole, /applying clusterrole\/admin-ish: ClusterRole is cluster-scoped/]] as const) {
      const spec = webRender({ extra: [extra] });
      k8s.requests.length = 0;
      const err = await driverFailure(driver.deploy(target, spec, ctx()));
      assert.equal(err.retryable, false);
      assert.match(err.message, pattern);
      assert.equal(k8s.requests.filter((r) => r.method === 'PATCH').length, 0);
    }
  });

  test('undeploy deletes the namespace and everything in it; a missing or terminating namespace is done', async () => {
    const spec = webRender();
    await driver.deploy(target, spec, ctx());
    await driver.undeploy(target, spec, ctx());
    assert.equal(k8s.objects.get('v1', 'Namespace', undefined, spec.namespace), undefined);
    assert.equal(k8s.objects.get('apps/v1', 'Deployment', spec.namespace, 'web'), undefined);
    await driver.undeploy(target, spec, ctx());
    const deletes = k8s.requests.filter((r) => r.method === 'DELETE' && r.path === `/api/v1/namespaces/${spec.namespace}`);
    assert.equal(deletes.length, 2);

    // A namespace that takes a while to terminate: deleting it again answers 409, which is done too;
    // deploying into it meanwhile waits (retryable) rather than failing.
    k8s.objects.namespaceTerminationMs = 60_000;
    try {
      const slow = webRender();
      await driver.deploy(target, slow, ctx());
      await driver.undeploy(target, slow, ctx());
      assert.equal((k8s.objects.get('v1', 'Namespace', undefined, slow.namespace)!.status as { phase: string }).phase, 'Terminating');
      await driver.undeploy(target, slow, ctx());
      const err = await driverFailure(driver.deploy(target, slow, ctx()));
      assert.equal(err.retryable, true);
      assert.match(err.message, /still being deleted/);
    } finally {
      k8s.objects.namespaceTerminationMs = 0;
    }
  });

  test('the abort signal stops a deploy in flight, and an aborted signal sends nothing', async () => {
    const slow = await startK8sStandin({ delayMs: 5_000 });
    try {
      const slowTarget: ClusterTarget = { ...target, kubeconfig: standinKubeconfig(slow.url) };
      const controller = new AbortController();
      const deploying = driverFailure(driver.deploy(slowTarget, webRender(), ctx(controller.signal)));
      // Abort once the deploy is in flight (the stand-in holds each call for 5 s): "aborted" says
      // the signal ended it, not an answer.
      while (slow.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
      controller.abort();
      const err = await deploying;
      assert.equal(err.retryable, true);
      assert.match(err.message, /aborted/);
      const sent = slow.requests.length;
      for (const call of [
        driver.deploy(slowTarget, webRender(), ctx(AbortSignal.abort())),
        driver.deploymentStatus(slowTarget, webRender(), ctx(AbortSignal.abort())),
        driver.undeploy(slowTarget, webRender(), ctx(AbortSignal.abort())),
      ]) {
        assert.match((await driverFailure(call)).message, /aborted/);
      }
      assert.equal(slow.requests.length, sent);
    } finally {
      await slow.close();
    }
  });

  test('a slow API server hits the request deadline: retryable', async () => {
    const slow = await startK8sStandin({ delayMs: 3_000 });
    try {
      const quick = createKubernetesDriver({ requestTimeoutMs: 100 });
      const err = await driverFailure(quick.deploymentStatus({ ...target, kubeconfig: standinKubeconfig(slow.url) }, webRender(), ctx()));
      assert.equal(err.retryable, true);
      assert.match(err.message, /did not answer within 0.1 s/);
    } finally {
      await slow.close();
    }
  });
});

describe('kubernetes driver deploy over TLS with a client certificate', () => {
  test('applies and reads with mutual TLS', async () => {
    const k8s = await startK8sStandin({ https: true });
    try {
      const kubeconfig = standinKubeconfig(k8s.url, { caData: Buffer.from(STANDIN_SERVER_CERT).toString('base64'), token: null, clientCertificate: true });
      const target: ClusterTarget = { clusterId: 'clu_tls', provider: 'kubernetes', faults: [], kubeconfig };
      const driver = createKubernetesDriver();
      const spec = webRender({ replicas: 1 });
      await driver.deploy(target, spec, ctx());
      k8s.objects.statusFor = readyStatus;
      assert.deepEqual(await driver.deploymentStatus(target, spec, ctx()), { ready: true, message: '3 object(s) ready' });
      await driver.undeploy(target, spec, ctx());
      assert.equal(k8s.objects.get('v1', 'Namespace', undefined, spec.namespace), undefined);
      assert.ok(k8s.requests.length > 0 && k8s.requests.every((r) => r.clientCertCn === 'svc-test-client'));
    } finally {
      await k8s.close();
    }
  });
});

describe('kubernetes driver: route objects and rollout failures', () => {
  const driver = createKubernetesDriver();
  const routed = (o: Parameters<typeof webRender>[0] = {}) => {
    const installId = o.installId ?? newId('install');
    const host = `web-${installId.slice(5)}.preview.example.com`;
    return webRender({ ...o, installId, hostnames: o.hostnames ?? [{ route_key: 'web', hostnames: [host] }] });
  };
  type Route = { metadata: { labels: Record<string, string> }; spec: Record<string, any>; status?: Record<string, any> };

  test('with a Gateway: an HTTPRoute attached to it; ready once the Gateway accepts it; missing backends are named', async () => {
    const k8s = await startK8sStandin();
    try {
      const target: ClusterTarget = { clusterId: 'clu_gw', provider: 'kubernetes', faults: [], kubeconfig: standinKubeconfig(k8s.url) };
      const spec = routed();
      await driver.deploy(target, spec, ctx());
      const route = k8s.objects.get('gateway.networking.k8s.io/v1', 'HTTPRoute', spec.namespace, 'svc-route-web') as Route | undefined;
      assert.ok(route, 'the HTTPRoute was applied');
      // The first Gateway by namespace and name with an HTTP listener matching every hostname: default/public-gw.
      assert.deepEqual(route.spec.parentRefs, [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'public-gw' }]);
      assert.deepEqual(route.spec.hostnames, spec.hostnames[0]!.hostnames);
      assert.deepEqual(route.spec.rules[0].backendRefs, [{ group: '', kind: 'Service', name: 'web', port: 80 }]);
      assert.deepEqual(route.metadata.labels, {
        'app.kubernetes.io/managed-by': 'svc', 'svc.dev/install-id': spec.installId, 'svc.dev/render-id': spec.renderId, 'svc.dev/route-key': 'web',
      });
      assert.equal(k8s.objects.get('networking.k8s.io/v1', 'Ingress', spec.namespace, 'svc-route-web'), undefined);

      k8s.objects.statusFor = readyStatus;
      assert.deepEqual(await driver.deploymentStatus(target, spec, ctx()), { ready: true, message: '3 object(s) ready, 1 route object(s) accepted' });

      // The Gateway has not written a status yet: waiting.
      k8s.objects.routeControllers = false;
      assert.deepEqual(await driver.deploymentStatus(target, spec, ctx()), { ready: false, message: 'httproute/svc-route-web: waiting for gateway default/public-gw to accept it' });
      k8s.objects.routeControllers = true;

      // A route whose Service port is not there: the implementation says so, and so does the status.
      const wrongPort = { ...spec, routes: [{ route_key: 'web', protocol: 'http' as const, service: { name: 'web', port: 8443 } }] };
      await driver.deploy(target, wrongPort, ctx());
      const status = await driver.deploymentStatus(target, wrongPort, ctx());
      assert.equal(status.ready, false);
      assert.match(status.message, /^httproute\/svc-route-web: ResolvedRefs is False on gateway default\/public-gw \(BackendNotFound: .*TCP Port 8443 not found on service svc-\w+\/web/);
    } finally {
      await k8s.close();
    }
  });

  test('hostname changes re-apply the route: more than 16 hostnames take a second object, fewer remove it; a render without the route removes it', async () => {
    const k8s = await startK8sStandin();
    try {
      const target: ClusterTarget = { clusterId: 'clu_gw2', provider: 'kubernetes', faults: [], kubeconfig: standinKubeconfig(k8s.url) };
      const spec = routed();
      await driver.deploy(target, spec, ctx());
      const many = Array.from({ length: 20 }, (_, i) => `p${String(i).padStart(2, '0')}--${spec.installId.slice(5)}.preview.example.com`);
      await driver.applyRoutes(target, { ...spec, hostnames: [{ route_key: 'web', hostnames: [...spec.hostnames[0]!.hostnames, ...many] }] }, ctx());
      const first = k8s.objects.get('gateway.networking.k8s.io/v1', 'HTTPRoute', spec.namespace, 'svc-route-web') as Route;
      const second = k8s.objects.get('gateway.networking.k8s.io/v1', 'HTTPRoute', spec.namespace, 'svc-route-web-2') as Route;
      assert.equal(first.spec.hostnames.length, 16);
      assert.deepEqual([...first.spec.hostnames, ...second.spec.hostnames], [...spec.hostnames[0]!.hostnames, ...many]);

      await driver.applyRoutes(target, spec, ctx());
      assert.deepEqual((k8s.objects.get('gateway.networking.k8s.io/v1', 'HTTPRoute', spec.namespace, 'svc-route-web') as Route).spec.hostnames, spec.hostnames[0]!.hostnames);
      assert.equal(k8s.objects.get('gateway.networking.k8s.io/v1', 'HTTPRoute', spec.namespace, 'svc-route-web-2'), undefined);

      // A route without a service gets no object; deploying such a render removes the old one.
      await driver.deploy(target, { ...spec, renderId: newId('render'), routes: [{ route_key: 'web', protocol: 'http' }] }, ctx());
      assert.equal(k8s.objects.get('gateway.networking.k8s.io/v1', 'HTTPRoute', spec.namespace, 'svc-route-web'), undefined);
      assert.ok(k8s.requests.some((r) => r.method === 'DELETE' && r.path === `/apis/gateway.networking.k8s.io/v1/namespaces/${spec.namespace}/httproutes/svc-route-web`));
    } finally {
      await k8s.close();
    }
  });

  test('without the Gateway API: an Ingress of the default class, ready once it has an address; with neither, a clear failure', async () => {
    const k8s = await startK8sStandin({ gatewayApi: false });
    const bare = await startK8sStandin({ gatewayApi: false, ingress: false });
    try {
      const target: ClusterTarget = { clusterId: 'clu_ing', provider: 'kubernetes', faults: [], kubeconfig: standinKubeconfig(k8s.url) };
      const spec = routed();
      await driver.deploy(target, spec, ctx());
      const ingress = k8s.objects.get('networking.k8s.io/v1', 'Ingress', spec.namespace, 'svc-route-web') as Route;
      assert.equal(ingress.spec.ingressClassName, 'nginx');
      assert.deepEqual(ingress.spec.rules, [{
        host: spec.hostnames[0]!.hostnames[0], http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] },
      }]);
      k8s.objects.statusFor = readyStatus;
      assert.deepEqual(await driver.deploymentStatus(target, spec, ctx()), { ready: true, message: '3 object(s) ready, 1 route object(s) accepted' });
      k8s.objects.routeControllers = false;
      assert.deepEqual(await driver.deploymentStatus(target, spec, ctx()), { ready: false, message: 'ingress/svc-route-web: waiting for the ingress controller to assign it an address' });

      const err = await driverFailure(driver.deploy({ ...target, kubeconfig: standinKubeconfig(bare.url) }, routed(), ctx()));
      assert.equal(err.retryable, false);
      assert.match(err.message, /the cluster has no Gateway API \(gateway.networking.k8s.io\/v1 is not served\) and no IngressClass; install a Gateway API implementation/);
    } finally {
      await k8s.close();
      await bare.close();
    }
  });

  test('an update away from a crashing template is not failed by the old ReplicaSet\'s pods still there', async () => {
    const k8s = await startK8sStandin();
    try {
      const target: ClusterTarget = { clusterId: 'clu_fix', provider: 'kubernetes', faults: [], kubeconfig: standinKubeconfig(k8s.url) };
      k8s.objects.keepOldPods = true;
      k8s.objects.statusFor = readyStatus;
      const broken = routed({ replicas: 1, image: 'fail.example/crashloop:1' });
      await driver.deploy(target, broken, ctx());
      assert.match((await driverFailure(driver.deploymentStatus(target, broken, ctx()))).message, /CrashLoopBackOff/);
      const fixed = routed({ installId: broken.installId, replicas: 1, image: 'nginx:1.28' });
      await driver.deploy(target, fixed, ctx());
      const pods = k8s.objects.pods(fixed.namespace).map((p) => (p.metadata as { name: string }).name);
      assert.equal(pods.length, 2, 'the crashing pod of the old template is still there');
      assert.deepEqual(await driver.deploymentStatus(target, fixed, ctx()), { ready: true, message: '3 object(s) ready, 1 route object(s) accepted' });
    } finally {
      await k8s.close();
    }
  });

  test('a crashing container fails the rollout at once with its reason and last message, secret values redacted; so does an image that cannot be pulled', async () => {
    const k8s = await startK8sStandin();
    try {
      const target: ClusterTarget = { clusterId: 'clu_crash', provider: 'kubernetes', faults: [], kubeconfig: standinKubeconfig(k8s.url) };
      const crashing = deployment('api', 1, 'fail.example/crashloop:1');
      const container = (crashing.spec as any).template.spec.containers[0];
      container.env = [{ name: 'STANDIN_EXIT_MESSAGE', valueFrom: { secretKeyRef: { name: 'svc-secrets', key: 'db_password' } } }];
      const spec = { ...routed({ extra: [crashing] }), secret: { name: 'svc-secrets', data: { db_password: 'hunter2-very-secret' } } };
      await driver.deploy(target, spec, ctx());
      const pods = k8s.objects.pods(spec.namespace);
      assert.equal(pods.length, 4, 'three of web, one of api');
      const apiPod = pods.find((p) => (p.metadata as { name: string }).name.startsWith('api-'))!;
      const podName = (apiPod.metadata as { name: string }).name;
      assert.match(podName, /^api-[b-z2-9]{10}-[b-z2-9]{5}$/);

      const { secret: _omitted, ...statusSpec } = spec;
      const err = await driverFailure(driver.deploymentStatus(target, statusSpec, ctx()));
      assert.equal(err.retryable, false);
      assert.match(err.message, new RegExp(`^pod ${podName} container api: CrashLoopBackOff: back-off .*; last run ended: Error \\(exit code 1\\): \\[redacted\\]$`));
      assert.doesNotMatch(err.message, /hunter2/);

      // An init container whose image cannot be pulled, put there by the test.
      const web = k8s.objects.pods(spec.namespace).find((p) => (p.metadata as { name: string }).name.startsWith('web-'))!;
      const webName = (web.metadata as { name: string }).name;
      await driver.deploy(target, { ...spec, resources: spec.resources.filter((r) => r.metadata.name !== 'api') }, ctx());
      for (const p of k8s.objects.pods(spec.namespace)) {
        if ((p.metadata as { name: string }).name.startsWith('api-')) k8s.objects.objects.delete(`v1|Pod|${spec.namespace}|${(p.metadata as { name: string }).name}`);
      }
      k8s.objects.setContainerWaiting(spec.namespace, webName, 'web', 'ImagePullBackOff', 'Back-off pulling image "nginx:1.27"');
      const pull = await driverFailure(driver.deploymentStatus(target, statusSpec, ctx()));
      assert.equal(pull.retryable, false);
      assert.match(pull.message, new RegExp(`pod ${webName} container web: ImagePullBackOff: Back-off pulling image "nginx:1.27"$`));
    } finally {
      await k8s.close();
    }
  });
});
