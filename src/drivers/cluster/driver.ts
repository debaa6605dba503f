// The one interface every cluster provider implements (API.md section 7). Workflow steps call it;
// every method is idempotent, because a step may run again after a crash or a retry.
import { Type, type Static } from 'typebox';

export const CLUSTER_PROVIDERS = ['local', 'kubernetes'] as const;
export type ClusterProvider = (typeof CLUSTER_PROVIDERS)[number];

const str = (description: string) => Type.String({ maxLength: 1024, description });

export const StorageClass = Type.Object({
  name: str('StorageClass name'),
  provisioner: str('volume provisioner'),
  reclaim_policy: str('Delete or Retain'),
  volume_binding_mode: str('Immediate or WaitForFirstConsumer'),
  is_default: Type.Boolean({ description: 'annotated as the default storage class' }),
});

export const GatewayListener = Type.Object({
  name: str('listener name'),
  protocol: str('HTTP, HTTPS, TLS, TCP or UDP'),
  hostname: str('hostname the listener matches; empty when it matches any'),
  port: Type.Integer({ minimum: 0, maximum: 65535, description: 'port' }),
});

export const GatewayAddress = Type.Object({
  type: str('IPAddress or Hostname'),
  value: str('the address'),
});

export const Gateway = Type.Object({
  namespace: str('namespace of the Gateway'),
  name: str('Gateway name'),
  gateway_class_name: str('its GatewayClass'),
  status_message: str('message of its Programmed (else Accepted) condition'),
  listeners: Type.Array(GatewayListener),
  addresses: Type.Array(GatewayAddress),
});

export const ClusterNode = Type.Object({
  name: str('node name'),
  version: str('kubelet version'),
  cpu_capacity: str('CPU capacity as Kubernetes writes it, e.g. "4"'),
  memory_capacity: str('memory capacity as Kubernetes writes it, e.g. "16Gi"'),
  os_image: str('operating system image'),
  architecture: str('CPU architecture'),
  status_message: str('message of the Ready condition'),
  created_at: str('creation time, an ISO 8601 string (not Unix seconds like the other timestamps)'),
  roles: Type.Array(Type.String({ maxLength: 253 }), { description: 'from node-role.kubernetes.io/* labels' }),
  ready: Type.Boolean({ description: 'Ready condition is True' }),
});

/** Spec 2.9, every field. */
export const ClusterCapabilities = Type.Object({
  api_groups: Type.Array(Type.String({ maxLength: 253 }), { description: 'API group versions served, e.g. "apps/v1"; the core group is "v1"' }),
  storage_classes: Type.Array(StorageClass),
  gateway_classes: Type.Array(Type.String({ maxLength: 253 }), { description: 'GatewayClass names' }),
  gateways: Type.Array(Gateway),
  ingress_classes: Type.Array(Type.String({ maxLength: 253 }), { description: 'IngressClass names' }),
  nodes: Type.Array(ClusterNode),
});
export type ClusterCapabilitiesT = Static<typeof ClusterCapabilities>;

/** The local driver's fault injection, set at cluster creation (so retries and failures can be seen). */
export const LOCAL_FAULT_ACTIONS = ['provision', 'capabilities', 'destroy', 'deploy', 'health', 'undeploy'] as const;

export interface LocalFault {
  /** `health`: the first N readiness checks report the deployment not ready yet */
  action: (typeof LOCAL_FAULT_ACTIONS)[number];
  /** the first N attempts of the action fail */
  fail_times?: number;
  /** every call of the action first waits this long */
  latency_ms?: number;
}

/** The namespace an install's objects live in on its cluster. */
export function installNamespace(installId: string): string {
  return `svc-${installId.slice(installId.indexOf('_') + 1)}`;
}

/** What a driver needs to reach one cluster. */
export interface ClusterTarget {
  clusterId: string;
  provider: ClusterProvider;
  /** local provider: injected faults */
  faults: LocalFault[];
  /** kubernetes provider: the decrypted kubeconfig (never logged, never returned) */
  kubeconfig: string | null;
}

export interface DriverCallContext {
  /** 1 for the first attempt of the calling step, 2 for its first retry... */
  attempt: number;
  /** aborted when the step must stop (timeout, lost lease, shutdown) */
  signal: AbortSignal;
}

/** A driver failure. `retryable: false` fails the step at once (bad credentials, bad config). */
export class ClusterDriverError extends Error {
  constructor(message: string, readonly retryable = true) {
    super(message);
    this.name = 'ClusterDriverError';
  }
}

/** A route a package exposes (its manifest's `routes`), served at the install's URL for it. */
export interface RouteSpec {
  route_key: string;
  protocol: 'http' | 'websocket' | 'grpc';
  /** the Service (in the install's namespace) and port that serve the route on a real cluster */
  service?: { name: string; port: number };
}

/** A Kubernetes object of a rendered manifest (namespaced; the driver sets its namespace). */
export type KubernetesObject = { apiVersion: string; kind: string; metadata: { name: string; [key: string]: unknown }; [key: string]: unknown };

/** Where an install lives on its cluster. */
export interface DeploymentTarget {
  installId: string;
  /** the install's namespace, `svc-<install id body>` */
  namespace: string;
}

/**
 * The install's Kubernetes Secret: the values its secret references resolved to. Only `deploy`
 * receives it, in memory; a driver keeps no copy the service could leak (the local driver stores
 * an HMAC of it), and never puts a value in an error message.
 */
export interface DeploymentSecret {
  name: string;
  /** key -> value */
  data: Record<string, string>;
}

/** One render of an install, to apply. */
export interface DeploymentSpec extends DeploymentTarget {
  renderId: string;
  resources: KubernetesObject[];
  routes: RouteSpec[];
  /** present on deploy when the install's values reference secrets */
  secret?: DeploymentSecret;
}

export interface DeploymentStatus {
  /** every workload of the render is ready */
  ready: boolean;
  /** what is still missing when not ready, or a summary when ready */
  message: string;
}

/** One line of a container's log, with where it came from. */
export interface LogLine {
  /** Unix seconds (the timestamp's whole seconds) */
  time: number;
  /** RFC 3339 as the cluster wrote it (Kubernetes: up to nanoseconds) */
  timestamp: string;
  pod: string;
  container: string;
  /** the text without its newline; cut at LOG_LINE_MAX_BYTES with LOG_CUT_MARKER */
  line: string;
}

/** Lines longer than this many bytes are cut (a log line can be any length; a response cannot). */
export const LOG_LINE_MAX_BYTES = 16_384;
/** A response without follow holds at most this many lines, and this much line text (the newest kept). */
export const LOG_RESPONSE_MAX_LINES = 10_000;
export const LOG_RESPONSE_MAX_BYTES = 4 * 1024 * 1024;
/** At most this many pod containers are read or followed at once; the others are left out (and said so). */
export const LOG_MAX_CONTAINERS = 20;

export interface LogOptions {
  /** only this container (exact name) */
  container?: string;
  /** only lines at or after this Unix time (seconds) */
  since?: number;
  /** the last N lines of each pod container (as kubectl's --tail) */
  tail: number;
  /** keep reading as lines are written, until ctx.signal aborts */
  follow: boolean;
}

/** The logs of an install's pods: opened (every request answered), then read. */
export interface LogStream {
  /** the pod containers read */
  containers: number;
  /** pod containers left out over LOG_MAX_CONTAINERS */
  leftOut: number;
  /**
   * The lines. Without follow: every line read, ordered by time. With follow: each container's in
   * order, containers interleaved as lines arrive; ends when every container's log ended, or
   * quietly when ctx.signal aborts.
   */
  lines: AsyncIterable<LogLine>;
  /** without follow, once `lines` ended: true when a container's older lines were dropped to bound the read */
  truncated(): boolean;
}

/** A line cut at LOG_LINE_MAX_BYTES: its first bytes (whole characters) and the marker. */
export function cutLogLine(text: string): string {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= LOG_LINE_MAX_BYTES) return text;
  const buf = Buffer.from(text, 'utf8');
  let end = LOG_LINE_MAX_BYTES;
  // Back off to the start of a character (UTF-8 continuation bytes are 10xxxxxx).
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return `${buf.subarray(0, end).toString('utf8')} [... cut: ${bytes} bytes]`;
}

export interface ClusterDriver {
  readonly provider: ClusterProvider;
  /** Makes sure the cluster exists and answers; idempotent. */
  provision(target: ClusterTarget, ctx: DriverCallContext): Promise<void>;
  /** Reads the cluster's capabilities as they are now. */
  capabilities(target: ClusterTarget, ctx: DriverCallContext): Promise<ClusterCapabilitiesT>;
  /** Releases what the service holds on the cluster; idempotent (a missing cluster is success). */
  destroy(target: ClusterTarget, ctx: DriverCallContext): Promise<void>;
  /** Applies a render's objects to the install's namespace (created if missing); idempotent. */
  deploy(target: ClusterTarget, spec: DeploymentSpec, ctx: DriverCallContext): Promise<void>;
  /** Reads whether the render's workloads are ready. */
  deploymentStatus(target: ClusterTarget, spec: DeploymentSpec, ctx: DriverCallContext): Promise<DeploymentStatus>;
  /** Removes everything of the install from the cluster; idempotent (nothing there is success). */
  undeploy(target: ClusterTarget, deployment: DeploymentTarget, ctx: DriverCallContext): Promise<void>;
  /**
   * Opens the logs of the install's pods (every pod of its namespace, at most LOG_MAX_CONTAINERS
   * pod containers); resolves once each was answered, fails as the other calls do when the cluster
   * cannot be reached or refuses. ctx.signal aborts every request, and ends `lines`.
   */
  logs(target: ClusterTarget, deployment: DeploymentTarget, options: LogOptions, ctx: DriverCallContext): Promise<LogStream>;
}

/**
 * A driver loaded on first use. The kubernetes driver's client library adds ~70 MB to the
 * process when imported; a service that never registers a Kubernetes cluster should not pay it.
 */
export function lazyDriver(provider: ClusterProvider, load: () => Promise<ClusterDriver>): ClusterDriver {
  let loaded: Promise<ClusterDriver> | null = null;
  const driver = () => (loaded ??= load().catch((err) => {
    loaded = null; // let a later call try again
    throw err;
  }));
  return {
    provider,
    provision: async (target, ctx) => (await driver()).provision(target, ctx),
    capabilities: async (target, ctx) => (await driver()).capabilities(target, ctx),
    destroy: async (target, ctx) => (await driver()).destroy(target, ctx),
    deploy: async (target, spec, ctx) => (await driver()).deploy(target, spec, ctx),
    deploymentStatus: async (target, spec, ctx) => (await driver()).deploymentStatus(target, spec, ctx),
    undeploy: async (target, deployment, ctx) => (await driver()).undeploy(target, deployment, ctx),
    logs: async (target, deployment, options, ctx) => (await driver()).logs(target, deployment, options, ctx),
  };
}
