// The logs of an install's pods on a Kubernetes cluster: the pods of the install's namespace (which
// holds only the install's objects, so every pod there is one of its workloads'), then for each pod
// container `GET .../pods/{pod}/log?timestamps=true` (with `follow=true`, a response that stays
// open and carries new lines as they are written). The client library buffers whole bodies, so
// these requests go through node:http(s) with the kubeconfig's validated credentials: they stream,
// and the caller's signal aborts them. Every request must answer within the driver's timeout (a
// read without follow must also finish within it), so an unreachable cluster is an error, never a
// hang. Memory is bounded: at most LOG_MAX_CONTAINERS containers, lines cut at LOG_LINE_MAX_BYTES,
// and without follow, each container's newest lines within a byte budget.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import {
  ClusterDriverError, LOG_LINE_MAX_BYTES, LOG_MAX_CONTAINERS, LOG_RESPONSE_MAX_BYTES, cutLogLine,
  type ClusterTarget, type DeploymentTarget, type DriverCallContext, type LogLine, type LogOptions, type LogStream,
} from './driver.js';
import { credentialSecrets, kubeconfigOf, redactSecrets, requestAccessOf } from './kubeconfig.js';

/** TLS failures that no retry can fix: the kubeconfig's CA or server name is wrong. */
const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'ERR_TLS_CERT_ALTNAME_INVALID',
]);
/** a pod list answer larger than this is refused (500 pods are far less) */
const POD_LIST_MAX_BYTES = 8 * 1024 * 1024;
const POD_LIST_LIMIT = 500;

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** How to reach the cluster: its base URL and the TLS and credential options of every request. */
interface Client {
  base: URL;
  options: RequestOptions;
  headers: Record<string, string>;
  /** values that must never appear in an error message */
  secrets: string[];
  timeoutMs: number;
}

function clientOf(target: ClusterTarget, timeoutMs: number): Client {
  const kc = kubeconfigOf(target);
  const access = requestAccessOf(kc);
  const headers: Record<string, string> = { accept: 'text/plain, */*', ...(access.authorization ? { authorization: access.authorization } : {}) };
  // A connection of its own per request: a followed log holds its socket for as long as it is read.
  const options: RequestOptions = { agent: false, ...access.tls };
  return { base: new URL(kc.cluster.server), options, headers, timeoutMs, secrets: credentialSecrets(kc.user) };
}

/** An open response and how to stop its deadline (a followed log keeps reading past it). */
interface Opened {
  res: IncomingMessage;
  /** clears the request's deadline */
  settle(): void;
  /** true once the deadline aborted the request */
  timedOut(): boolean;
}

/**
 * GET `path` (with `query`); resolves with the response once its headers arrived. The request is
 * aborted by `signal` and by its deadline (timeoutMs, until settle()).
 */
function get(c: Client, path: string, query: Record<string, string>, signal: AbortSignal, what: string): Promise<Opened> {
  const url = new URL(c.base.href);
  url.pathname = `${c.base.pathname.replace(/\/+$/, '')}${path}`;
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, c.timeoutMs);
  const onAbort = () => controller.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const settle = () => {
    clearTimeout(timer);
  };
  const done = () => {
    settle();
    signal.removeEventListener('abort', onAbort);
  };
  if (signal.aborted) controller.abort();
  return new Promise<Opened>((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, { ...c.options, method: 'GET', headers: c.headers, signal: controller.signal }, (res) => {
      res.once('close', done);
      resolve({ res, settle, timedOut: () => timedOut });
    });
    req.once('error', (err: NodeJS.ErrnoException) => {
      done();
      if (signal.aborted) return reject(new ClusterDriverError(`${what}: aborted`, true));
      if (timedOut) return reject(new ClusterDriverError(`${what}: the cluster API did not answer within ${Math.round(c.timeoutMs / 100) / 10} s`, true));
      const code = err.code ?? err.name;
      if (TLS_CODES.has(code)) return reject(new ClusterDriverError(`${what}: TLS verification of the cluster API failed (${code})`, false));
      reject(new ClusterDriverError(`${what}: could not reach the cluster API (${code})`, true));
    });
    req.end();
  });
}

/** The body, at most `max` bytes (more is an error), as text. */
async function readBody(res: IncomingMessage, max: number, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) {
      res.destroy();
      throw new ClusterDriverError(`${what}: the answer is larger than ${max} bytes`, false);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The error of a non-2xx answer, with the Status message (credentials redacted). */
async function failure(c: Client, res: IncomingMessage, what: string): Promise<ClusterDriverError> {
  const code = res.statusCode ?? 0;
  let detail = '';
  try {
    const status = obj(JSON.parse(await readBody(res, 64 * 1024, what)));
    if (typeof status.message === 'string') detail = redactSecrets(status.message, c.secrets);
  } catch {
    // not a Status body: the code says enough
  }
  const suffix = detail ? `: ${detail}` : '';
  if (code === 401) return new ClusterDriverError(`${what}: credentials rejected by the cluster API (HTTP 401)`, false);
  if (code === 403) return new ClusterDriverError(`${what}: access forbidden (HTTP 403)${suffix}`, false);
  if (code === 408 || code === 429 || code >= 500) return new ClusterDriverError(`${what}: the cluster API answered HTTP ${code}${suffix}`, true);
  return new ClusterDriverError(`${what}: the cluster API answered HTTP ${code}${suffix}`, false);
}

/** One pod container to read, in the order they are read (pod name, then the pod's container order). */
interface Source {
  pod: string;
  container: string;
}

async function listSources(c: Client, namespace: string, container: string | undefined, signal: AbortSignal): Promise<Source[]> {
  const what = `listing the pods of namespace ${namespace}`;
  const { res, settle } = await get(c, `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`, { limit: String(POD_LIST_LIMIT) }, signal, what);
  try {
    if (res.statusCode !== 200) throw await failure(c, res, what);
    let list: Obj;
    try {
      list = obj(JSON.parse(await readBody(res, POD_LIST_MAX_BYTES, what)));
    } catch (err) {
      if (err instanceof ClusterDriverError) throw err;
      throw new ClusterDriverError(`${what}: the server did not answer like a Kubernetes API server`, false);
    }
    const sources: Source[] = [];
    const pods = arr(list.items).map(obj).sort((a, b) => String(obj(a.metadata).name).localeCompare(String(obj(b.metadata).name)));
    for (const pod of pods) {
      const name = obj(pod.metadata).name;
      if (typeof name !== 'string') continue;
      for (const ctr of arr(obj(pod.spec).containers).map(obj)) {
        if (typeof ctr.name !== 'string' || (container !== undefined && ctr.name !== container)) continue;
        sources.push({ pod: name, container: ctr.name });
      }
    }
    return sources;
  } finally {
    settle();
    res.destroy();
  }
}

/** A parsed line and the instant it sorts by. */
interface Parsed extends LogLine {
  /** nanoseconds within the second */
  nanos: number;
}

const TIMESTAMP = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/;

/** A `timestamps=true` line: `<RFC 3339 timestamp> <text>`; a line without one is stamped now. */
export function parseLogLine(raw: string, pod: string, container: string, cut: number): Parsed {
  const space = raw.indexOf(' ');
  const m = space > 0 ? TIMESTAMP.exec(raw.slice(0, space)) : null;
  const ms = m ? Date.parse(`${m[1]}${m[3]}`) : NaN;
  let text = m && !Number.isNaN(ms) ? raw.slice(space + 1) : raw;
  if (text.endsWith('\r')) text = text.slice(0, -1);
  // A line whose end was dropped while reading is cut with the size it had.
  const line = cutLogLine(text, cut);
  if (!m || Number.isNaN(ms)) {
    const now = Date.now();
    return { time: Math.floor(now / 1000), timestamp: new Date(now).toISOString(), pod, container, line, nanos: (now % 1000) * 1e6 };
  }
  return { time: Math.floor(ms / 1000), timestamp: raw.slice(0, space), pod, container, line, nanos: Number((m[2] ?? '').padEnd(9, '0')) };
}

/**
 * The lines of one response: split on newlines, holding at most LOG_LINE_MAX_BYTES (and its
 * timestamp) of a line; the rest of a longer line is counted, not kept. Ends when the response
 * ends, is aborted or breaks (a container's log ending is not an error of the others).
 */
async function* linesOf(res: IncomingMessage, source: Source): AsyncGenerator<Parsed> {
  const keep = LOG_LINE_MAX_BYTES + 64;
  let parts: Buffer[] = [];
  let held = 0;
  let dropped = 0;
  const take = (piece: Buffer) => {
    const room = keep - held;
    if (piece.length <= room) {
      parts.push(piece);
      held += piece.length;
    } else {
      if (room > 0) parts.push(piece.subarray(0, room));
      held += Math.max(0, room);
      dropped += piece.length - Math.max(0, room);
    }
  };
  const emit = (): Parsed => {
    const parsed = parseLogLine(Buffer.concat(parts).toString('utf8'), source.pod, source.container, dropped);
    parts = [];
    held = 0;
    dropped = 0;
    return parsed;
  };
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      let start = 0;
      for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
        take(chunk.subarray(start, nl));
        start = nl + 1;
        yield emit();
      }
      if (start < chunk.length) take(chunk.subarray(start));
    }
    if (held > 0 || dropped > 0) yield emit();
  } catch {
    // aborted (the caller stopped) or cut (the API server or a pod went away): this log ends
  } finally {
    res.destroy();
  }
}

/** Lines of several sources, as they come (each source's in order); a source that fails just ends. */
async function* merge(sources: AsyncGenerator<Parsed>[]): AsyncGenerator<Parsed> {
  const pending = new Map<number, Promise<{ i: number; r: IteratorResult<Parsed> }>>();
  const pull = (i: number) => pending.set(i, sources[i]!.next().then(
    (r) => ({ i, r }),
    () => ({ i, r: { done: true as const, value: undefined } }),
  ));
  sources.forEach((_, i) => pull(i));
  try {
    while (pending.size > 0) {
      const { i, r } = await Promise.race(pending.values());
      if (r.done) {
        pending.delete(i);
        continue;
      }
      pull(i);
      yield r.value;
    }
  } finally {
    for (const s of sources) void s.return(undefined).catch(() => undefined);
  }
}

/** Orders lines by their instant; equal instants keep their order (Array.prototype.sort is stable). */
export function byTime(a: Parsed, b: Parsed): number {
  return a.time - b.time || a.nanos - b.nanos;
}

/** A source's newest lines within `budget` bytes of text (older ones dropped first). */
async function newest(lines: AsyncGenerator<Parsed>, budget: number): Promise<{ lines: Parsed[]; dropped: boolean }> {
  const kept: Parsed[] = [];
  let bytes = 0;
  let first = 0;
  for await (const line of lines) {
    kept.push(line);
    bytes += line.line.length;
    while (bytes > budget && first < kept.length) bytes -= kept[first++]!.line.length;
  }
  return { lines: kept.slice(first), dropped: first > 0 };
}

const strip = ({ nanos: _nanos, ...line }: Parsed): LogLine => line;

export async function openKubernetesLogs(target: ClusterTarget, deployment: DeploymentTarget, options: LogOptions, ctx: DriverCallContext, timeoutMs: number): Promise<LogStream> {
  if (ctx.signal.aborted) throw new ClusterDriverError('reading logs: aborted', true);
  const c = clientOf(target, timeoutMs);
  const all = await listSources(c, deployment.namespace, options.container, ctx.signal);
  const sources = all.slice(0, LOG_MAX_CONTAINERS);
  const query: Record<string, string> = { timestamps: 'true', tailLines: String(options.tail) };
  if (options.since !== undefined) query.sinceTime = new Date(options.since * 1000).toISOString().replace('.000Z', 'Z');
  if (options.follow) query.follow = 'true';

  // Every request answered before anything is read: a refusal (403) or an unreachable cluster
  // fails the call; a container that has not started (400) or a pod gone meanwhile (404) has no log yet.
  const opened = await Promise.allSettled(sources.map(async (s) => {
    const what = `reading the log of ${s.pod}/${s.container}`;
    const path = `/api/v1/namespaces/${encodeURIComponent(deployment.namespace)}/pods/${encodeURIComponent(s.pod)}/log`;
    const o = await get(c, path, { ...query, container: s.container }, ctx.signal, what);
    if (o.res.statusCode === 200) return o;
    o.settle();
    const code = o.res.statusCode;
    if (code === 400 || code === 404) {
      o.res.destroy();
      return undefined;
    }
    throw await failure(c, o.res, what);
  }));
  const failed = opened.find((o) => o.status === 'rejected');
  if (failed) {
    for (const o of opened) if (o.status === 'fulfilled' && o.value) o.value.res.destroy();
    throw (failed as PromiseRejectedResult).reason;
  }
  const open = opened.flatMap((o, i) => (o.status === 'fulfilled' && o.value ? [{ ...o.value, source: sources[i]! }] : []));

  if (options.follow) {
    // Read as long as they last: no deadline once the answers began.
    for (const o of open) o.settle();
    const merged = merge(open.map((o) => linesOf(o.res, o.source)));
    return { containers: open.length, leftOut: all.length - sources.length, truncated: () => false, lines: (async function* () {
      for await (const line of merged) yield strip(line);
    })() };
  }

  // Without follow each answer ends on its own, within the deadline; every source's newest lines
  // within an equal share of the response's budget (a quarter MiB at least) are kept.
  const budget = Math.max(256 * 1024, Math.floor(LOG_RESPONSE_MAX_BYTES / Math.max(1, open.length)));
  let dropped = false;
  let read: Parsed[];
  try {
    const results = await Promise.all(open.map((o) => newest(linesOf(o.res, o.source), budget)));
    if (ctx.signal.aborted) throw new ClusterDriverError('reading logs: aborted', true);
    if (open.some((o) => o.timedOut())) throw new ClusterDriverError(`reading logs: the cluster API did not send them within ${Math.round(timeoutMs / 100) / 10} s`, true);
    // A log cut short by the API server (its connection reset) keeps what came: the answer says it is incomplete.
    dropped = results.some((r) => r.dropped) || open.some((o) => !o.res.complete);
    read = results.flatMap((r) => r.lines).sort(byTime);
  } finally {
    for (const o of open) {
      o.settle();
      o.res.destroy();
    }
  }
  return { containers: open.length, leftOut: all.length - sources.length, truncated: () => dropped, lines: (async function* () {
    for (const line of read) yield strip(line);
  })() };
}
