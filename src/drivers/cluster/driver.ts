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
  created_at: str('creation time, an ISO 8601 string (not an integer timestamp, as spec 2.9 says)'),
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
export interface LocalFault {
  action: 'provision' | 'capabilities' | 'destroy';
  /** the first N attempts of the action fail */
  fail_times?: number;
  /** every call of the action first waits this long */
  latency_ms?: number;
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

export interface ClusterDriver {
  readonly provider: ClusterProvider;
  /** Makes sure the cluster exists and answers; idempotent. */
  provision(target: ClusterTarget, ctx: DriverCallContext): Promise<void>;
  /** Reads the cluster's capabilities as they are now. */
  capabilities(target: ClusterTarget, ctx: DriverCallContext): Promise<ClusterCapabilitiesT>;
  /** Releases what the service holds on the cluster; idempotent (a missing cluster is success). */
  destroy(target: ClusterTarget, ctx: DriverCallContext): Promise<void>;
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
  };
}
