// The `kubernetes` cluster driver: a cluster someone else runs, reached with the kubeconfig given at
// registration. It reads the cluster's capabilities; the only things it changes are the namespaces
// of installs and the objects in them (kubernetes-deploy.ts).
import {
  ApiException,
  ApisApi,
  CoreApi,
  CoreV1Api,
  CustomObjectsApi,
  FetchError,
  KubeConfig,
  NetworkingV1Api,
  Observable,
  StorageV1Api,
  ServerConfiguration,
  VersionApi,
  createConfiguration,
  type ConfigurationOptions,
  type ObservableMiddleware,
  type V1Node,
  type V1StorageClass,
} from '@kubernetes/client-node';
import {
  ClusterDriverError,
  type ClusterCapabilitiesT,
  type ClusterDriver,
  type ClusterTarget,
  type DriverCallContext,
} from './driver.js';
import { credentialSecrets, kubeconfigOf, redactSecrets } from './kubeconfig.js';
import { openKubernetesLogs } from './kubernetes-logs.js';
import { ObjectClient, applyRender, deleteNamespace, readRenderStatus, type DeployCall } from './kubernetes-deploy.js';
import { applyRouteObjects, checkPods, routeObjectsNotReady } from './kubernetes-routes.js';

type Caps = ClusterCapabilitiesT;
type Obj = Record<string, unknown>;

export interface KubernetesDriverOptions {
  /** each request to the cluster API is abandoned after this long (default 10 s) */
  requestTimeoutMs?: number;
}

const GATEWAY_GROUP = 'gateway.networking.k8s.io';
const DEFAULT_CLASS_ANNOTATIONS = ['storageclass.kubernetes.io/is-default-class', 'storageclass.beta.kubernetes.io/is-default-class'];
const ROLE_LABEL_PREFIX = 'node-role.kubernetes.io/';
/** list pages: 500 items each, and no more than 20 pages (10,000 items) of one kind */
const PAGE_SIZE = 500;
const MAX_PAGES = 20;
/** TLS failures that no retry can fix: the kubeconfig's CA or server name is wrong. */
const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** One driver call's view of the cluster: API clients and the options every request carries. */
interface Connection {
  core: CoreApi;
  apis: ApisApi;
  version: VersionApi;
  coreV1: CoreV1Api;
  storage: StorageV1Api;
  networking: NetworkingV1Api;
  custom: CustomObjectsApi;
  /** any kind, through discovery; its requests carry the deadline middleware in its configuration */
  objects: ObjectClient;
  options: ConfigurationOptions;
  /** values that must never appear in an error message */
  secrets: string[];
}

/**
 * The abort signals of one driver call's requests: each request gets its own deadline, and the
 * caller's signal (step timeout, lost lease, shutdown) aborts every request in flight. Plain timers
 * held until dispose(), not AbortSignal.any([.., AbortSignal.timeout()]): on Node 20 a garbage
 * collection can drop that timeout signal before it fires, and the request then never times out.
 */
class RequestDeadlines {
  private readonly live = new Set<{ controller: AbortController; timer: NodeJS.Timeout }>();
  private readonly onCallerAbort = () => {
    for (const r of this.live) r.controller.abort(this.caller.reason);
  };

  constructor(private readonly caller: AbortSignal, private readonly timeoutMs: number) {
    caller.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  signal(): AbortSignal {
    const controller = new AbortController();
    if (this.caller.aborted) controller.abort(this.caller.reason);
    const timer = setTimeout(() => controller.abort(new DOMException('request timed out', 'TimeoutError')), this.timeoutMs);
    this.live.add({ controller, timer });
    return controller.signal;
  }

  dispose(): void {
    this.caller.removeEventListener('abort', this.onCallerAbort);
    for (const r of this.live) clearTimeout(r.timer);
    this.live.clear();
  }
}

function connect(target: ClusterTarget, deadlines: RequestDeadlines): Connection {
  const { cluster, user } = kubeconfigOf(target);
  const kc = new KubeConfig();
  // Built from the validated fields only, so the client has no file to read and no command to run.
  kc.loadFromOptions({
    clusters: [{
      name: 'target',
      server: cluster.server,
      caData: cluster.caData,
      tlsServerName: cluster.tlsServerName,
      // The client refuses an http server unless this is set; on http there is no TLS to verify,
      // so the flag only selects its plain-HTTP agent.
      skipTLSVerify: cluster.skipTlsVerify || cluster.server.startsWith('http:'),
    }],
    users: [{
      name: 'target',
      token: user.token,
      username: user.username,
      password: user.password,
      certData: user.clientCertificateData,
      keyData: user.clientKeyData,
    }],
    contexts: [{ name: 'target', cluster: 'target', user: 'target' }],
    currentContext: 'target',
  });
  const deadline: ObservableMiddleware = {
    pre: (request) => {
      request.setSignal(deadlines.signal());
      return new Observable(Promise.resolve(request));
    },
    post: (response) => new Observable(Promise.resolve(response)),
  };
  return {
    core: kc.makeApiClient(CoreApi),
    apis: kc.makeApiClient(ApisApi),
    version: kc.makeApiClient(VersionApi),
    coreV1: kc.makeApiClient(CoreV1Api),
    storage: kc.makeApiClient(StorageV1Api),
    networking: kc.makeApiClient(NetworkingV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    // KubernetesObjectApi takes no per-call middleware (its requests use the configuration's only),
    // so its configuration is built with the deadline in it, as makeApiClient builds the others.
    objects: new ObjectClient(createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: kc },
      middleware: [deadline],
    })),
    options: { middleware: [deadline], middlewareMergeStrategy: 'append' },
    secrets: credentialSecrets(user),
  };
}

/** The `message` of a Kubernetes Status body, if the error body is one. */
function statusMessage(body: unknown): string {
  try {
    const parsed: unknown = typeof body === 'string' ? JSON.parse(body) : body;
    const message = isObj(parsed) ? parsed.message : undefined;
    return typeof message === 'string' ? message : '';
  } catch {
    return '';
  }
}

/** Maps a failed request to a ClusterDriverError: retryable when waiting may help. */
function toDriverError(err: unknown, what: string, conn: Connection, ctx: DriverCallContext, timeoutMs: number): ClusterDriverError {
  if (err instanceof ClusterDriverError) return err;
  if (ctx.signal.aborted) return new ClusterDriverError(`${what}: aborted`, true);
  if (err instanceof ApiException) {
    const code: number = err.code;
    const detail = redactSecrets(statusMessage(err.body), conn.secrets);
    const suffix = detail ? `: ${detail}` : '';
    if (code === 401) return new ClusterDriverError(`${what}: credentials rejected by the cluster API (HTTP 401)`, false);
    // Forbidden: the credentials lack a permission (RBAC); only the cluster's owner can grant it.
    if (code === 403) return new ClusterDriverError(`${what}: access forbidden (HTTP 403)${suffix}`, false);
    if (code === 408 || code === 429 || code >= 500) return new ClusterDriverError(`${what}: the cluster API answered HTTP ${code}${suffix}`, true);
    if (code === 404) return new ClusterDriverError(`${what}: not found (HTTP 404); is the server a Kubernetes API server?`, false);
    return new ClusterDriverError(`${what}: the cluster API answered HTTP ${code}${suffix}`, false);
  }
  if (err instanceof Error && err.name === 'AbortError') {
    return new ClusterDriverError(`${what}: the cluster API did not answer within ${Math.round(timeoutMs / 100) / 10} s`, true);
  }
  if (err instanceof FetchError) {
    const code = err.code ?? err.type;
    if (TLS_CODES.has(code)) return new ClusterDriverError(`${what}: TLS verification of the cluster API failed (${code})`, false);
    return new ClusterDriverError(`${what}: could not reach the cluster API (${code})`, true);
  }
  // A body that is not Kubernetes JSON (an HTML page, another service): waiting will not fix it.
  if (err instanceof SyntaxError || (err instanceof Error && err.message.includes('mediaType'))) {
    return new ClusterDriverError(`${what}: the server did not answer like a Kubernetes API server`, false);
  }
  const message = err instanceof Error ? err.message : String(err);
  return new ClusterDriverError(`${what}: ${redactSecrets(message, conn.secrets)}`, true);
}

// Readers for custom resources, which the client hands back as untyped JSON.
function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
const obj = (v: unknown): Obj => (isObj(v) ? v : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
/** Bounded to the capabilities schema's string limits. */
const str = (v: unknown, max = 1024): string => (typeof v === 'string' ? v.slice(0, max) : '');

interface Page<T> {
  items: T[];
  next?: string;
}

async function listAll<T>(page: (cont: string | undefined) => Promise<Page<T>>): Promise<T[]> {
  const out: T[] = [];
  let cont: string | undefined;
  for (let i = 0; i < MAX_PAGES; i++) {
    const p = await page(cont);
    out.push(...(p.items ?? []));
    if (!p.next) break;
    cont = p.next;
  }
  return out;
}

function storageClass(sc: V1StorageClass): Caps['storage_classes'][number] {
  const annotations = sc.metadata?.annotations ?? {};
  return {
    name: str(sc.metadata?.name),
    provisioner: str(sc.provisioner),
    // Kubernetes' documented defaults when the fields are left out.
    reclaim_policy: str(sc.reclaimPolicy) || 'Delete',
    volume_binding_mode: str(sc.volumeBindingMode) || 'Immediate',
    is_default: DEFAULT_CLASS_ANNOTATIONS.some((a) => annotations[a] === 'true'),
  };
}

function nodeOf(n: V1Node): Caps['nodes'][number] {
  const labels = n.metadata?.labels ?? {};
  const roles = new Set<string>();
  for (const key of Object.keys(labels)) {
    if (key.startsWith(ROLE_LABEL_PREFIX) && key.length > ROLE_LABEL_PREFIX.length) roles.add(key.slice(ROLE_LABEL_PREFIX.length));
  }
  // The older label kubectl also reads.
  if (labels['kubernetes.io/role']) roles.add(labels['kubernetes.io/role']);
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
  const created = n.metadata?.creationTimestamp;
  return {
    name: str(n.metadata?.name),
    version: str(n.status?.nodeInfo?.kubeletVersion),
    cpu_capacity: str(n.status?.capacity?.cpu),
    memory_capacity: str(n.status?.capacity?.memory),
    os_image: str(n.status?.nodeInfo?.osImage),
    architecture: str(n.status?.nodeInfo?.architecture),
    status_message: str(ready?.message),
    // RFC 3339 as Kubernetes writes it (whole seconds, no ".000").
    created_at: created instanceof Date && !Number.isNaN(created.getTime()) ? created.toISOString().replace('.000Z', 'Z') : '',
    roles: [...roles].map((r) => r.slice(0, 253)).sort(),
    ready: ready?.status === 'True',
  };
}

function gatewayOf(raw: unknown): Caps['gateways'][number] {
  const g = obj(raw);
  const meta = obj(g.metadata);
  const spec = obj(g.spec);
  const status = obj(g.status);
  const conditions = arr(status.conditions).map(obj);
  const condition = conditions.find((c) => c.type === 'Programmed') ?? conditions.find((c) => c.type === 'Accepted');
  return {
    namespace: str(meta.namespace),
    name: str(meta.name),
    gateway_class_name: str(spec.gatewayClassName),
    status_message: str(condition?.message),
    listeners: arr(spec.listeners).map(obj).map((l) => ({
      name: str(l.name),
      protocol: str(l.protocol),
      hostname: str(l.hostname),
      port: Number.isInteger(l.port) && (l.port as number) >= 0 && (l.port as number) <= 65535 ? (l.port as number) : 0,
    })),
    addresses: arr(status.addresses).map(obj).map((a) => ({ type: str(a.type) || 'IPAddress', value: str(a.value) })),
  };
}

/** A page of a custom resource list (raw JSON: the continue token is `metadata.continue`). */
function rawPage(body: unknown): Page<unknown> {
  const list = obj(body);
  const next = str(obj(list.metadata).continue, 4096);
  return { items: arr(list.items), ...(next ? { next } : {}) };
}

async function readCapabilities(c: Connection): Promise<Caps> {
  const o = c.options;
  const [core, groups] = await Promise.all([c.core.getAPIVersions({}, o), c.apis.getAPIVersions({}, o)]);
  // Every served group version (as `kubectl api-versions` lists them), the core group as "v1".
  const apiGroups = new Set<string>(core.versions ?? []);
  for (const g of groups.groups ?? []) for (const v of g.versions ?? []) apiGroups.add(v.groupVersion);
  const gatewayServed = (groups.groups ?? []).some((g) => g.name === GATEWAY_GROUP && (g.versions ?? []).some((v) => v.version === 'v1'));

  const [storageClasses, ingressClasses, nodes, gatewayClasses, gateways] = await Promise.all([
    listAll(async (cont) => {
      const l = await c.storage.listStorageClass({ limit: PAGE_SIZE, _continue: cont }, o);
      return { items: l.items, next: l.metadata?._continue };
    }),
    listAll(async (cont) => {
      const l = await c.networking.listIngressClass({ limit: PAGE_SIZE, _continue: cont }, o);
      return { items: l.items, next: l.metadata?._continue };
    }),
    listAll(async (cont) => {
      const l = await c.coreV1.listNode({ limit: PAGE_SIZE, _continue: cont }, o);
      return { items: l.items, next: l.metadata?._continue };
    }),
    gatewayServed
      ? listAll(async (cont) => rawPage(await c.custom.listClusterCustomObject({ group: GATEWAY_GROUP, version: 'v1', plural: 'gatewayclasses', limit: PAGE_SIZE, _continue: cont }, o)))
      : Promise.resolve([]),
    gatewayServed
      ? listAll(async (cont) => rawPage(await c.custom.listCustomObjectForAllNamespaces({ group: GATEWAY_GROUP, version: 'v1', plural: 'gateways', limit: PAGE_SIZE, _continue: cont }, o)))
      : Promise.resolve([]),
  ]);

  return {
    api_groups: [...apiGroups].map((g) => g.slice(0, 253)),
    storage_classes: storageClasses.map(storageClass),
    gateway_classes: gatewayClasses.map((gc) => str(obj(obj(gc).metadata).name, 253)),
    gateways: gateways.map(gatewayOf),
    ingress_classes: ingressClasses.map((ic) => str(ic.metadata?.name, 253)),
    nodes: nodes.map(nodeOf),
  };
}

export function createKubernetesDriver(options: KubernetesDriverOptions = {}): ClusterDriver {
  const timeoutMs = options.requestTimeoutMs ?? 10_000;

  function deployCall(c: Connection, ctx: DriverCallContext): DeployCall {
    return {
      objects: c.objects, coreV1: c.coreV1, options: c.options, signal: ctx.signal, fail: (err, what) => toDriverError(err, what, c, ctx, timeoutMs),
      redact: (text) => redactSecrets(text, c.secrets),
      hide: (values) => c.secrets.push(...values.filter((v) => v.length >= 4)),
    };
  }

  async function call<T>(what: string, target: ClusterTarget, ctx: DriverCallContext, run: (c: Connection) => Promise<T>): Promise<T> {
    if (ctx.signal.aborted) throw new ClusterDriverError(`${what}: aborted`, true);
    const deadlines = new RequestDeadlines(ctx.signal, timeoutMs);
    try {
      const conn = connect(target, deadlines);
      try {
        return await run(conn);
      } catch (err) {
        throw toDriverError(err, what, conn, ctx, timeoutMs);
      }
    } finally {
      deadlines.dispose();
    }
  }

  return {
    provider: 'kubernetes',

    async provision(target, ctx) {
      await call('connecting to the cluster', target, ctx, async (c) => {
        // /version answers anyone and shows a Kubernetes API server is there; /api needs an
        // authenticated user, so it shows the credentials are accepted.
        const version = await c.version.getCode({}, c.options);
        if (!version.gitVersion) throw new ClusterDriverError('connecting to the cluster: the server did not answer like a Kubernetes API server', false);
        await c.core.getAPIVersions({}, c.options);
      });
    },

    async capabilities(target, ctx) {
      return call('reading cluster capabilities', target, ctx, readCapabilities);
    },

    async destroy() {
      // A registered Kubernetes cluster belongs to whoever registered it. What the service created
      // there are install namespaces, and a cluster is deleted only once it has no installs (each
      // undeployed), so there is nothing remote to release and unregistering is the database's
      // business. Resolving is trivially idempotent.
    },

    async deploy(target, spec, ctx) {
      await call(`deploying render ${spec.renderId}`, target, ctx, async (c) => {
        // An error message from the API server must never carry a secret value back into the operation.
        c.secrets.push(...Object.values(spec.secret?.data ?? {}).filter((v) => v.length >= 4));
        const d = deployCall(c, ctx);
        await applyRender(d, spec);
        // After the objects, so the Services the routes name exist when a controller first looks.
        await applyRouteObjects(d, spec, true);
      });
    },

    async applyRoutes(target, routing, ctx) {
      await call(`routing traffic to install ${routing.installId}`, target, ctx, (c) => applyRouteObjects(deployCall(c, ctx), routing, false));
    },

    async deploymentStatus(target, spec, ctx) {
      return call(`reading the status of render ${spec.renderId}`, target, ctx, async (c) => {
        const d = deployCall(c, ctx);
        // A crashing container fails the rollout whatever the workloads' counts say.
        await checkPods(d, spec);
        const workloads = await readRenderStatus(d, spec);
        const routes = await routeObjectsNotReady(d, spec);
        if (workloads.ready && routes.reasons.length === 0) {
          return { ready: true, message: workloads.message + (routes.count > 0 ? `, ${routes.count} route object(s) accepted` : '') };
        }
        return { ready: false, message: [...(workloads.ready ? [] : [workloads.message]), ...routes.reasons].join('; ') };
      });
    },

    async undeploy(target, deployment, ctx) {
      await call(`removing install ${deployment.installId}`, target, ctx, (c) => deleteNamespace(deployCall(c, ctx), deployment.namespace));
    },

    async logs(target, deployment, options, ctx) {
      return openKubernetesLogs(target, deployment, options, ctx, timeoutMs);
    },
  };
}
