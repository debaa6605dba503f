// A local stand-in for a Kubernetes API server: answers the paths the kubernetes cluster driver reads
// (/version, /api, /apis, nodes, storage classes, ingress classes, Gateway API classes and gateways)
// with JSON shaped as a real API server returns it (kinds, list metadata, Status errors, continue
// tokens), and checks credentials like one (bearer token, or a client certificate over TLS). What
// the driver writes (namespaces, server-side apply of an install's objects, lists, deletes) is
// k8s-standin-objects.ts; what its controllers add (pods of Deployments, HTTPRoute and Ingress
// status) is k8s-standin-controllers.ts.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import yaml from 'js-yaml';
import { ObjectStore } from './k8s-standin-objects.js';
import { PodLogs } from './k8s-standin-logs.js';
import { createServiceProxy } from './k8s-standin-proxy.js';

export { readyStatus } from './k8s-standin-objects.js';
export { INGRESS_ADDRESS } from './k8s-standin-controllers.js';

/**
 * Test-only TLS material (never used outside tests). The server certificate is self-signed for
 * 127.0.0.1/localhost, so a kubeconfig trusts it by giving it as certificate-authority-data; the
 * client certificate (CN svc-test-client) is the one client the stand-in accepts over mutual TLS.
 */
export const STANDIN_SERVER_CERT = `-----BEGIN CERTIFICATE-----
MIIBnzCCAUWgAwIBAgIUIyC4TJ+YsqYe7qoo4HnNtlgSSt4wCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLazhzLXN0YW5kaW4wIBcNMjYxMTIyMDEyNDMyWhgPMjEyNjEw
MjkwMTI0MzJaMBYxFDASBgNVBAMMC2s4cy1zdGFuZGluMFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAEAU3NK3NZnwAYt0wNVB33XrDoZR/xgwX4ZPyYmkDkykKjpyMj
wNRkab85MWUdJ33ZEeZTFJ2QGYoCh9TFCA+zjqNvMG0wHQYDVR0OBBYEFE9FyFwv
FNNSHL2z9uvxaxEWhz6LMB8GA1UdIwQYMBaAFE9FyFwvFNNSHL2z9uvxaxEWhz6L
MA8GA1UdEwEB/wQFMAMBAf8wGgYDVR0RBBMwEYcEfwAAAYIJbG9jYWxob3N0MAoG
CCqGSM49BAMCA0gAMEUCIBrUYpMKfNkXEAu2gSJRWk1xV/6tTpTPg6vyFLlUq18p
AiEAyGZ0TMMJRMpOVtH7TADAz5X1+bA84oQXG93bHN08+eA=
-----END CERTIFICATE-----
`;
const STANDIN_SERVER_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgoEgsveGHdpxJzcDf
xKeQR7+wiFHKHDVC60BtgZq2/gChRANCAAQBTc0rc1mfABi3TA1UHfdesOhlH/GD
Bfhk/JiaQOTKQqOnIyPA1GRpvzkxZR0nfdkR5lMUnZAZigKH1MUID7OO
-----END PRIVATE KEY-----
`;
export const TEST_CLIENT_CERT = `-----BEGIN CERTIFICATE-----
MIIBvjCCAWOgAwIBAgIUIzUwo/F2MdeT3FImH0pgYPbe5hQwCgYIKoZIzj0EAwIw
MzEYMBYGA1UEAwwPc3ZjLXRlc3QtY2xpZW50MRcwFQYDVQQKDA5zeXN0ZW06bWFz
dGVyczAgFw0yNjExMjIwMTI0MzJaGA8yMTI2MTAyOTAxMjQzMlowMzEYMBYGA1UE
AwwPc3ZjLXRlc3QtY2xpZW50MRcwFQYDVQQKDA5zeXN0ZW06bWFzdGVyczBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABPWROWgMFST+ww1ifEFTRDoXtv0H5L4XfZ8G
A5jSZfGG3a6dmHHbH4Ki25uDYo6yufMVmTwiFPXVVWzNkmbrOHCjUzBRMB0GA1Ud
DgQWBBS4boOvGumuV7aQ3YO+pN4n99i5RDAfBgNVHSMEGDAWgBS4boOvGumuV7aQ
3YO+pN4n99i5RDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0kAMEYCIQDy
w9Sgg6V2vowyP++NkcEDcG2dmR2fBcL1U3t5wMJDjgIhAMQamqWIWsseCHJaZIMW
13x8Fyw3bcJhRRq1Q1O/rVah
-----END CERTIFICATE-----
`;
export const TEST_CLIENT_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgms0O5MvwNZzOi10X
CnVr74b2YVG0hMnYSP1iWWN7gNmhRANCAAT1kTloDBUk/sMNYnxBU0Q6F7b9B+S+
F32fBgOY0mXxht2unZhx2x+Cotubg2KOsrnzFZk8IhT11VVszZJm6zhw
-----END PRIVATE KEY-----
`;

export const STANDIN_TOKEN = 'standin-token-0123456789abcdef';

export interface StandinOptions {
  /** the bearer token accepted (default STANDIN_TOKEN) */
  token?: string;
  /** serve gateway.networking.k8s.io (default true); false: absent from /apis, its paths 404 */
  gatewayApi?: boolean;
  /** have IngressClasses and an ingress controller (default true); false: no IngressClass */
  ingress?: boolean;
  /** the first N requests answer 503 (a Status body), as an overloaded or restarting server */
  failTimes?: number;
  /** every answer waits this long first */
  delayMs?: number;
  /** serve TLS with STANDIN_SERVER_CERT, also accepting TEST_CLIENT_CERT as a client certificate */
  https?: boolean;
  /** lists return at most this many items per page whatever `limit` asks, to exercise `continue` */
  maxPageSize?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  /** CN of a verified client certificate */
  clientCertCn: string | undefined;
  contentType: string | undefined;
  /** the request body as sent ('' when none) */
  body: string;
}

export interface K8sStandin {
  url: string;
  requests: RecordedRequest[];
  /** requests still to be answered 503; tests may set it */
  failRemaining: number;
  /** namespaces and applied objects; tests read them, set their status, deny resources, slow namespace deletion */
  objects: ObjectStore;
  /** pods and their logs (k8s-standin-logs.ts): which follows are open, which the client closed */
  logs: PodLogs;
  /** stores a running Pod with these containers */
  addPod(namespace: string, name: string, containers: string[], labels?: Record<string, string>): void;
  /** appends a line to a container's log, written at once to the requests following it */
  appendLog(namespace: string, pod: string, container: string, line: string, at?: Date): void;
  /** the service proxy's workloads: `{ns}/{name}:{port}` -> http://127.0.0.1:port (k8s-standin-proxy.ts) */
  serviceBackends: Map<string, string>;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

const CREATED = '2024-05-14T09:12:31Z';
const status = (code: number, reason: string, message: string): Json => ({
  kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code,
});

export const VERSION_INFO = {
  major: '1', minor: '31', gitVersion: 'v1.31.2', gitCommit: '5864a4677267e6adeae276ad85882a8714d69d9d',
  gitTreeState: 'clean', buildDate: '2024-10-22T20:28:14Z', goVersion: 'go1.22.8', compiler: 'gc', platform: 'linux/amd64',
};

/** group name -> served versions, preferred first (a kind-like v1.31 cluster). */
const GROUPS: [string, string[]][] = [
  ['apiregistration.k8s.io', ['v1']], ['apps', ['v1']], ['events.k8s.io', ['v1']], ['authentication.k8s.io', ['v1']],
  ['authorization.k8s.io', ['v1']], ['autoscaling', ['v2', 'v1']], ['batch', ['v1']], ['certificates.k8s.io', ['v1']],
  ['networking.k8s.io', ['v1']], ['policy', ['v1']], ['rbac.authorization.k8s.io', ['v1']], ['storage.k8s.io', ['v1']],
  ['admissionregistration.k8s.io', ['v1']], ['apiextensions.k8s.io', ['v1']], ['scheduling.k8s.io', ['v1']],
  ['coordination.k8s.io', ['v1']], ['node.k8s.io', ['v1']], ['discovery.k8s.io', ['v1']],
  ['flowcontrol.apiserver.k8s.io', ['v1', 'v1beta3']], ['gateway.networking.k8s.io', ['v1', 'v1beta1']],
];

function apiGroupList(gatewayApi: boolean): Json {
  const groups = GROUPS.filter(([name]) => gatewayApi || name !== 'gateway.networking.k8s.io').map(([name, versions]) => {
    const vs = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
    return { name, versions: vs, preferredVersion: vs[0] };
  });
  return { kind: 'APIGroupList', apiVersion: 'v1', groups };
}

function condition(type: string, s: string, reason: string, message: string): Json {
  const t = '2024-11-02T10:00:00Z';
  return { type, status: s, lastHeartbeatTime: t, lastTransitionTime: t, reason, message };
}

function node(name: string, o: { roles: string[]; ready: 'True' | 'False' | 'Unknown'; readyMessage: string; cpu: string; memory: string; arch: string; created: string }): Json {
  const labels: Record<string, string> = {
    'beta.kubernetes.io/arch': o.arch, 'beta.kubernetes.io/os': 'linux', 'kubernetes.io/arch': o.arch,
    'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux',
  };
  for (const r of o.roles) labels[`node-role.kubernetes.io/${r}`] = '';
  const capacity = { cpu: o.cpu, 'ephemeral-storage': '102626232Ki', 'hugepages-2Mi': '0', memory: o.memory, pods: '110' };
  return {
    metadata: {
      name, uid: `6b1f${name.length}c2e-8d1a-4c3e-9f0e-${name.padEnd(12, '0').slice(0, 12)}`, resourceVersion: '48213',
      creationTimestamp: o.created, labels,
      annotations: { 'kubeadm.alpha.kubernetes.io/cri-socket': 'unix:///run/containerd/containerd.sock', 'node.alpha.kubernetes.io/ttl': '0' },
    },
    spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'], providerID: `kind://docker/kind/${name}` },
    status: {
      capacity, allocatable: capacity,
      conditions: [
        condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
        condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        condition('Ready', o.ready, o.ready === 'True' ? 'KubeletReady' : 'NodeStatusUnknown', o.readyMessage),
      ],
      addresses: [{ type: 'InternalIP', address: '172.18.0.2' }, { type: 'Hostname', address: name }],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: '2b0d1c5e0c9b4f1f8a4f1b7d6e3c2a10', systemUUID: '2b0d1c5e-0c9b-4f1f-8a4f-1b7d6e3c2a10', bootID: 'a4c1a1d2-77a8-4bd4-9b1e-3f0c9d1f2e11',
        kernelVersion: '6.8.0-45-generic', osImage: 'Debian GNU/Linux 12 (bookworm)', containerRuntimeVersion: 'containerd://1.7.18',
        kubeletVersion: 'v1.31.2', kubeProxyVersion: 'v1.31.2', operatingSystem: 'linux', architecture: o.arch,
      },
      images: [],
    },
  };
}

export const NODES = [
  node('kind-control-plane', { roles: ['control-plane'], ready: 'True', readyMessage: 'kubelet is posting ready status', cpu: '4', memory: '16283908Ki', arch: 'amd64', created: CREATED }),
  node('kind-worker', { roles: ['worker', 'ingress'], ready: 'True', readyMessage: 'kubelet is posting ready status', cpu: '8', memory: '32Gi', arch: 'arm64', created: '2024-05-14T09:13:02Z' }),
  node('kind-worker2', { roles: [], ready: 'Unknown', readyMessage: 'Kubelet stopped posting node status.', cpu: '2', memory: '4Gi', arch: 'amd64', created: '2024-06-01T00:00:00Z' }),
];

const meta = (name: string, extra: Json = {}): Json => ({ name, uid: `0f${name.length}3a7c1-5e2b-4d8a-9c1f-7b6e5d4c3b2a`, resourceVersion: '3021', creationTimestamp: CREATED, ...extra });

export const STORAGE_CLASSES = [
  { metadata: meta('standard', { annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } }), provisioner: 'rancher.io/local-path', reclaimPolicy: 'Delete', volumeBindingMode: 'WaitForFirstConsumer' },
  { metadata: meta('fast-ssd', { annotations: { 'storageclass.kubernetes.io/is-default-class': 'false' } }), provisioner: 'ebs.csi.aws.com', parameters: { type: 'gp3' }, reclaimPolicy: 'Retain', volumeBindingMode: 'Immediate', allowVolumeExpansion: true },
  // Written without the defaulted fields, as objects stored by old API servers may read.
  { metadata: meta('legacy'), provisioner: 'kubernetes.io/no-provisioner' },
];

export const INGRESS_CLASSES = [
  { metadata: meta('nginx', { annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } }), spec: { controller: 'k8s.io/ingress-nginx' } },
  { metadata: meta('traefik'), spec: { controller: 'traefik.io/ingress-controller' } },
];

export const GATEWAY_CLASSES = [
  { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: meta('eg'), spec: { controllerName: 'gateway.envoyproxy.io/gatewayclass-controller' },
    status: { conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Valid GatewayClass', observedGeneration: 1, lastTransitionTime: CREATED }] } },
  { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: meta('cilium'), spec: { controllerName: 'io.cilium/gateway-controller' } },
];

const gwCondition = (type: string, reason: string, message: string): Json => ({ type, status: 'True', reason, message, observedGeneration: 1, lastTransitionTime: CREATED });
export const GATEWAYS = [
  { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: meta('public-gw', { namespace: 'default', generation: 1 }),
    spec: { gatewayClassName: 'eg', listeners: [
      // Routes of every namespace may attach (each install has its own namespace), as a shared gateway is set up.
      { name: 'http', protocol: 'HTTP', port: 80, allowedRoutes: { namespaces: { from: 'All' } } },
      { name: 'https', protocol: 'HTTPS', port: 443, hostname: '*.example.com', tls: { mode: 'Terminate', certificateRefs: [{ kind: 'Secret', name: 'wildcard-tls' }] } },
    ] },
    status: {
      addresses: [{ type: 'IPAddress', value: '203.0.113.10' }, { type: 'Hostname', value: 'gw.example.net' }],
      conditions: [gwCondition('Accepted', 'Accepted', 'The Gateway has been scheduled by Envoy Gateway'), gwCondition('Programmed', 'Programmed', 'Address assigned to the Gateway, 1/1 envoy Deployment replicas available')],
      listeners: [{ name: 'http', attachedRoutes: 2, supportedKinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }], conditions: [] }],
    } },
  { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: meta('internal-gw', { namespace: 'infra', generation: 2 }),
    spec: { gatewayClassName: 'cilium', listeners: [{ name: 'postgres', protocol: 'TCP', port: 5432 }] },
    status: { addresses: [{ value: '10.96.12.7' }], conditions: [gwCondition('Accepted', 'Accepted', 'Gateway successfully scheduled')] } },
  { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: meta('pending-gw', { namespace: 'infra', generation: 1 }),
    spec: { gatewayClassName: 'eg', listeners: [{ name: 'udp-dns', protocol: 'UDP', port: 53 }] } },
];

/** A list answer, honouring `limit` and `continue` (an opaque offset token) as the API server does. */
function list(kind: string, apiVersion: string, items: Json[], query: URLSearchParams, maxPage: number | undefined): Json {
  const start = query.get('continue') ? Number(Buffer.from(query.get('continue')!, 'base64url').toString()) : 0;
  const asked = Number(query.get('limit')) || items.length;
  const size = Math.min(asked, maxPage ?? asked);
  const page = items.slice(start, start + size);
  const rest = items.length - start - page.length;
  const metadata: Json = { resourceVersion: '48213' };
  if (rest > 0) Object.assign(metadata, { continue: Buffer.from(String(start + size)).toString('base64url'), remainingItemCount: rest });
  return { kind, apiVersion, metadata, items: page };
}

export async function startK8sStandin(options: StandinOptions = {}): Promise<K8sStandin> {
  const token = options.token ?? STANDIN_TOKEN;
  const gatewayApi = options.gatewayApi ?? true;
  const ingressClasses = options.ingress === false ? [] : INGRESS_CLASSES;
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const routes: Record<string, (q: URLSearchParams) => Json> = {
    '/version': () => VERSION_INFO,
    '/api': () => ({ kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '172.18.0.2:6443' }] }),
    '/apis': () => apiGroupList(gatewayApi),
    '/api/v1/nodes': (q) => list('NodeList', 'v1', NODES, q, options.maxPageSize),
    '/apis/storage.k8s.io/v1/storageclasses': (q) => list('StorageClassList', 'storage.k8s.io/v1', STORAGE_CLASSES, q, options.maxPageSize),
    '/apis/networking.k8s.io/v1/ingressclasses': (q) => list('IngressClassList', 'networking.k8s.io/v1', ingressClasses, q, options.maxPageSize),
  };
  if (gatewayApi) {
    routes['/apis/gateway.networking.k8s.io/v1/gatewayclasses'] = (q) => list('GatewayClassList', 'gateway.networking.k8s.io/v1', GATEWAY_CLASSES, q, options.maxPageSize);
    routes['/apis/gateway.networking.k8s.io/v1/gateways'] = (q) => list('GatewayList', 'gateway.networking.k8s.io/v1', GATEWAYS, q, options.maxPageSize);
  }

  const objects = new ObjectStore(gatewayApi, { gateways: GATEWAYS, ingressClasses: ingressClasses.map((ic) => ic.metadata.name as string) });
  const logs = new PodLogs(objects);

  const handle = (req: IncomingMessage, res: ServerResponse, body: string) => {
    const url = new URL(req.url ?? '/', 'http://standin');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const socket = req.socket as Partial<TLSSocket>;
    const peer = socket.authorized && socket.getPeerCertificate ? socket.getPeerCertificate() : undefined;
    const clientCertCn = peer?.subject?.CN ? String(peer.subject.CN) : undefined;
    const contentType = req.headers['content-type'];
    requests.push({ method: req.method ?? '', path, query: Object.fromEntries(url.searchParams), authorization: req.headers.authorization, clientCertCn, contentType, body });
    const send = (code: number, body: Json) => {
      if (res.destroyed) return;
      res.writeHead(code, { 'content-type': 'application/json', 'audit-id': `standin-${requests.length}` });
      res.end(JSON.stringify(body));
    };
    const answer = () => {
      if (stand.failRemaining > 0) {
        stand.failRemaining--;
        return send(503, status(503, 'ServiceUnavailable', 'the server is currently unable to handle the request'));
      }
      if (req.headers.authorization !== `Bearer ${token}` && clientCertCn !== 'svc-test-client') return send(401, status(401, 'Unauthorized', 'Unauthorized'));
      const route = req.method === 'GET' ? routes[path] : undefined;
      if (route) return send(200, route(url.searchParams));
      if (logs.handle(req.method ?? '', path, url.searchParams, res)) return;
      const answer = objects.handle(req.method ?? '', path, url.searchParams, contentType ?? '', body);
      if (answer) return send(answer.code, answer.body);
      if (req.method !== 'GET') return send(405, status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'));
      send(404, { ...status(404, 'NotFound', 'the server could not find the requested resource'), details: {} });
    };
    if (!options.delayMs) return answer();
    const timer = setTimeout(() => {
      timers.delete(timer);
      answer();
    }, options.delayMs);
    timers.add(timer);
  };

  // The service proxy streams (k8s-standin-proxy.ts); it checks the same credentials.
  const proxy = createServiceProxy();
  const authorized = (req: IncomingMessage) => {
    const socket = req.socket as Partial<TLSSocket>;
    const peer = socket.authorized && socket.getPeerCertificate ? socket.getPeerCertificate() : undefined;
    return req.headers.authorization === `Bearer ${token}` || peer?.subject?.CN === 'svc-test-client';
  };

  // The body is read whole before anything is answered, as an API server decodes it first.
  const receive = (req: IncomingMessage, res: ServerResponse) => {
    if (proxy.handle(req, res, authorized(req))) return;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  };
  const server: Server = options.https
    ? createHttpsServer({ cert: STANDIN_SERVER_CERT, key: STANDIN_SERVER_KEY, ca: [TEST_CLIENT_CERT], requestCert: true, rejectUnauthorized: false }, receive)
    : createHttpServer(receive);
  server.on('upgrade', (req: IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => proxy.handleUpgrade(req, socket, head, authorized(req)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const stand: K8sStandin = {
    url: `${options.https ? 'https' : 'http'}://127.0.0.1:${port}`,
    requests,
    failRemaining: options.failTimes ?? 0,
    objects,
    logs,
    addPod: (namespace, name, containers, labels) => logs.addPod(namespace, name, containers, labels),
    appendLog: (namespace, pod, container, line, at) => logs.appendLog(namespace, pod, container, line, at),
    serviceBackends: proxy.serviceBackends,
    close: () => new Promise<void>((resolve) => {
      for (const t of timers) clearTimeout(t);
      objects.close();
      logs.close();
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  return stand;
}

export interface StandinKubeconfigOptions {
  token?: string | null;
  format?: 'yaml' | 'json';
  /** base64 of the CA bundle (https stand-ins: STANDIN_SERVER_CERT) */
  caData?: string;
  /** authenticate with TEST_CLIENT_CERT instead of a token */
  clientCertificate?: boolean;
}

/** A kubeconfig (YAML by default) whose current context points at the stand-in, with inline credentials. */
export function standinKubeconfig(url: string, o: StandinKubeconfigOptions = {}): string {
  const user: Json = {};
  const token = o.token === undefined ? STANDIN_TOKEN : o.token;
  if (token !== null) user.token = token;
  if (o.clientCertificate) {
    user['client-certificate-data'] = Buffer.from(TEST_CLIENT_CERT).toString('base64');
    user['client-key-data'] = Buffer.from(TEST_CLIENT_KEY).toString('base64');
  }
  const cluster: Json = { server: url };
  if (o.caData) cluster['certificate-authority-data'] = o.caData;
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'standin', cluster }],
    users: [{ name: 'standin-admin', user }],
    contexts: [{ name: 'standin', context: { cluster: 'standin', user: 'standin-admin', namespace: 'default' } }],
    'current-context': 'standin',
    preferences: {},
  };
  return o.format === 'json' ? JSON.stringify(doc, null, 2) : yaml.dump(doc);
}
