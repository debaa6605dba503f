// What the stand-in Kubernetes API server's controllers would write, in the real API's shapes:
//   - the pods of a Deployment (its ReplicaSet's, named `<deployment>-<pod-template-hash>-<5 chars>`,
//     labelled from the pod template plus `pod-template-hash`), with container statuses: running
//     and ready, or, for an image of `fail.example/...`, what the kubelet reports when it cannot run it:
//       fail.example/crashloop...     CrashLoopBackOff, last run terminated with exit code 1 (its
//                                     termination message is the container's STANDIN_EXIT_MESSAGE
//                                     env value, literal or from a secretKeyRef, as a process that
//                                     prints its configuration when it dies)
//       fail.example/imagepull...     ImagePullBackOff
//       fail.example/errimagepull...  ErrImagePull
//   - the status of an HTTPRoute, as a Gateway API implementation writes it for each parent Gateway
//     it programs: Accepted (False NotAllowedByListeners / NoMatchingListenerHostname) and
//     ResolvedRefs (False BackendNotFound when a backend Service or its port is missing);
//   - the status of an Ingress of a known IngressClass: a load balancer address.
import { createHash, randomInt } from 'node:crypto';

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const obj = (v: unknown): Json => (isObj(v) ? v : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const now = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** The characters Kubernetes uses in generated names (no vowels, no look-alikes). */
const SAFE = 'bcdfghjklmnpqrstvwxz2456789';
const safeString = (bytes: Buffer, n: number): string => Array.from(bytes.subarray(0, n), (b) => SAFE[b % SAFE.length]).join('');

/** The pod-template-hash of a Deployment's template (deterministic, like the ReplicaSet controller's). */
export function podTemplateHash(deployment: Json): string {
  return safeString(createHash('sha256').update(JSON.stringify(obj(deployment.spec).template ?? {})).digest(), 10);
}

export const INGRESS_ADDRESS = '203.0.113.20';

/** Looks up a value of a Secret in the namespace (what a secretKeyRef resolves to in the pod). */
export type SecretValue = (namespace: string, name: string, key: string) => string | undefined;

function exitMessage(container: Json, namespace: string, secret: SecretValue): string {
  const env = arr(container.env).map(obj).find((e) => e.name === 'STANDIN_EXIT_MESSAGE');
  if (!env) return 'the process exited with status 1';
  if (typeof env.value === 'string') return env.value;
  const ref = obj(obj(env.valueFrom).secretKeyRef);
  return secret(namespace, str(ref.name), str(ref.key)) ?? '';
}

/** A container's status as the kubelet reports it for its image. */
function containerStatus(container: Json, pod: string, namespace: string, init: boolean, secret: SecretValue): Json {
  const name = str(container.name);
  const image = str(container.image);
  const base = { name, image, imageID: '', restartCount: 0, ready: false, started: false };
  if (image.startsWith('fail.example/crashloop')) {
    return {
      ...base, restartCount: 4,
      state: { waiting: { reason: 'CrashLoopBackOff', message: `back-off 1m20s restarting failed container=${name} pod=${pod}_${namespace}(6f1c2d3e-0000-4000-8000-000000000001)` } },
      lastState: { terminated: { exitCode: 1, reason: 'Error', message: exitMessage(container, namespace, secret), startedAt: now(), finishedAt: now(), containerID: `containerd://${'c'.repeat(64)}` } },
    };
  }
  if (image.startsWith('fail.example/imagepull')) {
    return { ...base, state: { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}"` } }, lastState: {} };
  }
  if (image.startsWith('fail.example/errimagepull')) {
    return {
      ...base,
      state: { waiting: { reason: 'ErrImagePull', message: `failed to pull and unpack image "${image}": failed to resolve reference "${image}": ${image}: not found` } },
      lastState: {},
    };
  }
  const id = { imageID: `docker.io/library/${image}@sha256:${'a'.repeat(64)}`, containerID: `containerd://${'b'.repeat(64)}` };
  if (init) return { ...base, ...id, state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: now(), finishedAt: now() } }, lastState: {} };
  return { ...base, ...id, ready: true, started: true, state: { running: { startedAt: now() } }, lastState: {} };
}

/** One pod of a Deployment's current ReplicaSet, as the scheduler and kubelet leave it. */
export function podOf(deployment: Json, namespace: string, hash: string, secret: SecretValue): Json {
  const deploymentName = str(obj(deployment.metadata).name);
  const template = obj(obj(deployment.spec).template);
  const name = `${deploymentName}-${hash}-${safeString(Buffer.from(Array.from({ length: 5 }, () => randomInt(256))), 5)}`;
  const spec = structuredClone(obj(template.spec));
  const initStatuses = arr(spec.initContainers).map(obj).map((c) => containerStatus(c, name, namespace, true, secret));
  const statuses = arr(spec.containers).map(obj).map((c) => containerStatus(c, name, namespace, false, secret));
  const initDone = initStatuses.every((s) => obj(s.state).terminated);
  const containers = initDone ? statuses : statuses.map((s) => ({ ...s, ready: false, started: false, state: { waiting: { reason: 'PodInitializing' } } }));
  const ready = initDone && containers.every((s) => s.ready === true);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name, namespace, generateName: `${deploymentName}-${hash}-`,
      labels: { ...obj(obj(template.metadata).labels), 'pod-template-hash': hash },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${deploymentName}-${hash}`, uid: `5e${hash}-0000-4000-8000-000000000000`, controller: true, blockOwnerDeletion: true }],
      creationTimestamp: now(),
    },
    spec: { ...spec, nodeName: 'kind-worker', restartPolicy: spec.restartPolicy ?? 'Always' },
    status: {
      phase: ready ? 'Running' : 'Pending',
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: now() },
        { type: 'Initialized', status: initDone ? 'True' : 'False', lastTransitionTime: now() },
        { type: 'ContainersReady', status: ready ? 'True' : 'False', lastTransitionTime: now() },
        { type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: now() },
      ],
      hostIP: '172.18.0.3', podIP: `10.244.1.${randomInt(2, 250)}`, startTime: now(), qosClass: 'BestEffort',
      ...(initStatuses.length ? { initContainerStatuses: initStatuses } : {}),
      containerStatuses: containers,
    },
  };
}

/** Gateway API hostname matching: `*.example.com` matches names with one or more labels in front. */
function hostnameMatches(listener: string, host: string): boolean {
  if (!listener) return true;
  if (listener.startsWith('*.')) return host.endsWith(listener.slice(1)) && host.length > listener.length - 1;
  return listener === host;
}

/** Whether a listener lets routes of `routeNamespace` attach (allowedRoutes.namespaces; Same is the default). */
function allows(listener: Json, gatewayNamespace: string, routeNamespace: string, namespaceLabels: (ns: string) => Json): boolean {
  const from = str(obj(obj(listener.allowedRoutes).namespaces).from) || 'Same';
  if (from === 'All') return true;
  if (from === 'Same') return gatewayNamespace === routeNamespace;
  const match = obj(obj(obj(obj(listener.allowedRoutes).namespaces).selector).matchLabels);
  const labels = namespaceLabels(routeNamespace);
  return Object.entries(match).every(([k, v]) => labels[k] === v);
}

export interface RouteWorld {
  gateways: Json[];
  ingressClasses: string[];
  /** a Service in a namespace, or undefined */
  service(namespace: string, name: string): Json | undefined;
  namespaceLabels(namespace: string): Json;
}

const condition = (type: string, ok: boolean, reason: string, message: string, generation: unknown): Json => ({
  type, status: ok ? 'True' : 'False', reason, message, observedGeneration: generation, lastTransitionTime: now(),
});

/** The status a Gateway API implementation writes on an HTTPRoute (undefined: no parent it programs). */
export function httpRouteStatus(route: Json, world: RouteWorld): Json | undefined {
  const meta = obj(route.metadata);
  const namespace = str(meta.namespace);
  const spec = obj(route.spec);
  const hostnames = arr(spec.hostnames).map(str);
  const parents: Json[] = [];
  for (const ref of arr(spec.parentRefs).map(obj)) {
    const gwNamespace = str(ref.namespace) || namespace;
    const gateway = world.gateways.find((g) => str(obj(g.metadata).name) === str(ref.name) && str(obj(g.metadata).namespace) === gwNamespace);
    if (!gateway) continue; // no controller owns that parent: nobody writes a status for it
    const listeners = arr(obj(gateway.spec).listeners).map(obj)
      .filter((l) => (ref.sectionName ? l.name === ref.sectionName : true) && ['HTTP', 'HTTPS'].includes(str(l.protocol)));
    const allowed = listeners.filter((l) => allows(l, gwNamespace, namespace, world.namespaceLabels));
    const matching = allowed.filter((l) => hostnames.length === 0 || hostnames.some((h) => hostnameMatches(str(l.hostname), h)));
    const accepted = allowed.length === 0
      ? condition('Accepted', false, 'NotAllowedByListeners', 'No listeners included by this parent ref allowed this attachment.', meta.generation)
      : matching.length === 0
        ? condition('Accepted', false, 'NoMatchingListenerHostname', 'No matching listener hostname', meta.generation)
        : condition('Accepted', true, 'Accepted', 'Route is accepted', meta.generation);
    let resolved = condition('ResolvedRefs', true, 'ResolvedRefs', 'Resolved all the Object references for the Route', meta.generation);
    for (const backend of arr(spec.rules).flatMap((r) => arr(obj(r).backendRefs)).map(obj)) {
      const backendNamespace = str(backend.namespace) || namespace;
      const service = world.service(backendNamespace, str(backend.name));
      const ports = arr(obj(service?.spec).ports).map((p) => obj(p).port);
      if (!service) {
        resolved = condition('ResolvedRefs', false, 'BackendNotFound', `Failed to process route rule 0 backendRef 0: service ${backendNamespace}/${str(backend.name)} not found.`, meta.generation);
      } else if (!ports.includes(backend.port)) {
        resolved = condition('ResolvedRefs', false, 'BackendNotFound', `Failed to process route rule 0 backendRef 0: TCP Port ${String(backend.port)} not found on service ${backendNamespace}/${str(backend.name)}.`, meta.generation);
      }
    }
    parents.push({ parentRef: ref, controllerName: 'gateway.envoyproxy.io/gatewayclass-controller', conditions: [accepted, resolved] });
  }
  return parents.length ? { parents } : undefined;
}

/** The status an ingress controller writes on an Ingress of its class (undefined: no controller for the class). */
export function ingressStatus(ingress: Json, world: RouteWorld): Json | undefined {
  const className = str(obj(ingress.spec).ingressClassName);
  if (!world.ingressClasses.includes(className)) return undefined;
  return { loadBalancer: { ingress: [{ ip: INGRESS_ADDRESS }] } };
}
