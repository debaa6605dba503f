#!/usr/bin/env node
// `npm run bench:start`: what `svc serve` costs to start (issue 33).
//
//   Spawns the built `svc serve` on SQLite, polls GET /readyz until it answers 200, and reads the
//   process's CPU time (user + system, from /proc) and resident memory at that moment. Twice per
//   round: on a fresh data dir (migrations, key generation) and again on the same, existing dir.
//   Budget: under 3 s of CPU for each start (the median of the rounds); wall time is reported.
//
// Options (environment): BENCH_ROUNDS (3).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuSeconds, ensureBuilt, freePort, RESULTS, rssMb, startProcess, stopProcess, waitUntilUp } from './processes.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BUDGET = { cpuSeconds: 3 };

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

async function startOnce(dataDir, log) {
  const port = await freePort();
  const started = performance.now();
  const child = startProcess(['bin/svc.js', 'serve'], { SVC_DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' }, log);
  try {
    await waitUntilUp(`http://127.0.0.1:${port}/readyz`, child, 120_000);
    const wall = (performance.now() - started) / 1000;
    return { wall_seconds: Math.round(wall * 100) / 100, cpu_seconds: cpuSeconds(child.pid), rss_mb: rssMb(child.pid) };
  } finally {
    await stopProcess(child);
  }
}

async function main() {
  ensureBuilt();
  mkdirSync(RESULTS, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-start-'));
  const fresh = [];
  const existing = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const dataDir = join(work, `data-${round}`);
      fresh.push(await startOnce(dataDir, join(work, 'server.log')));
      existing.push(await startOnce(dataDir, join(work, 'server.log')));
      console.log(`round ${round + 1}: fresh ${JSON.stringify(fresh.at(-1))}, existing ${JSON.stringify(existing.at(-1))}`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const summarize = (runs) => ({
    cpu_seconds: median(runs.map((r) => r.cpu_seconds)),
    wall_seconds: median(runs.map((r) => r.wall_seconds)),
    rss_mb: median(runs.map((r) => r.rss_mb)),
    runs,
  });
  const result = {
    benchmark: 'start: spawn of `svc serve` (SQLite) to GET /readyz 200',
    date: new Date().toISOString(),
    node: process.version,
    rounds: ROUNDS,
    budget: BUDGET,
    fresh_data_dir: summarize(fresh),
    existing_data_dir: summarize(existing),
  };
  writeFileSync(join(RESULTS, 'start.json'), JSON.stringify(result, null, 2) + '\n');
  const ok = result.fresh_data_dir.cpu_seconds < BUDGET.cpuSeconds && result.existing_data_dir.cpu_seconds < BUDGET.cpuSeconds;
  for (const [name, s] of [['fresh data dir', result.fresh_data_dir], ['existing data dir', result.existing_data_dir]]) {
    console.log(`${name}: ${s.cpu_seconds} s CPU (budget < ${BUDGET.cpuSeconds} s), ${s.wall_seconds} s wall, ${s.rss_mb} MB resident at /readyz`);
  }
  console.log(ok ? 'start: within budget' : 'start: OVER BUDGET');
  process.exitCode = ok ? 0 : 1;
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
