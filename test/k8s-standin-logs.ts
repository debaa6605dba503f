// The stand-in Kubernetes API server's pods and their logs: the pod list of a namespace
// (GET /api/v1/namespaces/<ns>/pods) and `pods/log` (GET .../pods/<pod>/log), answered as the real
// API server does: text/plain, one line per line, with `timestamps=true` each prefixed by its
// RFC3339Nano time and a space; `container` (required when the pod has several), `tailLines`,
// `sinceSeconds` / `sinceTime`, and `follow=true`, which keeps the response open and writes the
// lines appended later. Pods are the stored `Pod` objects (applied, or added with addPod); the
// lines are what a test appends (appendLog). A test sees which follows are open and which the
// client closed.
import type { ServerResponse } from 'node:http';
import { ObjectStore } from './k8s-standin-objects.js';

type Json = Record<string, unknown>;

interface Entry {
  /** RFC3339Nano */
  timestamp: string;
  ms: number;
  text: string;
}

interface Follower {
  res: ServerResponse;
  timestamps: boolean;
}

const status = (code: number, reason: string, message: string, details: Json = {}): Json => ({
  kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, details, code,
});
const obj = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {});

/** RFC3339Nano as Go writes it: fractional seconds without trailing zeros. */
export function rfc3339Nano(ms: number, nanosInMs = 0): string {
  const iso = new Date(ms).toISOString();
  const frac = `${iso.slice(20, 23)}${String(nanosInMs).padStart(6, '0')}`.replace(/0+$/, '');
  return `${iso.slice(0, 19)}${frac ? `.${frac}` : ''}Z`;
}

export class PodLogs {
  /** lines by `<ns>/<pod>/<container>` */
  private readonly logs = new Map<string, Entry[]>();
  private readonly followers = new Map<string, Set<Follower>>();
  /** follow requests the client closed (the stand-in saw the connection end) */
  closedFollows = 0;
  /** true: pods/log requests are never answered (a kubelet that hangs), until the client gives up */
  stall = false;
  private readonly stalled = new Set<ServerResponse>();

  /** stalled pods/log requests the client has not closed yet */
  get stalledOpen(): number {
    return this.stalled.size;
  }
  private counter = 0;

  constructor(private readonly objects: ObjectStore) {}

  /** follow responses open now */
  get openFollows(): number {
    let n = 0;
    for (const set of this.followers.values()) n += set.size;
    return n;
  }

  /** Stores a running Pod with these containers, as a controller would create it. */
  addPod(namespace: string, name: string, containers: string[], labels: Record<string, string> = {}): void {
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    this.objects.objects.set(ObjectStore.key('v1', 'Pod', namespace, name), {
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name, namespace, labels, uid: `5d1c${name.length}a2b-3c4d-4e5f-8a9b-${name.padEnd(12, '0').slice(0, 12)}`, resourceVersion: '7001', creationTimestamp: now },
      spec: { containers: containers.map((c) => ({ name: c, image: `registry.example/${c}:1` })) },
      status: {
        phase: 'Running', startTime: now,
        containerStatuses: containers.map((c) => ({ name: c, ready: true, restartCount: 0, started: true, state: { running: { startedAt: now } }, image: `registry.example/${c}:1` })),
      },
    });
  }

  /** Appends a line to a container's log (at `at`, default now), written at once to its followers. */
  appendLog(namespace: string, pod: string, container: string, text: string, at: Date = new Date()): void {
    const key = `${namespace}/${pod}/${container}`;
    const entry: Entry = { timestamp: rfc3339Nano(at.getTime(), (++this.counter * 1000) % 1_000_000), ms: at.getTime(), text };
    const list = this.logs.get(key) ?? [];
    list.push(entry);
    this.logs.set(key, list);
    for (const f of this.followers.get(key) ?? []) f.res.write(this.format(entry, f.timestamps));
  }

  close(): void {
    for (const res of this.stalled) res.destroy();
    this.stalled.clear();
    for (const set of this.followers.values()) for (const f of set) f.res.destroy();
    this.followers.clear();
  }

  private format(e: Entry, timestamps: boolean): string {
    return `${timestamps ? `${e.timestamp} ` : ''}${e.text}\n`;
  }

  private pods(namespace: string): Json[] {
    const out: Json[] = [];
    for (const [key, o] of this.objects.objects) {
      const [apiVersion, kind, ns] = key.split('|');
      if (apiVersion === 'v1' && kind === 'Pod' && ns === namespace) out.push(structuredClone(o));
    }
    return out.sort((a, b) => String(obj(a.metadata).name).localeCompare(String(obj(b.metadata).name)));
  }

  /** Answers a pod list or a pods/log request; false when the path is neither. */
  handle(method: string, path: string, query: URLSearchParams, res: ServerResponse): boolean {
    if (method !== 'GET') return false;
    const send = (code: number, body: Json) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const pods = path.match(/^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+)\/log)?$/);
    if (pods && this.objects.forbidden.has('pods')) {
      // RBAC without a rule for pods (or pods/log): what a real API server answers.
      const ns = decodeURIComponent(pods[1]!);
      const what = pods[2] ? `pods "${decodeURIComponent(pods[2])}" is forbidden: User "system:serviceaccount:svc:deployer" cannot get resource "pods/log"` : 'pods is forbidden: User "system:serviceaccount:svc:deployer" cannot list resource "pods"';
      send(403, status(403, 'Forbidden', `${what} in API group "" in the namespace "${ns}"`, { kind: 'pods' }));
      return true;
    }
    const list = path.match(/^\/api\/v1\/namespaces\/([^/]+)\/pods$/);
    if (list) {
      send(200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '7001' }, items: this.pods(decodeURIComponent(list[1]!)) });
      return true;
    }
    const log = path.match(/^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/log$/);
    if (!log) return false;
    if (this.stall) {
      this.stalled.add(res);
      res.once('close', () => this.stalled.delete(res));
      return true;
    }
    const namespace = decodeURIComponent(log[1]!);
    const name = decodeURIComponent(log[2]!);
    const pod = this.objects.objects.get(ObjectStore.key('v1', 'Pod', namespace, name));
    if (!pod) {
      send(404, status(404, 'NotFound', `pods "${name}" not found`, { name, kind: 'pods' }));
      return true;
    }
    const containers = (obj(pod.spec).containers as Json[] | undefined ?? []).map((c) => String(c.name));
    let container = query.get('container') ?? '';
    if (!container) {
      if (containers.length !== 1) {
        send(400, status(400, 'BadRequest', `a container name must be specified for pod ${name}, choose one of: [${containers.join(' ')}]`));
        return true;
      }
      container = containers[0]!;
    }
    if (!containers.includes(container)) {
      send(400, status(400, 'BadRequest', `container ${container} is not valid for pod ${name}`));
      return true;
    }
    let entries = this.logs.get(`${namespace}/${name}/${container}`) ?? [];
    const sinceSeconds = query.get('sinceSeconds');
    const sinceTime = query.get('sinceTime');
    if (sinceSeconds) entries = entries.filter((e) => e.ms >= Date.now() - Number(sinceSeconds) * 1000);
    else if (sinceTime) entries = entries.filter((e) => e.ms >= Math.floor(Date.parse(sinceTime) / 1000) * 1000);
    const tail = query.get('tailLines');
    if (tail !== null && Number(tail) >= 0) entries = entries.slice(Math.max(0, entries.length - Number(tail)));
    const timestamps = query.get('timestamps') === 'true';
    res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-cache, private' });
    const text = entries.map((e) => this.format(e, timestamps)).join('');
    if (query.get('follow') !== 'true') {
      res.end(text);
      return true;
    }
    if (text) res.write(text);
    else res.flushHeaders();
    const key = `${namespace}/${name}/${container}`;
    const follower: Follower = { res, timestamps };
    const set = this.followers.get(key) ?? new Set<Follower>();
    set.add(follower);
    this.followers.set(key, set);
    res.once('close', () => {
      if (set.delete(follower)) this.closedFollows++;
    });
    return true;
  }
}
