#!/usr/bin/env node
// Runs every *.test.ts under test/, each file in a node process of its own, the longest files
// first, a few at a time; prints each file's report as it ends (with its wall and CPU time), then
// the totals. The files run compiled to JavaScript once per run (see compileTests in build.js). The database is SQLite unless SVC_TEST_DATABASE_URL names a PostgreSQL server whose user
// may create databases: each test file then gets a database of its own.
//
// Before the first file: dist/ is built when older than src/ (spawned `svc` processes run the
// build, see test/processes.ts), the web app when a selected file needs it and it is stale, and
// the migrated template databases are made (see test/templates.js), so each test file copies a
// migrated database instead of migrating its own, and src/ and test/ are compiled to .test-build/.
//
// Usage: node test/run.js [substring...]   (only the files whose path contains a substring)
// SVC_TEST_CONCURRENCY: files run at once (default 3: on 2 cores much of a file's time is spent
// waiting on spawned processes, the database and the browser).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { compileTests, ensureBuilt, ensureWebBuilt } from './build.js';
import { prepareTemplates } from './templates.js';

const ROOT = join(import.meta.dirname, '..');
/** Wall time (ms) of each file's last run here, for the order: written by every run (git-ignored). */
const DURATIONS = join(ROOT, 'test', '.durations.json');
/** The same from a whole run on the reference machine, committed, for a fresh clone's first run. */
const SEED = join(ROOT, 'test', 'durations-seed.json');

function find(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...find(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
}

const filter = process.argv.slice(2);
const durations = { ...readJson(SEED), ...readJson(DURATIONS) };
// Longest first, so the long files do not start last and leave a core idle at the end. A file
// never timed counts as the median file. Ties by name, for a stable order.
const known = Object.values(durations).sort((a, b) => a - b);
const median = known.length ? known[Math.floor(known.length / 2)] : 0;
const expected = (f) => durations[f] ?? median;
const files = find(join(ROOT, 'test'))
  .map((f) => relative(ROOT, f))
  .filter((f) => filter.length === 0 || filter.some((x) => f.includes(x)))
  .sort((a, b) => expected(b) - expected(a) || a.localeCompare(b));
const dialect = process.env.SVC_TEST_DATABASE_URL ? 'postgres' : 'sqlite';
const concurrency = Math.max(1, Number(process.env.SVC_TEST_CONCURRENCY) || 3);
const started = Date.now();
/** Each file's CPU seconds (its processes' and theirs), from the children's times of this process. */
const cpuOf = {};
let lastCpu = 0;

ensureBuilt();
// The journeys and the bundle checks under test/web read dist/app; the unit tests beside them do not.
if (files.some((f) => /startWeb\(|ensureBuilt\(|dist\/app/.test(readFileSync(join(ROOT, f), 'utf8')))) await ensureWebBuilt();
const templateEnv = await prepareTemplates(process.env.SVC_TEST_DATABASE_URL);
const testBuild = await compileTests();
process.on('exit', () => rmSync(testBuild, { recursive: true, force: true }));
// the builds above were children too: each file's CPU counts from here
lastCpu = childCpuSeconds();
console.log(`running ${files.length} test files on ${dialect}, ${concurrency} at a time`);

const COUNTS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'];
const totals = Object.fromEntries(COUNTS.map((k) => [k, 0]));
const failed = [];
let crashed = 0;

/** Records a file's time at once (merged with the other files' from earlier runs, sorted for small diffs): an interrupted run keeps what it measured. */
function recordDuration(file, ms) {
  const all = { ...readJson(DURATIONS), [file]: ms };
  writeFileSync(DURATIONS, `${JSON.stringify(Object.fromEntries(Object.keys(all).sort().map((k) => [k, all[k]])), null, 1)}\n`);
}

/** CPU seconds (user + system) of every child process reaped so far, theirs included (Linux /proc). */
function childCpuSeconds() {
  try {
    const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(f[13]) + Number(f[14])) / 100;
  } catch {
    return 0;
  }
}

/**
 * How node runs a test file: compiled (see compileTests), or through tsx for the few unit tests of
 * the web app's own modules (web/src, JSX and bundler-style imports that only Vite resolves).
 */
function runnerArgs(file) {
  if (/from '[./]*web\/src\//.test(readFileSync(join(ROOT, file), 'utf8'))) return ['--import', 'tsx', file];
  return ['--enable-source-maps', join(testBuild, file.replace(/\.ts$/, '.js'))];
}

/** Runs one file: its own node process with the spec reporter; its output is printed when it ends. */
function runFile(file) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, ['--test-reporter=spec', ...runnerArgs(file)], {
      cwd: ROOT,
      env: { ...process.env, ...templateEnv, NODE_ENV: 'test' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code, signal) => {
      const ms = Date.now() - t0;
      const cpu = childCpuSeconds();
      cpuOf[file] = cpu - lastCpu;
      lastCpu = cpu;
      durations[file] = ms;
      recordDuration(file, ms);
      const counts = {};
      for (const m of out.matchAll(/^ℹ (\w+) (\d+)$/gm)) if (COUNTS.includes(m[1])) counts[m[1]] = Number(m[2]);
      for (const k of COUNTS) totals[k] += counts[k] ?? 0;
      const ok = code === 0 && counts.tests !== undefined;
      if (!ok) failed.push(`${file} (${signal ?? `exit ${code}`})`);
      // a file that failed without a failing test (it crashed, or ended by a signal) counts as one
      if (!ok && !counts.fail) crashed++;
      process.stdout.write(`\n▶ ${file} (${(ms / 1000).toFixed(1)} s, ${cpuOf[file].toFixed(1)} s CPU)${ok ? '' : ' FAILED'}\n${out}`);
      resolve();
    });
  });
}

const queue = [...files];
await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
  while (queue.length) await runFile(queue.shift());
}));

const wall = ((Date.now() - started) / 1000).toFixed(0);
console.log(`\n${COUNTS.map((k) => `ℹ ${k} ${totals[k]}`).join('\n')}\nℹ files ${files.length}\nℹ duration_s ${wall}\nℹ cpu_s ${childCpuSeconds().toFixed(0)}`);
console.log(`longest files: ${files.slice().sort((a, b) => durations[b] - durations[a]).slice(0, 8).map((f) => `${f} ${(durations[f] / 1000).toFixed(0)} s`).join(', ')}`);
if (failed.length) console.log(`\nfailed:\n  ${failed.join('\n  ')}`);
// The plain closing line CI reads (a file that crashed before reporting counts as one failure).
console.log(`${totals.pass} passed, ${totals.fail + crashed} failed, ${totals.skipped} skipped`);
process.exit(failed.length || totals.tests === 0 ? 1 : 0);
