// The kubernetes cluster driver (issue 3, scope 6) against a local stand-in of the Kubernetes API,
// and the kubeconfig validation that guards what the service stores and runs. No database here, so
// these run the same on both dialects.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Value } from 'typebox/value';
import { ClusterCapabilities, ClusterDriverError, type ClusterTarget, type DriverCallContext } from '../src/drivers/cluster/driver.js';
import { KUBECONFIG_MAX_BYTES, KubeconfigError, assertValidKubeconfig, parseKubeconfig } from '../src/drivers/cluster/kubeconfig.js';
import { createKubernetesDriver } from '../src/drivers/cluster/kubernetes.js';
import { ApiError } from '../src/platform/errors.js';
import {
  STANDIN_SERVER_CERT, STANDIN_TOKEN, TEST_CLIENT_CERT, TEST_CLIENT_KEY, standinKubeconfig, startK8sStandin, type K8sStandin,
} from './k8s-standin.js';

const target = (kubeconfig: string | null): ClusterTarget => ({ clusterId: 'cls_test', provider: 'kubernetes', faults: [], kubeconfig });
const ctx = (signal = new AbortController().signal, attempt = 1): DriverCallContext => ({ attempt, signal });
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** Awaits a driver call that must fail, and returns its ClusterDriverError. */
async function driverFailure(p: Promise<unknown>): Promise<ClusterDriverError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ClusterDriverError, `expected ClusterDriverError, got ${String(err)}`);
    return err;
  }
  assert.fail('the call succeeded');
}

const EXPECTED = {
  api_groups: [
    'v1', 'apiregistration.k8s.io/v1', 'apps/v1', 'events.k8s.io/v1', 'authentication.k8s.io/v1', 'authorization.k8s.io/v1',
    'autoscaling/v2', 'autoscaling/v1', 'batch/v1', 'certificates.k8s.io/v1', 'networking.k8s.io/v1', 'policy/v1',
    'rbac.authorization.k8s.io/v1', 'storage.k8s.io/v1', 'admissionregistration.k8s.io/v1', 'apiextensions.k8s.io/v1',
    'scheduling.k8s.io/v1', 'coordination.k8s.io/v1', 'node.k8s.io/v1', 'discovery.k8s.io/v1',
    'flowcontrol.apiserver.k8s.io/v1', 'flowcontrol.apiserver.k8s.io/v1beta3', 'gateway.networking.k8s.io/v1', 'gateway.networking.k8s.io/v1beta1',
  ],
  storage_classes: [
    { name: 'standard', provisioner: 'rancher.io/local-path', reclaim_policy: 'Delete', volume_binding_mode: 'WaitForFirstConsumer', is_default: true },
    { name: 'fast-ssd', provisioner: 'ebs.csi.aws.com', reclaim_policy: 'Retain', volume_binding_mode: 'Immediate', is_default: false },
    { name: 'legacy', provisioner: 'kubernetes.io/no-provisioner', reclaim_policy: 'Delete', volume_binding_mode: 'Immediate', is_default: false },
  ],
  gateway_classes: ['eg', 'cilium'],
  gateways: [
    {
      namespace: 'default', name: 'public-gw', gateway_class_name: 'eg',
      status_message: 'Address assigned to the Gateway, 1/1 envoy Deployment replicas available',
      listeners: [{ name: 'http', protocol: 'HTTP', hostname: '', port: 80 }, { name: 'https', protocol: 'HTTPS', hostname: '*.example.com', port: 443 }],
      addresses: [{ type: 'IPAddress', value: '203.0.113.10' }, { type: 'Hostname', value: 'gw.example.net' }],
    },
    {
      namespace: 'infra', name: 'internal-gw', gateway_class_name: 'cilium', status_message: 'Gateway successfully scheduled',
      listeners: [{ name: 'postgres', protocol: 'TCP', hostname: '', port: 5432 }],
      addresses: [{ type: 'IPAddress', value: '10.96.12.7' }],
    },
    {
      namespace: 'infra', name: 'pending-gw', gateway_class_name: 'eg', status_message: '',
      listeners: [{ name: 'udp-dns', protocol: 'UDP', hostname: '', port: 53 }], addresses: [],
    },
  ],
  ingress_classes: ['nginx', 'traefik'],
  nodes: [
    {
      name: 'kind-control-plane', version: 'v1.31.2', cpu_capacity: '4', memory_capacity: '16283908Ki', os_image: 'Debian GNU/Linux 12 (bookworm)',
      architecture: 'amd64', status_message: 'kubelet is posting ready status', created_at: '2024-05-14T09:12:31Z', roles: ['control-plane'], ready: true,
    },
    {
      name: 'kind-worker', version: 'v1.31.2', cpu_capacity: '8', memory_capacity: '32Gi', os_image: 'Debian GNU/Linux 12 (bookworm)',
      architecture: 'arm64', status_message: 'kubelet is posting ready status', created_at: '2024-05-14T09:13:02Z', roles: ['ingress', 'worker'], ready: true,
    },
    {
      name: 'kind-worker2', version: 'v1.31.2', cpu_capacity: '2', memory_capacity: '4Gi', os_image: 'Debian GNU/Linux 12 (bookworm)',
      architecture: 'amd64', status_message: 'Kubelet stopped posting node status.', created_at: '2024-06-01T00:00:00Z', roles: [], ready: false,
    },
  ],
};

describe('kubernetes driver against the stand-in API server', () => {
  const driver = createKubernetesDriver();
  let k8s: K8sStandin;
  before(async () => { k8s = await startK8sStandin(); });
  after(() => k8s.close());

  test('provision checks that a Kubernetes API answers and accepts the credentials', async () => {
    k8s.requests.length = 0;
    await driver.provision(target(standinKubeconfig(k8s.url)), ctx());
    assert.deepEqual(k8s.requests.map((r) => `${r.method} ${r.path}`), ['GET /version', 'GET /api']);
    assert.ok(k8s.requests.every((r) => r.authorization === `Bearer ${STANDIN_TOKEN}`));
  });

  test('capabilities map every field of spec 2.9 from the discovery API (YAML kubeconfig)', async () => {
    const caps = await driver.capabilities(target(standinKubeconfig(k8s.url)), ctx());
    assert.deepEqual(caps, EXPECTED);
    assert.ok(Value.Check(ClusterCapabilities, caps), JSON.stringify([...Value.Errors(ClusterCapabilities, caps)].slice(0, 3)));
  });

  test('a JSON kubeconfig works the same', async () => {
    assert.deepEqual(await driver.capabilities(target(standinKubeconfig(k8s.url, { format: 'json' })), ctx()), EXPECTED);
  });

  test('lists are read through every continue page', async () => {
    const paged = await startK8sStandin({ maxPageSize: 1 });
    try {
      assert.deepEqual(await driver.capabilities(target(standinKubeconfig(paged.url)), ctx()), EXPECTED);
      const nodePages = paged.requests.filter((r) => r.path === '/api/v1/nodes');
      assert.equal(nodePages.length, 3);
      assert.equal(nodePages[0]!.query.continue, undefined);
      assert.ok(nodePages[1]!.query.continue);
      assert.equal(nodePages[0]!.query.limit, '500');
    } finally {
      await paged.close();
    }
  });

  test('a cluster without the Gateway API gives empty gateway arrays and no gateway requests', async () => {
    const plain = await startK8sStandin({ gatewayApi: false });
    try {
      const caps = await driver.capabilities(target(standinKubeconfig(plain.url)), ctx());
      assert.deepEqual(caps.gateway_classes, []);
      assert.deepEqual(caps.gateways, []);
      assert.ok(!caps.api_groups.some((g) => g.startsWith('gateway.networking.k8s.io')));
      assert.deepEqual(caps.nodes, EXPECTED.nodes);
      assert.ok(!plain.requests.some((r) => r.path.includes('gateway')));
    } finally {
      await plain.close();
    }
  });

  test('a rejected token is a non-retryable error that does not carry the token', async () => {
    const kubeconfig = standinKubeconfig(k8s.url, { token: 'wrong-token-5f3c9a' });
    for (const call of [driver.provision(target(kubeconfig), ctx()), driver.capabilities(target(kubeconfig), ctx())]) {
      const err = await driverFailure(call);
      assert.equal(err.retryable, false);
      assert.match(err.message, /credentials rejected/);
      assert.match(err.message, /401/);
      assert.ok(!err.message.includes('wrong-token-5f3c9a'));
    }
  });

  test('503 from the API server is retryable, and the next attempt succeeds', async () => {
    const flaky = await startK8sStandin({ failTimes: 1 });
    try {
      const err = await driverFailure(driver.provision(target(standinKubeconfig(flaky.url)), ctx()));
      assert.equal(err.retryable, true);
      assert.match(err.message, /503/);
      await driver.provision(target(standinKubeconfig(flaky.url)), ctx(undefined, 2));
      flaky.failRemaining = 2;
      assert.equal((await driverFailure(driver.capabilities(target(standinKubeconfig(flaky.url)), ctx()))).retryable, true);
    } finally {
      await flaky.close();
    }
  });

  test('the abort signal stops a call in flight, and an aborted signal sends nothing', async () => {
    const slow = await startK8sStandin({ delayMs: 5_000 });
    try {
      const controller = new AbortController();
      const calling = driverFailure(driver.capabilities(target(standinKubeconfig(slow.url)), ctx(controller.signal)));
      // Abort once the call is in flight (the stand-in holds it for 5 s): the message says which
      // mechanism ended it, an answer would not say "aborted".
      while (slow.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
      controller.abort();
      const err = await calling;
      assert.equal(err.retryable, true);
      assert.match(err.message, /aborted/);
      const before = slow.requests.length;
      await driverFailure(driver.provision(target(standinKubeconfig(slow.url)), ctx(AbortSignal.abort())));
      assert.equal(slow.requests.length, before);
    } finally {
      await slow.close();
    }
  });

  test('a request that outlives the request timeout fails, retryable', async () => {
    const slow = await startK8sStandin({ delayMs: 3_000 });
    try {
      const quick = createKubernetesDriver({ requestTimeoutMs: 100 });
      // The message names the mechanism (the request timeout), not how soon it fired.
      const err = await driverFailure(quick.provision(target(standinKubeconfig(slow.url)), ctx()));
      assert.equal(err.retryable, true);
      assert.match(err.message, /did not answer within 0.1 s/);
    } finally {
      await slow.close();
    }
  });

  test('an unreachable server is retryable; a server that is not Kubernetes is not', async () => {
    const gone = await startK8sStandin();
    await gone.close();
    const err = await driverFailure(driver.provision(target(standinKubeconfig(gone.url)), ctx()));
    assert.equal(err.retryable, true);
    assert.match(err.message, /could not reach the cluster API \(ECONNREFUSED\)/);
    // A path prefix the stand-in does not serve: every path 404s, as on a web server that is not an API server.
    const notK8s = await driverFailure(driver.provision(target(standinKubeconfig(`${k8s.url}/not-kubernetes`)), ctx()));
    assert.equal(notK8s.retryable, false);
    assert.match(notK8s.message, /404/);
  });

  test('a missing or invalid stored kubeconfig is a non-retryable error', async () => {
    assert.equal((await driverFailure(driver.provision(target(null), ctx()))).retryable, false);
    const err = await driverFailure(driver.capabilities(target(standinKubeconfig(k8s.url).replace('token:', 'token-file:')), ctx()));
    assert.equal(err.retryable, false);
    assert.match(err.message, /invalid kubeconfig: users\[0\]\.user\.token-file/);
  });

  test('destroy resolves without touching the cluster (the service does not own it)', async () => {
    const before = k8s.requests.length;
    await driver.destroy(target(standinKubeconfig(k8s.url)), ctx());
    await driver.destroy(target(standinKubeconfig(k8s.url)), ctx());
    assert.equal(k8s.requests.length, before);
    assert.equal(driver.provider, 'kubernetes');
  });
});

describe('kubernetes driver over TLS', () => {
  const driver = createKubernetesDriver();
  let k8s: K8sStandin;
  before(async () => { k8s = await startK8sStandin({ https: true }); });
  after(() => k8s.close());

  test('trusts the server through certificate-authority-data and authenticates with a token', async () => {
    const caps = await driver.capabilities(target(standinKubeconfig(k8s.url, { caData: b64(STANDIN_SERVER_CERT) })), ctx());
    assert.deepEqual(caps, EXPECTED);
  });

  test('authenticates with an inline client certificate', async () => {
    k8s.requests.length = 0;
    const kubeconfig = standinKubeconfig(k8s.url, { caData: b64(STANDIN_SERVER_CERT), token: null, clientCertificate: true });
    await driver.provision(target(kubeconfig), ctx());
    assert.ok(k8s.requests.length > 0);
    assert.ok(k8s.requests.every((r) => r.clientCertCn === 'svc-test-client' && r.authorization === undefined));
  });

  test('an untrusted server certificate is a non-retryable error', async () => {
    const err = await driverFailure(driver.provision(target(standinKubeconfig(k8s.url)), ctx()));
    assert.equal(err.retryable, false);
    assert.match(err.message, /TLS verification/);
  });
});

/** A minimal valid kubeconfig as an object, for the validation cases to alter. */
function config(user: Record<string, unknown> = { token: 'abc123' }, cluster: Record<string, unknown> = { server: 'https://k8s.example.com:6443' }) {
  return {
    apiVersion: 'v1', kind: 'Config', 'current-context': 'main',
    clusters: [{ name: 'c', cluster }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'main', context: { cluster: 'c', user: 'u' } }],
  };
}
const json = (o: unknown) => JSON.stringify(o);

function rejects(text: string, pattern: RegExp): void {
  assert.throws(() => parseKubeconfig(text), (err: unknown) => {
    assert.ok(err instanceof KubeconfigError, String(err));
    assert.match(err.message, pattern);
    return true;
  });
}

describe('kubeconfig validation', () => {
  test('valid YAML and JSON are accepted and resolve the current context', () => {
    const yamlText = standinKubeconfig('https://k8s.example.com:6443/');
    const parsed = parseKubeconfig(yamlText);
    assert.deepEqual(parsed, {
      context: 'standin', namespace: 'default',
      cluster: { name: 'standin', server: 'https://k8s.example.com:6443', skipTlsVerify: false },
      user: { name: 'standin-admin', token: STANDIN_TOKEN },
    });
    assert.deepEqual(parseKubeconfig(standinKubeconfig('https://k8s.example.com:6443/', { format: 'json' })), parsed);
    // Inline client certificate, CA data, basic auth, insecure-skip-tls-verify, and an unused second context.
    const rich = config({ 'client-certificate-data': b64(TEST_CLIENT_CERT), 'client-key-data': b64(TEST_CLIENT_KEY) }, { server: 'https://10.0.0.1', 'certificate-authority-data': b64(STANDIN_SERVER_CERT), 'tls-server-name': 'kubernetes' });
    rich.users.push({ name: 'basic', user: { username: 'admin', password: 'pa ss' } as never });
    rich.clusters.push({ name: 'lab', cluster: { server: 'http://127.0.0.1:8080', 'insecure-skip-tls-verify': true } });
    rich.contexts.push({ name: 'lab', context: { cluster: 'lab', user: 'basic' } });
    const r = parseKubeconfig(json(rich));
    assert.equal(r.user.clientCertificateData, b64(TEST_CLIENT_CERT));
    assert.equal(r.cluster.tlsServerName, 'kubernetes');
    // YAML scalars keep the text written (kubectl reads them so): a password `1e3` stays "1e3".
    const lab = parseKubeconfig([
      'apiVersion: v1', 'kind: Config', 'current-context: lab', 'preferences: {}',
      'clusters:', '- name: lab', '  cluster:', '    server: http://127.0.0.1:8080', '    insecure-skip-tls-verify: true',
      'users:', '- name: basic', '  user:', '    username: admin', '    password: 1e3',
      'contexts:', '- name: lab', '  context:', '    cluster: lab', '    user: basic', '',
    ].join('\n'));
    assert.deepEqual(lab.cluster, { name: 'lab', server: 'http://127.0.0.1:8080', skipTlsVerify: true });
    assert.deepEqual(lab.user, { name: 'basic', username: 'admin', password: '1e3' });
  });

  test('exec and auth-provider users are rejected, used or not', () => {
    rejects(json(config({ exec: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: 'aws', args: ['eks', 'get-token'] } })), /users\[0\]\.user\.exec .*run a command/);
    rejects(json(config({ 'auth-provider': { name: 'gcp', config: { 'cmd-path': '/usr/bin/gcloud' } } })), /auth-provider/);
    const unused = config();
    unused.users.push({ name: 'eks', user: { exec: { command: 'sh', args: ['-c', 'id'] } } as never });
    rejects(json(unused), /users\[1\]\.user\.exec/);
  });

  test('every file-path field is rejected', () => {
    rejects(json(config({ tokenFile: '/etc/passwd' })), /tokenFile .*names a file/);
    rejects(json(config({ 'token-file': '/var/run/secrets/kubernetes.io/serviceaccount/token' })), /token-file .*inline as token/);
    rejects(json(config({ 'client-certificate': '/home/me/.kube/cert.pem', 'client-key': '/home/me/.kube/key.pem' })), /client-certificate .*client-certificate-data/);
    rejects(json(config({ 'client-key': 'key.pem', 'client-certificate-data': b64(TEST_CLIENT_CERT) })), /client-key .*client-key-data/);
    rejects(json(config(undefined, { server: 'https://k', 'certificate-authority': '/etc/ssl/ca.pem' })), /certificate-authority .*certificate-authority-data/);
    rejects(json(config(undefined, { server: 'https://k', 'proxy-url': 'socks5://proxy:1080' })), /proxy-url is not supported/);
    rejects(json(config({ token: 'x', as: 'system:admin' })), /impersonation/);
  });

  test('a missing or dangling current-context is rejected', () => {
    const none: Record<string, unknown> = config();
    delete none['current-context'];
    rejects(json(none), /no current-context/);
    rejects(json({ ...config(), 'current-context': 'other' }), /current-context "other" does not name an entry of contexts/);
    const noCluster = config();
    noCluster.contexts[0]!.context.cluster = 'missing';
    rejects(json(noCluster), /context\.cluster does not name an entry of clusters/);
    const noUser = config();
    noUser.contexts[0]!.context.user = 'missing';
    rejects(json(noUser), /context\.user does not name an entry of users/);
    rejects(json(config(undefined, { 'certificate-authority-data': b64(STANDIN_SERVER_CERT) })), /server is required/);
  });

  test('garbage, wrong shapes and bad values are rejected', () => {
    rejects('', /empty/);
    rejects('clusters: [unclosed', /neither valid YAML nor JSON/);
    rejects('{"clusters": ', /neither valid YAML nor JSON/);
    rejects('just a string', /must be a mapping/);
    rejects('- 1\n- 2\n', /must be a mapping/);
    rejects(json({ ...config(), clusters: 'c' }), /clusters must be a list/);
    rejects(json({ ...config(), kind: 'Pod' }), /kind must be Config/);
    rejects(json({ ...config(), surprise: 1 }), /kubeconfig\.surprise is not a supported kubeconfig field/);
    rejects(json(config(undefined, { server: 'ftp://k8s.example.com' })), /http or https/);
    rejects(json(config(undefined, { server: 'not a url' })), /not a URL/);
    rejects(json(config(undefined, { server: 'https://admin:pw@k8s.example.com' })), /must not carry credentials/);
    rejects(json(config({ token: 'abc\r\nX-Injected: 1' })), /printable ASCII/);
    rejects(json(config({ token: 'abc', username: 'a', password: 'b' })), /not both/);
    rejects(json(config({ username: 'a' })), /username and password go together/);
    rejects(json(config({ 'client-certificate-data': b64(TEST_CLIENT_CERT) })), /go together/);
    rejects(json(config({ 'client-certificate-data': b64(TEST_CLIENT_CERT), 'client-key-data': 'not base64!' })), /base64/);
    rejects(json(config({ 'client-certificate-data': b64(STANDIN_SERVER_CERT), 'client-key-data': b64(TEST_CLIENT_KEY) })), /does not match/);
    rejects(json(config(undefined, { server: 'https://k', 'certificate-authority-data': b64('hello') })), /does not hold a PEM certificate/);
    rejects(json(config(undefined, { server: 'https://k', 'certificate-authority-data': b64(STANDIN_SERVER_CERT), 'insecure-skip-tls-verify': true })), /exclude each other/);
    const dup = config();
    dup.users.push({ name: 'u', user: { token: 'x' } });
    rejects(json(dup), /two entries named "u"/);
  });

  test('oversized text is rejected before it is parsed', () => {
    const big = standinKubeconfig('https://k8s.example.com') + `# ${'x'.repeat(KUBECONFIG_MAX_BYTES)}\n`;
    rejects(big, /larger than 256 KiB/);
  });

  test('error messages never quote the document (a token on a broken line stays out)', () => {
    const text = 'users:\n- name: u\n  user:\n    token: s3cr3t-t0ken-value\n   bad: indentation\n';
    assert.throws(() => parseKubeconfig(text), (err: unknown) => {
      assert.ok(err instanceof KubeconfigError);
      assert.ok(!err.message.includes('s3cr3t'), err.message);
      assert.match(err.message, /line \d+/);
      return true;
    });
  });

  test('assertValidKubeconfig turns a bad kubeconfig into a 400 ApiError naming the field', () => {
    assert.throws(() => assertValidKubeconfig(json(config({ exec: { command: 'id' } }))), (err: unknown) => {
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 400);
      assert.equal(err.code, 'INVALID_ARGUMENT');
      assert.equal(err.options.reason, 'INVALID_KUBECONFIG');
      assert.equal(err.options.fieldViolations?.[0]?.field, 'body.kubeconfig');
      assert.match(err.message, /^invalid kubeconfig: users\[0\]\.user\.exec/);
      return true;
    });
    assert.equal(assertValidKubeconfig(json(config())).cluster.server, 'https://k8s.example.com:6443');
  });
});
