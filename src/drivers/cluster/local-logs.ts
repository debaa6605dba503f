// The local (simulated) cluster's logs. No workload runs there, so its "pods" log what the driver
// did for them: the objects a deploy applied, each simulated container "started" (saying that
// nothing runs), readiness checks. Lines are rows of local_log_lines, numbered per install; the
// last LOCAL_LOG_KEEP are kept. Reading them is a query; following them polls for new rows about
// every second (the simulator writes a handful of lines per deploy: no notifier is worth it).
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Executor } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import {
  cutLogLine, type DeploymentSpec, type DeploymentTarget, type DriverCallContext, type KubernetesObject, type LogLine,
  type LogOptions, type LogStream,
} from './driver.js';

/** lines kept per install (older ones are deleted as new ones come) */
export const LOCAL_LOG_KEEP = 500;
/** the "pod" and "container" of the simulated cluster's own lines (what it applied, checked) */
export const LOCAL_DRIVER_POD = 'svc-local-cluster';
export const LOCAL_DRIVER_CONTAINER = 'driver';
const POLL_MS = 1000;
/** simulated replicas logged per workload, whatever it asks for */
const MAX_SIMULATED_REPLICAS = 3;
const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job']);
/** the characters Kubernetes uses in generated name suffixes */
const SUFFIX_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

export interface LocalLogEntry {
  pod: string;
  container: string;
  line: string;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

/** `n` characters of Kubernetes' suffix alphabet, derived from `seed` (the same render names the same pods). */
function suffix(seed: string, n: number): string {
  const h = createHash('sha256').update(seed).digest();
  let out = '';
  for (let i = 0; i < n; i++) out += SUFFIX_CHARS[h[i]! % SUFFIX_CHARS.length];
  return out;
}

/** The simulated pods of one workload object, named as its controller would name them. */
function podNames(o: KubernetesObject, renderId: string): string[] {
  const name = o.metadata.name;
  const replicas = typeof obj(o.spec).replicas === 'number' ? Math.max(0, Math.min(MAX_SIMULATED_REPLICAS, obj(o.spec).replicas as number)) : 1;
  const template = suffix(`${renderId}/${name}`, 10);
  return Array.from({ length: replicas }, (_, i) => {
    if (o.kind === 'StatefulSet') return `${name}-${i}`;
    const pod = suffix(`${renderId}/${name}/${i}`, 5);
    return o.kind === 'Deployment' ? `${name}-${template}-${pod}` : `${name}-${pod}`;
  });
}

/** What a deploy of `spec` logs: the objects applied, then each simulated container starting. */
export function deployLines(spec: DeploymentSpec): LocalLogEntry[] {
  const names = spec.resources.map((r) => `${r.kind.toLowerCase()}/${r.metadata.name}`);
  const listed = names.length > 10 ? `${names.slice(0, 10).join(', ')} and ${names.length - 10} more` : names.join(', ');
  const lines: LocalLogEntry[] = [{
    pod: LOCAL_DRIVER_POD, container: LOCAL_DRIVER_CONTAINER,
    line: `applied render ${spec.renderId} to namespace ${spec.namespace}: ${names.length} object(s)${listed ? ` (${listed})` : ''}`,
  }];
  for (const o of spec.resources) {
    if (!WORKLOADS.has(o.kind)) continue;
    const containers = (Array.isArray(obj(obj(obj(o.spec).template).spec).containers) ? obj(obj(obj(o.spec).template).spec).containers as unknown[] : []).map(obj);
    const named = containers.length > 0
      ? containers.map((c) => ({ name: typeof c.name === 'string' ? c.name : o.metadata.name, image: typeof c.image === 'string' ? c.image : 'no image' }))
      : [{ name: o.metadata.name, image: 'no image' }];
    for (const pod of podNames(o, spec.renderId)) {
      for (const c of named) {
        lines.push({ pod, container: c.name, line: `container ${c.name} started from ${c.image} (simulated: no workload runs on the local cluster)` });
      }
    }
  }
  return lines;
}

/**
 * Appends lines to the install's log and drops the lines past LOCAL_LOG_KEEP. The install's
 * writers (its deploy steps) run one at a time; a clash on `seq` (two at once after all) is retried.
 */
export async function writeLocalLog(db: Executor, clusterId: string, installId: string, entries: LocalLogEntry[]): Promise<void> {
  if (entries.length === 0) return;
  for (let attempt = 1; ; attempt++) {
    const last = await db.selectFrom('local_log_lines').select((eb) => eb.fn.max('seq').as('seq')).where('install_id', '=', installId).executeTakeFirst();
    const from = Number(last?.seq ?? 0) + 1;
    const at = clock.nowMs();
    try {
      await db.insertInto('local_log_lines').values(entries.map((e, i) => ({
        cluster_id: clusterId, install_id: installId, seq: from + i, at_ms: at, pod: e.pod, container: e.container, line: cutLogLine(e.line),
      }))).execute();
    } catch (err) {
      if (attempt >= 3) throw err;
      continue;
    }
    await db.deleteFrom('local_log_lines').where('install_id', '=', installId).where('seq', '<=', from + entries.length - 1 - LOCAL_LOG_KEEP).execute();
    return;
  }
}

/** Every line of the install (undeploy: its logs go with its pods). */
export async function clearLocalLog(db: Executor, clusterId: string, installId: string): Promise<void> {
  await db.deleteFrom('local_log_lines').where('cluster_id', '=', clusterId).where('install_id', '=', installId).execute();
}

interface Row {
  seq: number;
  at_ms: number;
  pod: string;
  container: string;
  line: string;
}

async function linesAfter(db: Executor, clusterId: string, deployment: DeploymentTarget, options: LogOptions, after: number): Promise<Row[]> {
  let q = db.selectFrom('local_log_lines').select(['seq', 'at_ms', 'pod', 'container', 'line'])
    .where('cluster_id', '=', clusterId).where('install_id', '=', deployment.installId).where('seq', '>', after);
  if (options.container !== undefined) q = q.where('container', '=', options.container);
  if (options.since !== undefined) q = q.where('at_ms', '>=', options.since * 1000);
  // At most LOCAL_LOG_KEEP rows exist per install: the whole log is one bounded read.
  return (await q.orderBy('seq').limit(LOCAL_LOG_KEEP * 2).execute()).map((r) => ({ ...r, seq: Number(r.seq), at_ms: Number(r.at_ms) }));
}

/** The last `tail` rows of each pod container, in order. */
function tailOf(rows: Row[], tail: number): Row[] {
  const seen = new Map<string, number>();
  const kept: Row[] = [];
  for (let i = rows.length - 1; i >= 0; i--) {
    const key = `${rows[i]!.pod}/${rows[i]!.container}`;
    const n = seen.get(key) ?? 0;
    if (n >= tail) continue;
    seen.set(key, n + 1);
    kept.push(rows[i]!);
  }
  return kept.reverse();
}

const toLine = (r: Row): LogLine => ({
  time: Math.floor(r.at_ms / 1000), timestamp: new Date(r.at_ms).toISOString(), pod: r.pod, container: r.container, line: r.line,
});

export async function readLocalLogs(db: Executor, clusterId: string, deployment: DeploymentTarget, options: LogOptions, ctx: DriverCallContext): Promise<LogStream> {
  const first = tailOf(await linesAfter(db, clusterId, deployment, options, 0), options.tail);
  const containers = new Set(first.map((r) => `${r.pod}/${r.container}`)).size;
  async function* lines(): AsyncGenerator<LogLine> {
    let last = 0;
    for (const r of first) {
      last = r.seq;
      yield toLine(r);
    }
    if (!options.follow) return;
    // Rows before the first read that the filters left out are not read again.
    if (first.length === 0) {
      const top = await db.selectFrom('local_log_lines').select((eb) => eb.fn.max('seq').as('seq')).where('install_id', '=', deployment.installId).executeTakeFirst();
      last = Number(top?.seq ?? 0);
    }
    while (!ctx.signal.aborted) {
      try {
        await sleep(POLL_MS, undefined, { signal: ctx.signal });
      } catch {
        return;
      }
      for (const r of await linesAfter(db, clusterId, deployment, options, last)) {
        last = r.seq;
        yield toLine(r);
      }
    }
  }
  return { containers, leftOut: 0, truncated: () => false, lines: lines() };
}
