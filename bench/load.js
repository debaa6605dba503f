// HTTP load shared by the benchmarks: autocannon runs that also measure the server's CPU time
// per request (which other load on this shared machine disturbs less than req/s), and their
// summary as written to bench/results/.
import autocannon from 'autocannon';
import { cpuSeconds } from './processes.js';

/** Load settings from the environment, shared by the benchmarks (defaults: 3 rounds of 10 s after 5 s of warm-up, 64 connections). */
export const LOAD = {
  duration: Number(process.env.BENCH_DURATION ?? 10),
  rounds: Number(process.env.BENCH_ROUNDS ?? 3),
  warmup: Number(process.env.BENCH_WARMUP ?? 5),
  connections: Number(process.env.BENCH_CONNECTIONS ?? 64),
};

/** `extra`: more autocannon options (e.g. `{ method: 'POST' }`). */
export function load(url, headers, duration, connections, extra = {}) {
  return autocannon({ url, connections, duration, headers, pipelining: 1, ...extra });
}

export async function measure(url, headers, duration, connections, pid, extra = {}) {
  const cpuBefore = cpuSeconds(pid);
  const result = await load(url, headers, duration, connections, extra);
  const cpu = cpuSeconds(pid) - cpuBefore;
  result.serverCpuUsPerRequest = Math.round((cpu * 1e6) / Math.max(1, result.requests.total));
  result.serverCpuUtilization = Math.round((cpu / duration) * 100) / 100;
  return result;
}

export function summary(result) {
  return {
    requests_per_second: Math.round(result.requests.average),
    latency_ms: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max, average: result.latency.average },
    total_requests: result.requests.total,
    server_cpu_us_per_request: result.serverCpuUsPerRequest,
    server_cpu_cores_used: result.serverCpuUtilization,
    non_2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

/** One line of a result: req/s, latency and the server's CPU per request. */
export function row(name, r) {
  console.log(
    `${name.padEnd(16)}${String(Math.round(r.requests.average)).padStart(7)} req/s   p50 ${r.latency.p50} ms   p99 ${r.latency.p99} ms   ` +
      `server CPU ${r.serverCpuUsPerRequest} us/request (${r.serverCpuUtilization} cores)`,
  );
}

/** A budget line: PASS/FAIL, name, value, budget. */
export function checkLine(name, c) {
  console.log(`${c.pass ? 'PASS' : 'FAIL'}  ${name.padEnd(34)} ${String(c.value).padStart(8)}  (budget ${c.budget})`);
}

/** The p-th percentile of an ascending array. */
export function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

export const round = (x, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
