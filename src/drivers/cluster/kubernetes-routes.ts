// The objects that route traffic to an install on a kubernetes cluster, and what a rollout reads
// besides the workloads' status. Each route of the render with a `service` and at least one
// hostname gets one object in the install's namespace, named `svc-route-<route_key>`:
//   - a Gateway API HTTPRoute (gateway.networking.k8s.io/v1) attached to the cluster's Gateway when
//     the cluster serves the Gateway API and has a Gateway with an HTTP or HTTPS listener. Of those
//     (ordered by namespace, then name), the first with a listener whose hostname is empty or
//     matches every hostname of the install; else the first;
//   - else an Ingress (networking.k8s.io/v1) of the IngressClass annotated as the default, else of
//     the first IngressClass by name;
//   - else the deploy fails (not retried): the cluster has neither.
// An HTTPRoute holds at most 16 hostnames (the Gateway API's limit): a route with more gets more
// objects, `svc-route-<route_key>-2`... (Ingresses are cut the same way). Route objects of routes
// the render no longer has are deleted when it is deployed; deleting the install deletes its
// namespace and them with it.
// A rollout is ready once every route object is accepted: an HTTPRoute's status names our Gateway
// with Accepted and ResolvedRefs True; an Ingress has a load balancer address. A pod of the install
// whose container (or init container) waits in CrashLoopBackOff, ImagePullBackOff or ErrImagePull
// fails the rollout at once with the reason and the container's last message (pods of a
// ReplicaSet their Deployment has replaced excepted: an update may be what fixes them).
import { ApiException } from '@kubernetes/client-node';
import { ClusterDriverError, type KubernetesObject, type RouteSpec, type RoutingSpec } from './driver.js';
import { LABEL_INSTALL, LABEL_MANAGED_BY, LABEL_RENDER, obj, step, type DeployCall } from './kubernetes-deploy.js';

export const LABEL_ROUTE = 'svc.dev/route-key';
const GATEWAY_API = 'gateway.networking.k8s.io/v1';
const INGRESS_API = 'networking.k8s.io/v1';
const DEFAULT_INGRESS_CLASS = 'ingressclass.kubernetes.io/is-default-class';
/** The Gateway API's bound on an HTTPRoute's hostnames. */
export const HOSTNAMES_PER_OBJECT = 16;
/** Container waiting reasons no waiting fixes: the rollout fails with them. */
export const FAILING_REASONS = new Set(['CrashLoopBackOff', 'ImagePullBackOff', 'ErrImagePull']);
const PAGE_SIZE = 500;
const MAX_PAGES = 20;
/** pods whose failure is described in the error; the rest are counted */
const FAILURES_NAMED = 3;

type Obj = Record<string, unknown>;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Where the install's route objects attach. */
export type Routing =
  | { kind: 'HTTPRoute'; gateway: { namespace: string; name: string } }
  | { kind: 'Ingress'; ingressClassName: string };

/** One route object to apply: its name, the route it serves and the hostnames it holds. */
interface WantedObject {
  name: string;
  route: RouteSpec & { service: { name: string; port: number } };
  hostnames: string[];
}

/** Every item of a list, page by page (at most MAX_PAGES pages). */
async function listAll(c: DeployCall, what: string, apiVersion: string, kind: string, namespace?: string, labelSelector?: string): Promise<Obj[]> {
  const out: Obj[] = [];
  let cont: string | undefined;
  for (let i = 0; i < MAX_PAGES; i++) {
    const page = obj(await step(c, what, () => c.objects.list(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, labelSelector, PAGE_SIZE, cont)));
    out.push(...arr(page.items).map(obj));
    const meta = obj(page.metadata);
    cont = str(meta._continue) || str(meta.continue) || undefined;
    if (!cont) break;
  }
  return out;
}

/** Whether the cluster serves a kind (discovery, cached by the client). */
async function serves(c: DeployCall, apiVersion: string, kind: string): Promise<boolean> {
  return (await step(c, `reading the cluster's ${kind} resource`, () => c.objects.resourceOf(apiVersion, kind))) !== undefined;
}

/** The route objects the spec asks for: routes with a service and hostnames, cut into objects of at most 16 hostnames. */
export function wantedObjects(spec: RoutingSpec): WantedObject[] {
  const out: WantedObject[] = [];
  for (const route of spec.routes) {
    if (!route.service) continue;
    const hostnames = [...new Set(spec.hostnames.find((h) => h.route_key === route.route_key)?.hostnames ?? [])];
    for (let i = 0; i * HOSTNAMES_PER_OBJECT < hostnames.length; i++) {
      out.push({
        name: `svc-route-${route.route_key}${i === 0 ? '' : `-${i + 1}`}`,
        route: route as WantedObject['route'],
        hostnames: hostnames.slice(i * HOSTNAMES_PER_OBJECT, (i + 1) * HOSTNAMES_PER_OBJECT),
      });
    }
  }
  return out;
}

/** A listener hostname (`*.example.com` matches one or more labels in front) against a hostname. */
export function listenerMatches(listenerHostname: string, hostname: string): boolean {
  const l = listenerHostname.toLowerCase();
  const h = hostname.toLowerCase();
  if (!l) return true;
  if (l.startsWith('*.')) return h.endsWith(l.slice(1)) && h.length > l.length - 1;
  return l === h;
}

const HTTP_PROTOCOLS = new Set(['HTTP', 'HTTPS']);

/** The Gateway the install's HTTPRoutes attach to (the rule at the top of this file), or undefined. */
export function chooseGateway(gateways: Obj[], hostnames: string[]): { namespace: string; name: string } | undefined {
  const candidates = gateways
    .map((g) => ({ namespace: str(obj(g.metadata).namespace), name: str(obj(g.metadata).name), listeners: arr(obj(g.spec).listeners).map(obj) }))
    .map((g) => ({ ...g, listeners: g.listeners.filter((l) => HTTP_PROTOCOLS.has(str(l.protocol))) }))
    .filter((g) => g.name && g.listeners.length > 0)
    .sort((a, b) => (a.namespace === b.namespace ? (a.name < b.name ? -1 : 1) : a.namespace < b.namespace ? -1 : 1));
  const fits = candidates.find((g) => g.listeners.some((l) => hostnames.every((h) => listenerMatches(str(l.hostname), h))));
  const chosen = fits ?? candidates[0];
  return chosen ? { namespace: chosen.namespace, name: chosen.name } : undefined;
}

/** The IngressClass of the install's Ingresses: the default one, else the first by name. */
export function chooseIngressClass(classes: Obj[]): string | undefined {
  const named = classes.map((ic) => obj(ic.metadata)).filter((m) => str(m.name)).sort((a, b) => (str(a.name) < str(b.name) ? -1 : 1));
  const chosen = named.find((m) => obj(m.annotations)[DEFAULT_INGRESS_CLASS] === 'true') ?? named[0];
  return chosen ? str(chosen.name) : undefined;
}

/** Gateway or Ingress, as the cluster offers (read anew on each call: a cluster can gain a Gateway). */
export async function chooseRouting(c: DeployCall, spec: RoutingSpec, hostnames: string[]): Promise<Routing> {
  const gatewayApi = await serves(c, GATEWAY_API, 'HTTPRoute');
  if (gatewayApi) {
    const gateways = await listAll(c, 'listing the cluster\'s Gateways', GATEWAY_API, 'Gateway');
    const gateway = chooseGateway(gateways, hostnames);
    if (gateway) return { kind: 'HTTPRoute', gateway };
  }
  const classes = (await serves(c, INGRESS_API, 'IngressClass')) ? await listAll(c, 'listing the cluster\'s IngressClasses', INGRESS_API, 'IngressClass') : [];
  const ingressClassName = chooseIngressClass(classes);
  if (ingressClassName) return { kind: 'Ingress', ingressClassName };
  const gatewayPart = gatewayApi ? 'no Gateway with an HTTP or HTTPS listener' : 'no Gateway API (gateway.networking.k8s.io/v1 is not served)';
  throw new ClusterDriverError(
    `routing traffic to install ${spec.installId}: the cluster has ${gatewayPart} and no IngressClass; install a Gateway API implementation ` +
      'and create a Gateway, or install an ingress controller, then retry the install',
    false,
  );
}

function metadataOf(spec: RoutingSpec, w: WantedObject): KubernetesObject['metadata'] {
  return {
    name: w.name,
    namespace: spec.namespace,
    labels: { [LABEL_MANAGED_BY]: 'svc', [LABEL_INSTALL]: spec.installId, [LABEL_RENDER]: spec.renderId, [LABEL_ROUTE]: w.route.route_key },
  };
}

/** The object routing a route's hostnames to its Service. */
export function routeObject(spec: RoutingSpec, routing: Routing, w: WantedObject): KubernetesObject {
  const { name, port } = w.route.service;
  if (routing.kind === 'HTTPRoute') {
    return {
      apiVersion: GATEWAY_API,
      kind: 'HTTPRoute',
      metadata: metadataOf(spec, w),
      spec: {
        parentRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: routing.gateway.namespace, name: routing.gateway.name }],
        hostnames: w.hostnames,
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [{ group: '', kind: 'Service', name, port }] }],
      },
    };
  }
  return {
    apiVersion: INGRESS_API,
    kind: 'Ingress',
    metadata: metadataOf(spec, w),
    spec: {
      ingressClassName: routing.ingressClassName,
      rules: w.hostnames.map((host) => ({
        host,
        http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name, port: { number: port } } } }] },
      })),
    },
  };
}

const describe = (kind: string, name: string): string => `${kind.toLowerCase()}/${name}`;

/**
 * Applies the route objects of the spec, then deletes the install's route objects it no longer
 * wants: every other one when `pruneAll` (a deploy: the render is the whole truth), else only
 * those of the spec's route keys (a hostname change must not remove a route a deploy in flight
 * just added).
 */
export async function applyRouteObjects(c: DeployCall, spec: RoutingSpec, pruneAll: boolean): Promise<void> {
  const wanted = wantedObjects(spec);
  let routing: Routing | undefined;
  if (wanted.length > 0) {
    routing = await chooseRouting(c, spec, wanted.flatMap((w) => w.hostnames));
    for (const w of wanted) {
      const o = routeObject(spec, routing, w);
      await step(c, `applying ${describe(o.kind, w.name)}`, () => c.objects.apply(o));
    }
  }
  const keep = new Set(wanted.map((w) => `${routing!.kind}/${w.name}`));
  const keys = new Set(spec.routes.map((r) => r.route_key));
  for (const [apiVersion, kind] of [[GATEWAY_API, 'HTTPRoute'], [INGRESS_API, 'Ingress']] as const) {
    if (!(await serves(c, apiVersion, kind))) continue;
    const live = await listAll(c, `listing the install's ${kind}s`, apiVersion, kind, spec.namespace, `${LABEL_INSTALL}=${spec.installId},${LABEL_ROUTE}`);
    for (const o of live) {
      const meta = obj(o.metadata);
      const name = str(meta.name);
      if (!name || keep.has(`${kind}/${name}`)) continue;
      if (!pruneAll && !keys.has(str(obj(meta.labels)[LABEL_ROUTE]))) continue;
      await step(c, `deleting ${describe(kind, name)}`, async () => {
        try {
          await c.objects.delete({ apiVersion, kind, metadata: { name, namespace: spec.namespace } });
        } catch (err) {
          if (!(err instanceof ApiException && err.code === 404)) throw err;
        }
      });
    }
  }
}

/** Why an HTTPRoute is not accepted by our Gateway yet, or null when it is. */
function httpRouteNotReady(o: Obj, d: string, gateway: { namespace: string; name: string }, namespace: string): string | null {
  const generation = typeof obj(o.metadata).generation === 'number' ? (obj(o.metadata).generation as number) : 0;
  const parent = arr(obj(o.status).parents).map(obj).find((p) => {
    const ref = obj(p.parentRef);
    return str(ref.name) === gateway.name && (str(ref.namespace) || namespace) === gateway.namespace;
  });
  const at = `gateway ${gateway.namespace}/${gateway.name}`;
  if (!parent) return `${d}: waiting for ${at} to accept it`;
  const conditions = arr(parent.conditions).map(obj);
  for (const type of ['Accepted', 'ResolvedRefs']) {
    const cond = conditions.find((x) => x.type === type);
    if (cond?.status === 'False') {
      const why = [str(cond.reason), str(cond.message)].filter(Boolean).join(': ');
      return `${d}: ${type} is False on ${at}${why ? ` (${why})` : ''}`;
    }
  }
  for (const type of ['Accepted', 'ResolvedRefs']) {
    const cond = conditions.find((x) => x.type === type);
    if (cond?.status !== 'True') return `${d}: waiting for ${at} to report ${type}`;
    if (typeof cond.observedGeneration === 'number' && cond.observedGeneration < generation) return `${d}: waiting for ${at} to observe the new spec`;
  }
  return null;
}

function ingressNotReady(o: Obj, d: string): string | null {
  const addresses = arr(obj(obj(obj(o.status).loadBalancer)).ingress);
  return addresses.length > 0 ? null : `${d}: waiting for the ingress controller to assign it an address`;
}

/** Why each route object of the spec is not accepted yet (empty when all are), and how many there are. */
export async function routeObjectsNotReady(c: DeployCall, spec: RoutingSpec): Promise<{ reasons: string[]; count: number }> {
  const wanted = wantedObjects(spec);
  if (wanted.length === 0) return { reasons: [], count: 0 };
  const routing = await chooseRouting(c, spec, wanted.flatMap((w) => w.hostnames));
  const apiVersion = routing.kind === 'HTTPRoute' ? GATEWAY_API : INGRESS_API;
  const reasons: string[] = [];
  for (const w of wanted) {
    const d = describe(routing.kind, w.name);
    const live = await step(c, `reading ${d}`, async () => {
      try {
        return obj(await c.objects.read({ apiVersion, kind: routing.kind, metadata: { name: w.name, namespace: spec.namespace } }));
      } catch (err) {
        if (err instanceof ApiException && err.code === 404) return null;
        throw err;
      }
    });
    const reason = !live
      ? `${d}: not found`
      : routing.kind === 'HTTPRoute' ? httpRouteNotReady(live, d, routing.gateway, spec.namespace) : ingressNotReady(live, d);
    if (reason) reasons.push(reason);
  }
  return { reasons, count: wanted.length };
}

/** The container's last words: its waiting message, then how its last run ended. */
function lastMessage(status: Obj): string {
  const waiting = obj(obj(status.state).waiting);
  const terminated = obj(obj(status.lastState).terminated);
  const parts: string[] = [];
  if (str(waiting.message)) parts.push(str(waiting.message));
  if (Object.keys(terminated).length > 0) {
    const code = typeof terminated.exitCode === 'number' ? ` (exit code ${terminated.exitCode})` : '';
    const message = str(terminated.message).trim();
    parts.push(`last run ended: ${str(terminated.reason) || 'terminated'}${code}${message ? `: ${message}` : ''}`);
  }
  return parts.join('; ');
}

/**
 * Fails (not retryable) when a pod of the install's namespace has a container, or init container,
 * waiting for a reason no waiting fixes; the message names the pod, container, reason and the
 * container's last message, with the values of the install's Secrets and the cluster credentials
 * redacted.
 */
export async function checkPods(c: DeployCall, spec: RoutingSpec & { resources: KubernetesObject[] }): Promise<void> {
  const pods = await listAll(c, `listing the pods of install ${spec.installId}`, 'v1', 'Pod', spec.namespace);
  const failures: { pod: string; container: string; reason: string; message: string }[] = [];
  const replaced = await replacedReplicaSets(c, spec, pods);
  for (const pod of pods) {
    // A pod of a template the Deployment has replaced goes once the new pods are available: its
    // crash is the previous render's (the one an update may be fixing), not this rollout's.
    if (arr(obj(pod.metadata).ownerReferences).map(obj).some((r) => r.kind === 'ReplicaSet' && replaced.has(str(r.name)))) continue;
    const status = obj(pod.status);
    for (const cs of [...arr(status.initContainerStatuses), ...arr(status.containerStatuses)].map(obj)) {
      const reason = str(obj(obj(cs.state).waiting).reason);
      if (FAILING_REASONS.has(reason)) failures.push({ pod: str(obj(pod.metadata).name), container: str(cs.name), reason, message: lastMessage(cs) });
    }
  }
  if (failures.length === 0) return;
  let said = (message: string) => c.redact(message);
  try {
    await hideSecretValues(c, spec);
  } catch {
    // Without the values to redact, the containers' own words cannot be repeated safely.
    said = () => '(message withheld: the install\'s Secrets could not be read to redact it)';
  }
  const described = failures.slice(0, FAILURES_NAMED).map((f) => `pod ${f.pod} container ${f.container}: ${f.reason}${f.message ? `: ${said(f.message)}` : ''}`);
  const more = failures.length > FAILURES_NAMED ? `; and ${failures.length - FAILURES_NAMED} more failing container(s)` : '';
  throw new ClusterDriverError(`${described.join('; ')}${more}`, false);
}

const REVISION = 'deployment.kubernetes.io/revision';

/**
 * The ReplicaSets of the install's Deployments that are not their current revision (read only
 * when a pod fails: two more lists). A ReplicaSet or Deployment without a revision yet counts as current.
 */
async function replacedReplicaSets(c: DeployCall, spec: RoutingSpec & { resources: KubernetesObject[] }, pods: Obj[]): Promise<Set<string>> {
  const replaced = new Set<string>();
  const failing = pods.some((p) => [...arr(obj(p.status).initContainerStatuses), ...arr(obj(p.status).containerStatuses)]
    .some((cs) => FAILING_REASONS.has(str(obj(obj(obj(cs).state).waiting).reason))));
  if (!failing || !spec.resources.some((r) => r.apiVersion === 'apps/v1' && r.kind === 'Deployment')) return replaced;
  const deployments = await listAll(c, `listing the Deployments of install ${spec.installId}`, 'apps/v1', 'Deployment', spec.namespace);
  const revisions = new Map(deployments.map((d) => [str(obj(d.metadata).name), str(obj(obj(d.metadata).annotations)[REVISION])]));
  const sets = await listAll(c, `listing the ReplicaSets of install ${spec.installId}`, 'apps/v1', 'ReplicaSet', spec.namespace);
  for (const rs of sets) {
    const meta = obj(rs.metadata);
    const owner = arr(meta.ownerReferences).map(obj).find((r) => r.kind === 'Deployment' && r.controller === true);
    const current = owner ? revisions.get(str(owner.name)) : undefined;
    const revision = str(obj(meta.annotations)[REVISION]);
    if (current && revision && current !== revision) replaced.add(str(meta.name));
  }
  return replaced;
}

/**
 * A container's message may repeat what it was given: the values of the install's Secrets (its
 * own, and the manifest's) are read back and redacted from what the error says.
 */
async function hideSecretValues(c: DeployCall, spec: RoutingSpec): Promise<void> {
  const secrets = await listAll(c, `reading the Secrets of install ${spec.installId} (to redact them)`, 'v1', 'Secret', spec.namespace, `${LABEL_INSTALL}=${spec.installId}`);
  const values: string[] = [];
  for (const s of secrets) {
    for (const v of Object.values(obj(s.data))) if (typeof v === 'string') values.push(Buffer.from(v, 'base64').toString('utf8'));
    for (const v of Object.values(obj(s.stringData))) if (typeof v === 'string') values.push(v);
  }
  c.hide(values);
}
