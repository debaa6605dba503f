// The stand-in Kubernetes API server's writable part: resource discovery (/api/v1, /apis/<group>/<version>),
// namespaces (create, get, delete with a Terminating phase), and server-side apply (PATCH with
// application/apply-patch+yaml) of namespaced objects of v1, apps/v1, batch/v1 and networking.k8s.io/v1,
// answering with Status bodies as a real API server does (404, 403, 409, 415, 422). One field manager
// is all the driver uses, so "apply" stores the applied object whole over the previous one (what
// server-side apply yields for a sole manager) and bumps metadata.generation when its spec changes.
// Lists (with labelSelector) and deletes of namespaced objects; what controllers add is in
// k8s-standin-controllers.ts: a Deployment's pods (kept here, listed by pods()), and the status of
// HTTPRoutes and Ingresses.
import yaml from 'js-yaml';
import { httpRouteStatus, ingressStatus, podOf, podTemplateHash, type RouteWorld } from './k8s-standin-controllers.js';

type Json = Record<string, unknown>;

export interface Answer {
  code: number;
  body: Json;
}

interface ResourceInfo {
  name: string;
  singularName: string;
  kind: string;
  namespaced: boolean;
}

const res = (name: string, kind: string, namespaced = true): ResourceInfo => ({ name, singularName: kind.toLowerCase(), kind, namespaced });
const CORE_V1 = [
  res('namespaces', 'Namespace', false), res('nodes', 'Node', false), res('services', 'Service'), res('configmaps', 'ConfigMap'),
  res('secrets', 'Secret'), res('serviceaccounts', 'ServiceAccount'), res('persistentvolumeclaims', 'PersistentVolumeClaim'), res('pods', 'Pod'),
];
const GROUP_RESOURCES: Record<string, ResourceInfo[]> = {
  v1: CORE_V1,
  'apps/v1': [res('deployments', 'Deployment'), res('statefulsets', 'StatefulSet'), res('daemonsets', 'DaemonSet'), res('replicasets', 'ReplicaSet')],
  'batch/v1': [res('jobs', 'Job'), res('cronjobs', 'CronJob')],
  'networking.k8s.io/v1': [res('ingresses', 'Ingress'), res('networkpolicies', 'NetworkPolicy'), res('ingressclasses', 'IngressClass', false)],
  'storage.k8s.io/v1': [res('storageclasses', 'StorageClass', false)],
  // A cluster-scoped kind of a group most clusters serve: the driver must refuse to apply it.
  'rbac.authorization.k8s.io/v1': [res('roles', 'Role'), res('rolebindings', 'RoleBinding'), res('clusterroles', 'ClusterRole', false)],
};
const GATEWAY_RESOURCES = [res('gateways', 'Gateway'), res('httproutes', 'HTTPRoute'), res('gatewayclasses', 'GatewayClass', false)];

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
const APPLY = 'application/apply-patch+yaml';
const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet']);

const status = (code: number, reason: string, message: string, details: Json = {}): Answer => ({
  code,
  body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, details, code },
});
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const obj = (v: unknown): Json => (isObj(v) ? v : {});
const clone = <T>(v: T): T => structuredClone(v);
/** What apply compares to decide whether the generation moves: everything but metadata and status. */
const specOf = (o: Json): string => JSON.stringify({ ...o, metadata: undefined, status: undefined });
/** The metadata the client wrote, without what the server sets. */
const userMeta = (m: Json): string => JSON.stringify({
  ...m, namespace: undefined, uid: undefined, resourceVersion: undefined, generation: undefined, creationTimestamp: undefined, managedFields: undefined, deletionTimestamp: undefined,
});
const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? apiVersion.split('/')[0]! : '');

/** A status that shows the object fully ready, as its controller would write it (undefined: not a workload). */
export function readyStatus(o: Json): Json | undefined {
  const spec = obj(o.spec);
  const generation = obj(o.metadata).generation;
  const replicas = typeof spec.replicas === 'number' ? spec.replicas : 1;
  switch (o.kind) {
    case 'Deployment':
      return {
        observedGeneration: generation, replicas, updatedReplicas: replicas, readyReplicas: replicas, availableReplicas: replicas,
        conditions: [
          { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' },
          { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', message: 'ReplicaSet has successfully progressed.' },
        ],
      };
    case 'StatefulSet':
      return { observedGeneration: generation, replicas, readyReplicas: replicas, currentReplicas: replicas, updatedReplicas: replicas, availableReplicas: replicas };
    case 'DaemonSet':
      return { observedGeneration: generation, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 3, numberReady: 3, numberAvailable: 3, numberMisscheduled: 0 };
    case 'Job':
      return { succeeded: 1, active: 0, conditions: [{ type: 'Complete', status: 'True', reason: 'CompletionsReached', message: 'Reached expected number of succeeded pods' }] };
    default:
      return undefined;
  }
}

/** A parsed object path: /api/v1[/namespaces/<ns>]/<plural>[/<name>] or /apis/<group>/<version>/... */
interface Target {
  apiVersion: string;
  resource: ResourceInfo;
  namespace: string | undefined;
  name: string | undefined;
}

export class ObjectStore {
  /** key: `<apiVersion>|<kind>|<namespace>|<name>` */
  readonly objects = new Map<string, Json>();
  /** resource plurals whose every request is denied, as RBAC does to a service account without a rule for them */
  readonly forbidden = new Set<string>();
  /** computes the status a GET shows (overrides the stored one when it returns an object), e.g. readyStatus */
  statusFor: ((o: Json) => Json | undefined) | undefined;
  /** how long a deleted namespace stays Terminating before it and its objects are gone (0: at once) */
  namespaceTerminationMs = 0;
  /**
   * Whether a Gateway API implementation and an ingress controller run: a GET of an HTTPRoute or
   * Ingress without a stored status shows the status they would write (false: none, until setStatus).
   */
  routeControllers = true;
  private resourceVersion = 5000;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly world: RouteWorld;

  constructor(private readonly gatewayApi: boolean, fixtures: { gateways: Json[]; ingressClasses: string[] } = { gateways: [], ingressClasses: [] }) {
    this.world = {
      gateways: gatewayApi ? fixtures.gateways : [],
      ingressClasses: fixtures.ingressClasses,
      service: (namespace, name) => this.objects.get(ObjectStore.key('v1', 'Service', namespace, name)),
      namespaceLabels: (name) => obj(obj(this.namespaceOf(name)?.metadata).labels),
    };
  }

  /** Removes the pods of a namespace (a test then adds its own, with names and containers it knows). */
  deletePods(namespace: string): void {
    for (const key of [...this.objects.keys()]) if (key.startsWith(`v1|Pod|${namespace}|`)) this.objects.delete(key);
  }

  /** The pods in a namespace (an install's: its namespace holds only its own), as a GET shows them. */
  pods(namespace: string): Json[] {
    return [...this.objects.entries()].filter(([key]) => key.startsWith(`v1|Pod|${namespace}|`)).map(([, o]) => this.view(o));
  }

  /**
   * Puts a container of a pod into a waiting state (CrashLoopBackOff, ImagePullBackOff...), as the
   * kubelet reports it, with the last run's termination when given; throws when there is no such container.
   */
  setContainerWaiting(namespace: string, pod: string, container: string, reason: string, message: string, lastTerminated?: { exitCode: number; reason: string; message?: string }): void {
    const o = this.objects.get(ObjectStore.key('v1', 'Pod', namespace, pod));
    const status = obj(o?.status);
    const cs = [...(Array.isArray(status.initContainerStatuses) ? status.initContainerStatuses : []), ...(Array.isArray(status.containerStatuses) ? status.containerStatuses : [])]
      .map(obj).find((c) => c.name === container);
    if (!cs) throw new Error(`no container ${container} in pod ${namespace}/${pod} of the stand-in`);
    Object.assign(cs, { ready: false, started: false, state: { waiting: { reason, message } }, lastState: lastTerminated ? { terminated: lastTerminated } : {} });
    status.phase = 'Running';
  }

  /**
   * The Deployment controller's part: each template gets a ReplicaSet `<deployment>-<pod-template-hash>`
   * with the next revision (`deployment.kubernetes.io/revision`, on the Deployment too), and pods.
   * The pods of earlier templates go at once, unless keepOldPods (a rollout that has not finished:
   * the old ReplicaSet's pods are still there, as they are until the new ones are available).
   */
  keepOldPods = false;
  private readonly revisions = new Map<string, { hash: string; revision: number }>();

  private syncPods(deployment: Json): void {
    const meta = obj(deployment.metadata);
    const namespace = String(meta.namespace);
    const name = String(meta.name);
    const hash = podTemplateHash(deployment);
    const replicas = typeof obj(deployment.spec).replicas === 'number' ? (obj(deployment.spec).replicas as number) : 1;
    const deploymentKey = ObjectStore.key('apps/v1', 'Deployment', namespace, name);
    const known = this.revisions.get(deploymentKey);
    const revision = known?.hash === hash ? known.revision : (known?.revision ?? 0) + 1;
    this.revisions.set(deploymentKey, { hash, revision });
    const annotation = { 'deployment.kubernetes.io/revision': String(revision) };
    meta.annotations = { ...obj(meta.annotations), ...annotation };
    this.objects.set(ObjectStore.key('apps/v1', 'ReplicaSet', namespace, `${name}-${hash}`), {
      apiVersion: 'apps/v1', kind: 'ReplicaSet',
      metadata: {
        name: `${name}-${hash}`, namespace, annotations: annotation, labels: { ...obj(obj(obj(deployment.spec).template).metadata).labels as Json, 'pod-template-hash': hash },
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name, uid: meta.uid, controller: true, blockOwnerDeletion: true }],
        uid: `5e${hash}-0000-4000-8000-000000000000`, resourceVersion: String(++this.resourceVersion), creationTimestamp: meta.creationTimestamp,
      },
      spec: { replicas, selector: obj(deployment.spec).selector, template: obj(deployment.spec).template },
      status: { replicas, readyReplicas: replicas, availableReplicas: replicas, observedGeneration: 1 },
    });
    const owned = [...this.objects.entries()].filter(([key, o]) => key.startsWith(`v1|Pod|${namespace}|${name}-`)
      && (obj(o.metadata).ownerReferences as Json[] | undefined)?.some((r) => typeof r.name === 'string' && r.name.startsWith(`${name}-`) && r.name.length === name.length + 11));
    let current = 0;
    for (const [key, o] of owned) {
      const podHash = obj(obj(o.metadata).labels)['pod-template-hash'];
      if (podHash === hash && current < replicas) current++;
      else if (podHash === hash || !this.keepOldPods) this.objects.delete(key);
    }
    const secret = (ns: string, secretName: string, key: string): string | undefined => {
      const s = this.objects.get(ObjectStore.key('v1', 'Secret', ns, secretName));
      const data = obj(s?.data)[key];
      if (typeof data === 'string') return Buffer.from(data, 'base64').toString('utf8');
      const plain = obj(s?.stringData)[key];
      return typeof plain === 'string' ? plain : undefined;
    };
    for (; current < replicas; current++) {
      const pod = podOf(deployment, namespace, hash, secret);
      const podMeta = obj(pod.metadata);
      podMeta.uid = `9a${++this.resourceVersion}-2b3c-4d5e-8f6a-7b8c9d0e1f2a`;
      podMeta.resourceVersion = String(this.resourceVersion);
      this.objects.set(ObjectStore.key('v1', 'Pod', namespace, String(podMeta.name)), pod);
    }
  }

  private groups(): Record<string, ResourceInfo[]> {
    return this.gatewayApi ? { ...GROUP_RESOURCES, 'gateway.networking.k8s.io/v1': GATEWAY_RESOURCES } : GROUP_RESOURCES;
  }

  static key(apiVersion: string, kind: string, namespace: string | undefined, name: string): string {
    return `${apiVersion}|${kind}|${namespace ?? ''}|${name}`;
  }

  /** The stored object (with the status a GET would show), or undefined. */
  get(apiVersion: string, kind: string, namespace: string | undefined, name: string): Json | undefined {
    const o = this.objects.get(ObjectStore.key(apiVersion, kind, namespace, name));
    return o ? this.view(o) : undefined;
  }

  /** Sets the status of a stored object, as its controller would; throws when there is no such object. */
  setStatus(apiVersion: string, kind: string, namespace: string | undefined, name: string, s: Json): void {
    const o = this.objects.get(ObjectStore.key(apiVersion, kind, namespace, name));
    if (!o) throw new Error(`no ${kind} ${namespace}/${name} in the stand-in`);
    o.status = clone(s);
  }

  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  /** Answers an object or discovery request; undefined when the path is not one of those. */
  handle(method: string, path: string, query: URLSearchParams, contentType: string, body: string): Answer | undefined {
    const groups = this.groups();
    const discovery = path.match(/^\/api\/(v1)$/) ?? path.match(/^\/apis\/([^/]+\/[^/]+)$/);
    if (discovery && method === 'GET') {
      const resources = groups[discovery[1]!];
      if (!resources) return undefined;
      return {
        code: 200,
        body: { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: discovery[1], resources: resources.map((r) => ({ ...r, verbs: VERBS })) },
      };
    }
    const target = this.parse(path, groups);
    if (!target) return undefined;
    const group = groupOf(target.apiVersion);
    const what = `${target.resource.name}${group ? `.${group}` : ''}`;
    if (this.forbidden.has(target.resource.name)) {
      const verb = method === 'PATCH' ? 'patch' : method === 'DELETE' ? 'delete' : method === 'POST' ? 'create' : 'get';
      const where = target.namespace ? ` in the namespace "${target.namespace}"` : ' at the cluster scope';
      return status(403, 'Forbidden', `${what} "${target.name ?? ''}" is forbidden: User "system:serviceaccount:svc:deployer" cannot ${verb} resource "${target.resource.name}" in API group "${group}"${where}`);
    }
    if (method === 'GET' && target.name) return this.read(target, what);
    if (method === 'GET' && !target.name && target.namespace !== undefined) return this.list(target, query);
    if (method === 'DELETE' && target.name && target.namespace !== undefined) return this.delete(target, what);
    if (method === 'PATCH' && target.name) return this.apply(target, what, query, contentType, body);
    if (method === 'DELETE' && target.name && target.resource.kind === 'Namespace') return this.deleteNamespace(target.name);
    if (method === 'POST' && !target.name && target.resource.kind === 'Namespace') return this.createNamespace(body);
    return status(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
  }

  private parse(path: string, groups: Record<string, ResourceInfo[]>): Target | undefined {
    const m = path.match(/^\/api\/v1\/(.+)$/) ?? path.match(/^\/apis\/([^/]+)\/([^/]+)\/(.+)$/);
    if (!m) return undefined;
    const apiVersion = m.length === 2 ? 'v1' : `${m[1]}/${m[2]}`;
    const rest = (m.length === 2 ? m[1]! : m[3]!).split('/').map(decodeURIComponent);
    const resources = groups[apiVersion];
    if (!resources) return undefined;
    let namespace: string | undefined;
    // /namespaces/<ns>/<plural>[/<name>] is inside a namespace; /namespaces[/<name>] is the Namespace itself.
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest.splice(0, 2);
    }
    if (rest.length > 2) return undefined;
    const resource = resources.find((r) => r.name === rest[0]);
    if (!resource || resource.namespaced !== (namespace !== undefined)) return undefined;
    return { apiVersion, resource, namespace, name: rest[1] };
  }

  private view(o: Json): Json {
    const out = clone(o);
    const computed = this.statusFor?.(out);
    if (computed) out.status = clone(computed);
    if (this.routeControllers && !out.status) {
      const routeStatus = o.kind === 'HTTPRoute' ? httpRouteStatus(out, this.world) : o.kind === 'Ingress' ? ingressStatus(out, this.world) : undefined;
      if (routeStatus) out.status = routeStatus;
    }
    return out;
  }

  /** A list of one kind in a namespace (empty when the namespace does not exist, as the API server answers), by labelSelector. */
  private list(t: Target, query: URLSearchParams): Answer {
    const selector = (query.get('labelSelector') ?? '').split(',').filter(Boolean).map((term) => {
      const [k, v] = term.split('=') as [string, string | undefined];
      return (labels: Json) => (v === undefined ? k in labels : labels[k] === v);
    });
    const items = [...this.objects.entries()]
      .filter(([key]) => key.startsWith(`${t.apiVersion}|${t.resource.kind}|${t.namespace}|`))
      .map(([, o]) => this.view(o))
      .filter((o) => selector.every((matches) => matches(obj(obj(o.metadata).labels))));
    return { code: 200, body: { kind: `${t.resource.kind}List`, apiVersion: t.apiVersion, metadata: { resourceVersion: String(this.resourceVersion) }, items } };
  }

  private delete(t: Target, what: string): Answer {
    const key = ObjectStore.key(t.apiVersion, t.resource.kind, t.namespace, t.name!);
    const o = this.objects.get(key);
    if (!o) return status(404, 'NotFound', `${what} "${t.name}" not found`, { name: t.name, group: groupOf(t.apiVersion), kind: t.resource.name });
    this.objects.delete(key);
    return { code: 200, body: this.view(o) };
  }

  private namespaceOf(name: string): Json | undefined {
    return this.objects.get(ObjectStore.key('v1', 'Namespace', undefined, name));
  }

  private read(t: Target, what: string): Answer {
    const o = this.objects.get(ObjectStore.key(t.apiVersion, t.resource.kind, t.namespace, t.name!));
    if (!o) return status(404, 'NotFound', `${what} "${t.name}" not found`, { name: t.name, group: groupOf(t.apiVersion), kind: t.resource.name });
    return { code: 200, body: this.view(o) };
  }

  private apply(t: Target, what: string, query: URLSearchParams, contentType: string, body: string): Answer {
    if (contentType.split(';')[0]!.trim() !== APPLY) {
      return status(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${APPLY}`);
    }
    if (!query.get('fieldManager')) return status(400, 'BadRequest', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch');
    let applied: unknown;
    try {
      applied = yaml.load(body);
    } catch {
      return status(400, 'BadRequest', 'error decoding YAML: the body is not valid YAML');
    }
    if (!isObj(applied)) return status(400, 'BadRequest', 'the body of an apply patch must be an object');
    const meta = obj(applied.metadata);
    if (applied.apiVersion !== t.apiVersion || applied.kind !== t.resource.kind) {
      return status(400, 'BadRequest', `the API version in the data (${String(applied.apiVersion)}) or kind (${String(applied.kind)}) does not match the expected ${t.apiVersion} ${t.resource.kind}`);
    }
    if (meta.name !== t.name) return status(400, 'BadRequest', `the name of the object (${String(meta.name)}) does not match the name on the URL (${t.name})`);
    if (t.namespace !== undefined && meta.namespace !== undefined && meta.namespace !== t.namespace) {
      return status(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    }
    const key = ObjectStore.key(t.apiVersion, t.resource.kind, t.namespace, t.name!);
    const old = this.objects.get(key);
    if (t.namespace !== undefined) {
      const ns = this.namespaceOf(t.namespace);
      if (!ns) return status(404, 'NotFound', `namespaces "${t.namespace}" not found`, { name: t.namespace, kind: 'namespaces' });
      if (!old && obj(ns.status).phase === 'Terminating') {
        return status(403, 'Forbidden', `${what} "${t.name}" is forbidden: unable to create new content in namespace ${t.namespace} because it is being terminated`);
      }
    }
    const invalid = validate(applied, t.resource.kind);
    if (invalid) {
      const group = groupOf(t.apiVersion);
      return status(422, 'Invalid', `${t.resource.kind}${group ? `.${group}` : ''} "${t.name}" is invalid: ${invalid.field}: ${invalid.message}`, {
        name: t.name, kind: t.resource.kind, causes: [{ reason: 'FieldValueRequired', message: invalid.message, field: invalid.field }],
      });
    }
    const stored: Json = clone(applied);
    delete stored.status;
    const oldMeta = obj(old?.metadata);
    const generation = old ? Number(oldMeta.generation) + (specOf(old) === specOf(stored) ? 0 : 1) : 1;
    const changed = !old || specOf(old) !== specOf(stored) || userMeta(oldMeta) !== userMeta(meta);
    stored.metadata = {
      ...meta,
      ...(t.namespace !== undefined ? { namespace: t.namespace } : {}),
      uid: oldMeta.uid ?? `7c9e${this.resourceVersion}-1f2a-4b3c-8d4e-5f6a7b8c9d0e`,
      resourceVersion: changed ? String(++this.resourceVersion) : oldMeta.resourceVersion,
      generation,
      creationTimestamp: oldMeta.creationTimestamp ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      managedFields: [{ manager: query.get('fieldManager'), operation: 'Apply', apiVersion: t.apiVersion, fieldsType: 'FieldsV1' }],
      ...(oldMeta.deletionTimestamp ? { deletionTimestamp: oldMeta.deletionTimestamp } : {}),
    };
    if (old?.status) stored.status = old.status;
    else if (t.resource.kind === 'Namespace') stored.status = { phase: 'Active' };
    if (t.resource.kind === 'Namespace' && !isObj(stored.spec)) stored.spec = { finalizers: ['kubernetes'] };
    this.objects.set(key, stored);
    if (t.apiVersion === 'apps/v1' && t.resource.kind === 'Deployment') this.syncPods(stored);
    return { code: old ? 200 : 201, body: this.view(stored) };
  }

  private createNamespace(body: string): Answer {
    let o: Json;
    try {
      o = obj(JSON.parse(body));
    } catch {
      return status(400, 'BadRequest', 'the body is not JSON');
    }
    const name = obj(o.metadata).name;
    if (typeof name !== 'string' || !name) return status(422, 'Invalid', 'Namespace "" is invalid: metadata.name: Required value: name or generateName is required');
    if (this.namespaceOf(name)) return status(409, 'AlreadyExists', `namespaces "${name}" already exists`, { name, kind: 'namespaces' });
    return this.apply({ apiVersion: 'v1', resource: CORE_V1[0]!, namespace: undefined, name }, 'namespaces', new URLSearchParams({ fieldManager: 'create' }), APPLY, JSON.stringify(o));
  }

  private deleteNamespace(name: string): Answer {
    const ns = this.namespaceOf(name);
    if (!ns) return status(404, 'NotFound', `namespaces "${name}" not found`, { name, kind: 'namespaces' });
    if (obj(ns.status).phase === 'Terminating') {
      return status(409, 'Conflict', `Operation cannot be fulfilled on namespaces "${name}": The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.`, { name, kind: 'namespaces' });
    }
    ns.status = { phase: 'Terminating' };
    ns.metadata = { ...obj(ns.metadata), deletionTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), resourceVersion: String(++this.resourceVersion) };
    const answer: Answer = { code: 200, body: clone(ns) };
    const purge = () => {
      for (const key of [...this.objects.keys()]) {
        if (key.split('|')[2] === name || key === ObjectStore.key('v1', 'Namespace', undefined, name)) this.objects.delete(key);
      }
    };
    if (this.namespaceTerminationMs <= 0) purge();
    else {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        purge();
      }, this.namespaceTerminationMs);
      this.timers.add(timer);
    }
    return answer;
  }
}

/** The few checks of the real API server's validation the tests rely on: a 422 names the field. */
function validate(o: Json, kind: string): { field: string; message: string } | undefined {
  const spec = obj(o.spec);
  const meta = obj(o.metadata);
  if (typeof meta.name === 'string' && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(meta.name)) {
    return { field: 'metadata.name', message: `Invalid value: "${meta.name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'` };
  }
  if (WORKLOADS.has(kind) || kind === 'Job') {
    if (WORKLOADS.has(kind) && !isObj(spec.selector)) return { field: 'spec.selector', message: 'Required value' };
    const containers = obj(obj(spec.template).spec).containers;
    if (!Array.isArray(containers) || containers.length === 0) return { field: 'spec.template.spec.containers', message: 'Required value' };
  }
  if (kind === 'Service' && spec.clusterIP !== 'None' && (!Array.isArray(spec.ports) || spec.ports.length === 0)) {
    return { field: 'spec.ports', message: 'Required value' };
  }
  return undefined;
}
