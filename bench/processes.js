// Process plumbing shared by the benchmarks: build dist/ when stale, free ports, start and stop
// `svc` processes, and read their memory and CPU time from /proc (Linux).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const RESULTS = join(ROOT, 'bench', 'results');

export function newestMtime(dir) {
  let newest = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const s = statSync(p);
    newest = Math.max(newest, s.isDirectory() ? newestMtime(p) : s.mtimeMs);
  }
  return newest;
}

/** The bench runs the built service and app; build them when dist/ is missing or older than src/ or web/. */
export function ensureBuilt() {
  const main = join(ROOT, 'dist', 'main.js');
  const app = join(ROOT, 'dist', 'app', 'index.html');
  const built = (f) => (existsSync(f) ? statSync(f).mtimeMs : 0);
  if (built(main) >= newestMtime(join(ROOT, 'src')) && built(app) >= Math.max(newestMtime(join(ROOT, 'web')), newestMtime(join(ROOT, 'src')))) return;
  console.log('building dist/ (npm run build)...');
  const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('build failed');
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Polls `url` (with fetch options `init`, GET by default) until it answers 2xx. */
export async function waitUntilUp(url, child, timeoutMs = 60_000, init = {}) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited with ${child.exitCode}`);
    try {
      const res = await fetch(url, init);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up within ${timeoutMs} ms`);
}

export function startProcess(args, env, logFile) {
  const out = openSync(logFile, 'a');
  // The preview router binds a port of its own (default 8081): 0 lets each process take any free
  // one, so processes started together never collide. A benchmark that requests preview URLs
  // passes a known SVC_PREVIEW_PORT (the URLs carry it).
  const childEnv = { PATH: process.env.PATH, HOME: process.env.HOME, SVC_PREVIEW_PORT: '0', SVC_METRICS_TOKEN: BENCH_METRICS_TOKEN, ...env };
  return spawn(process.execPath, [...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : []), ...args], { cwd: ROOT, env: childEnv, stdio: ['ignore', out, out] });
}

export async function stopProcess(child) {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

/** The SVC_METRICS_TOKEN every server a benchmark starts is given, so that heapMb can read its /metrics. */
const BENCH_METRICS_TOKEN = 'bench-metrics-token-0123456789';

/** V8 heap figures of the server, from its own /metrics. */
export async function heapMb(base) {
  const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` } })).text();
  const read = (name) => Number(new RegExp(`^${name} ([0-9.e+]+)`, 'm').exec(text)?.[1] ?? NaN) / 1e6;
  return { used: Math.round(read('nodejs_heap_size_used_bytes')), total: Math.round(read('nodejs_heap_size_total_bytes')) };
}

/** Resident set size of a process in MB, from /proc (Linux). */
export function rssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1]);
  return Math.round((kb / 1024) * 10) / 10;
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat (Linux; clock ticks of 1/100 s). */
export function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}


/**
 * Writes an SVC_PLANS_FILE into `dir`: the built-in catalog with every limit of every tier set
 * beyond what a benchmark creates. Quotas stay enforced (each create still counts and compares
 * under the workspace lock, as in production); only `free`'s small numbers are out of the way.
 */
export async function roomyPlansFile(dir) {
  const { BUILT_IN_PLANS } = await import('../dist/modules/plans/plans.js');
  const file = join(dir, 'plans.json');
  const roomy = (limits) => Object.fromEntries(Object.keys(limits).map((metric) => [metric, 1_000_000_000]));
  writeFileSync(file, JSON.stringify(BUILT_IN_PLANS.map((p) => ({ ...p, limits: roomy(p.limits) }))));
  return file;
}
