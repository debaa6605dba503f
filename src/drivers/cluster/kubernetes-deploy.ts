// Installs on a kubernetes cluster: each install owns one namespace (`svc-<install id body>`) that
// holds every object of its renders. Deploying server-side applies the render's objects into it;
// readiness is read from the workloads' status; undeploying deletes the namespace, and Kubernetes
// removes what it holds. Loaded only with the kubernetes driver (the client library is heavy).
import {
  ApiException,
  HttpMethod,
  KubernetesObjectApi,
  PatchStrategy,
  type ConfigurationOptions,
  type CoreV1Api,
  type KubernetesObject as ClientObject,
  type V1APIResource,
} from '@kubernetes/client-node';
import { ClusterDriverError, type DeploymentSpec, type DeploymentStatus, type KubernetesObject } from './driver.js';

/** The field manager of every apply: the fields the service sets are owned by `svc`. */
export const FIELD_MANAGER = 'svc';
export const LABEL_INSTALL = 'svc.dev/install-id';
export const LABEL_RENDER = 'svc.dev/render-id';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
/** objects read at once when checking readiness */
const READ_CONCURRENCY = 8;
/** not-ready objects named in a status message; the rest are counted */
const MESSAGE_ITEMS = 5;
/** metadata the API server owns: applying a stale copy of it fails or is refused */
const SERVER_METADATA = ['uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'managedFields', 'selfLink'];

type Obj = Record<string, unknown>;

/**
 * KubernetesObjectApi plus server-side apply of an object exactly as rendered. Its own patch()
 * first re-serializes the object through the client's typed models, which silently drops every
 * field those models do not know (a field newer than client 1.4, or a misspelt one the API server
 * should see and report), so apply() sends the JSON as it is (JSON is YAML, so the
 * application/apply-patch+yaml content type takes it), reusing the class's discovery (resource
 * path, namespaced or not; cached per instance) and its request pipeline (auth, middleware).
 */
export class ObjectClient extends KubernetesObjectApi {
  /** The discovery entry of a kind; undefined when the cluster does not serve it. */
  async resourceOf(apiVersion: string, kind: string): Promise<V1APIResource | undefined> {
    try {
      return await this.resource(apiVersion, kind);
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return undefined;
      throw err;
    }
  }

  async apply(object: KubernetesObject): Promise<ClientObject> {
    // specUriPath fills in defaults on the object it is given: hand it a copy.
    const path = await this.specUriPath(structuredClone(object), 'patch');
    const request = this.configuration.baseServer.makeRequestContext(path, HttpMethod.PATCH);
    request.setHeaderParam('Accept', 'application/json');
    request.setHeaderParam('Content-Type', PatchStrategy.ServerSideApply);
    request.setQueryParam('fieldManager', FIELD_MANAGER);
    // The service is the source of truth for what it applies: take over fields another manager
    // (a kubectl edit) changed, rather than failing the install with a conflict.
    request.setQueryParam('force', 'true');
    request.setBody(JSON.stringify(object));
    return this.requestPromise(request);
  }
}

/** What the deploy functions need of a driver call. */
export interface DeployCall {
  objects: ObjectClient;
  coreV1: CoreV1Api;
  options: ConfigurationOptions;
  signal: AbortSignal;
  /** maps a failed request to the driver's error (kubernetes.ts toDriverError) */
  fail(err: unknown, what: string): ClusterDriverError;
  /** removes every credential and hidden value from a text for an error message (and bounds its length) */
  redact(text: string): string;
  /** values redact() removes from now on (secret values read back from the cluster) */
  hide(values: string[]): void;
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
export const obj = (v: unknown): Obj => (isObj(v) ? v : {});
const num = (v: unknown, fallback = 0): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
/** `deployment/web`, as kubectl names objects. */
const describe = (o: KubernetesObject): string => `${o.kind.toLowerCase()}/${o.metadata.name}`;

/** Runs one request; its failure becomes a ClusterDriverError saying what was being done. */
export async function step<T>(c: DeployCall, what: string, run: () => Promise<T>): Promise<T> {
  if (c.signal.aborted) throw new ClusterDriverError(`${what}: aborted`, true);
  try {
    return await run();
  } catch (err) {
    throw c.fail(err, what);
  }
}

/** Checks the cluster serves every kind of the render and each is namespaced (fills the discovery cache). */
async function checkKinds(c: DeployCall, resources: KubernetesObject[], verb: 'applying' | 'reading'): Promise<void> {
  const seen = new Set<string>();
  for (const r of resources) {
    const key = `${r.apiVersion} ${r.kind}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const what = `${verb} ${describe(r)}`;
    const resource = await step(c, what, () => c.objects.resourceOf(r.apiVersion, r.kind));
    if (!resource) throw new ClusterDriverError(`${what}: the cluster does not serve ${r.kind} in ${r.apiVersion}`, false);
    // Packages refuse known cluster-scoped kinds; a custom one is only known from discovery. Its
    // objects would land outside the install's namespace and outlive the install.
    if (!resource.namespaced) throw new ClusterDriverError(`${what}: ${r.kind} is cluster-scoped; an install holds namespaced objects only`, false);
  }
}

function namespaceObject(spec: DeploymentSpec): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: spec.namespace, labels: { [LABEL_MANAGED_BY]: 'svc', [LABEL_INSTALL]: spec.installId } },
  };
}

/** The object as applied: in the install's namespace, labelled with the install and render. */
function objectToApply(resource: KubernetesObject, spec: DeploymentSpec): KubernetesObject {
  const out = structuredClone(resource);
  delete out.status;
  const metadata: Obj = { ...out.metadata };
  for (const field of SERVER_METADATA) delete metadata[field];
  // The render-id label is on the object only, never on a pod template: a new render whose spec
  // is unchanged must not restart pods.
  metadata.labels = { ...obj(metadata.labels), [LABEL_INSTALL]: spec.installId, [LABEL_RENDER]: spec.renderId };
  metadata.namespace = spec.namespace;
  out.metadata = { ...metadata, name: resource.metadata.name };
  return out;
}

/** The install's Secret of resolved secret references (base64 `data`, as the API server stores it). */
function secretObject(secret: NonNullable<DeploymentSpec['secret']>): KubernetesObject {
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret.data)) data[key] = Buffer.from(value, 'utf8').toString('base64');
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name: secret.name }, type: 'Opaque', data };
}

/**
 * Creates (or keeps) the install's namespace, applies the install's Secret when its values
 * reference secrets, then each object of the render, in manifest order (the Secret first, so a
 * workload that refers to it finds it).
 */
export async function applyRender(c: DeployCall, spec: DeploymentSpec): Promise<void> {
  await checkKinds(c, spec.resources, 'applying');
  const ns = await step(c, `creating namespace ${spec.namespace}`, () => c.objects.apply(namespaceObject(spec)));
  if (obj((ns as Obj).status).phase === 'Terminating') {
    // Left from an earlier deletion: applying into it is refused until it is gone; then apply creates it anew.
    throw new ClusterDriverError(`namespace ${spec.namespace} is still being deleted; waiting until it is gone`, true);
  }
  if (spec.secret) {
    const secret = secretObject(spec.secret);
    await step(c, `applying ${describe(secret)}`, () => c.objects.apply(objectToApply(secret, spec)));
  }
  for (const resource of spec.resources) {
    await step(c, `applying ${describe(resource)}`, () => c.objects.apply(objectToApply(resource, spec)));
  }
}

/** Why a Deployment is not ready yet, or null when it is (kubectl rollout status's rules). */
function deploymentNotReady(o: Obj, d: string): string | null {
  const spec = obj(o.spec);
  const status = obj(o.status);
  const want = num(spec.replicas, 1);
  if (num(status.observedGeneration, -1) < num(obj(o.metadata).generation)) return `${d}: waiting for the controller to observe the new spec`;
  const progressing = (Array.isArray(status.conditions) ? status.conditions : []).map(obj).find((cond) => cond.type === 'Progressing');
  const stalled = progressing?.reason === 'ProgressDeadlineExceeded' ? ` (progress deadline exceeded: ${String(progressing.message ?? '')})` : '';
  const updated = num(status.updatedReplicas);
  if (updated < want) return `${d}: ${updated} of ${want} updated${stalled}`;
  if (num(status.replicas) > updated) return `${d}: ${num(status.replicas) - updated} old replica(s) pending termination${stalled}`;
  const ready = Math.min(num(status.readyReplicas), num(status.availableReplicas));
  return ready < want ? `${d}: ${ready} of ${want} ready${stalled}` : null;
}

function statefulSetNotReady(o: Obj, d: string): string | null {
  const spec = obj(o.spec);
  const status = obj(o.status);
  const want = num(spec.replicas, 1);
  if (num(status.observedGeneration, -1) < num(obj(o.metadata).generation)) return `${d}: waiting for the controller to observe the new spec`;
  const strategy = obj(spec.updateStrategy);
  if (strategy.type !== 'OnDelete') {
    const toUpdate = want - num(obj(strategy.rollingUpdate).partition);
    if (num(status.updatedReplicas) < toUpdate) return `${d}: ${num(status.updatedReplicas)} of ${toUpdate} updated`;
  }
  const ready = num(status.readyReplicas);
  return ready < want ? `${d}: ${ready} of ${want} ready` : null;
}

function daemonSetNotReady(o: Obj, d: string): string | null {
  const status = obj(o.status);
  if (num(status.observedGeneration, -1) < num(obj(o.metadata).generation)) return `${d}: waiting for the controller to observe the new spec`;
  const desired = num(status.desiredNumberScheduled);
  if (obj(obj(o.spec).updateStrategy).type !== 'OnDelete' && num(status.updatedNumberScheduled) < desired) {
    return `${d}: ${num(status.updatedNumberScheduled)} of ${desired} updated`;
  }
  const ready = num(status.numberReady);
  return ready < desired ? `${d}: ${ready} of ${desired} ready` : null;
}

/** A Job is ready once complete; a failed Job is a failure no waiting fixes. */
function jobNotReady(o: Obj, d: string): string | null {
  const status = obj(o.status);
  const conditions = (Array.isArray(status.conditions) ? status.conditions : []).map(obj).filter((cond) => cond.status === 'True');
  const failed = conditions.find((cond) => cond.type === 'Failed');
  if (failed) {
    const why = [failed.reason, failed.message].filter((s) => typeof s === 'string' && s).join(': ');
    throw new ClusterDriverError(`${d} failed${why ? `: ${why}` : ''}`, false);
  }
  const want = num(obj(o.spec).completions, 1);
  if (conditions.some((cond) => cond.type === 'Complete') || num(status.succeeded) >= want) return null;
  return `${d}: ${num(status.succeeded)} of ${want} succeeded (${num(status.active)} running)`;
}

const CHECKS: Record<string, (o: Obj, d: string) => string | null> = {
  'apps/v1 Deployment': deploymentNotReady,
  'apps/v1 StatefulSet': statefulSetNotReady,
  'apps/v1 DaemonSet': daemonSetNotReady,
  'batch/v1 Job': jobNotReady,
};

/** Why one object of the render is not ready, or null when it is. */
async function objectNotReady(c: DeployCall, resource: KubernetesObject, spec: DeploymentSpec): Promise<string | null> {
  const d = describe(resource);
  const header = { apiVersion: resource.apiVersion, kind: resource.kind, metadata: { name: resource.metadata.name, namespace: spec.namespace } };
  const live = await step(c, `reading ${d}`, async () => {
    try {
      return obj(await c.objects.read(header));
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return null;
      throw err;
    }
  });
  if (!live) return `${d}: not found`;
  const applied = obj(obj(live.metadata).labels)[LABEL_RENDER];
  if (applied !== spec.renderId) return `${d}: render ${spec.renderId} is not applied (the cluster has ${typeof applied === 'string' ? applied : 'an object without it'})`;
  return CHECKS[`${resource.apiVersion} ${resource.kind}`]?.(live, d) ?? null;
}

/** Runs fn over items, at most `limit` at once; stops starting new ones after a failure. */
async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Reads every object of the render: workloads per their status, anything else ready once it exists. */
export async function readRenderStatus(c: DeployCall, spec: DeploymentSpec): Promise<DeploymentStatus> {
  // Discovery first, one request per group version, before reads in parallel would each ask.
  await checkKinds(c, spec.resources, 'reading');
  const reasons = (await mapLimit(spec.resources, READ_CONCURRENCY, (r) => objectNotReady(c, r, spec))).filter((r): r is string => r !== null);
  if (reasons.length === 0) return { ready: true, message: `${spec.resources.length} object(s) ready` };
  const more = reasons.length > MESSAGE_ITEMS ? `; and ${reasons.length - MESSAGE_ITEMS} more not ready` : '';
  return { ready: false, message: reasons.slice(0, MESSAGE_ITEMS).join('; ') + more };
}

/** Deletes the install's namespace; already gone, or already being deleted, is done. */
export async function deleteNamespace(c: DeployCall, namespace: string): Promise<void> {
  await step(c, `deleting namespace ${namespace}`, async () => {
    try {
      await c.coreV1.deleteNamespace({ name: namespace }, c.options);
    } catch (err) {
      // 409: the namespace is terminating already (Kubernetes finishes removing its content).
      if (err instanceof ApiException && (err.code === 404 || err.code === 409)) return;
      throw err;
    }
  });
}
