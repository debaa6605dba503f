#!/usr/bin/env node
// Runs every *.test.ts under test/, each file in a node process of its own, the longest files
// first, a few at a time; prints each file's report as it ends (with its wall and CPU time), then
// the totals. The files run compiled to JavaScript once per run (see compileTests in build.js).
//
// The database is SQLite, unless SVC_TEST_DATABASE_URL names a PostgreSQL server whose user may
// create databases (each test file then gets a database of its own there). With
// SVC_TEST_POSTGRES_URL instead, the suite runs on both: every file on SQLite and on that server,
// all in one pool, so that neither core waits at the end of one pass for the next to start (CI).
// The files that use no database at all (see usesDatabase) run once, in a pass of their own,
// whatever the dialects: on a second dialect they would do exactly the same.
//
// With --checks, the static checks of `npm test` (the two type-checks and the layer check) run in
// the same pool, first: each is one single-threaded process, and beside the test files they keep
// the second core busy instead of holding the suite back.
//
// Before the first file: dist/ is built when older than src/ (spawned `svc` processes run the
// build, see test/processes.ts), the web app when a selected file needs it and it is stale, the
// migrated template databases are made (see test/templates.js), so each test file copies a
// migrated database instead of migrating its own, src/ and test/ are compiled to .test-build/, and
// when a selected file drives a browser, the run's one Chromium is started (test/chromium.ts).
//
// Usage: node test/run.js [--checks] [substring...]   (only the files whose path contains a substring)
// SVC_TEST_CONCURRENCY: processes at once (default 4: on 2 cores part of a file's time is spent
// waiting on spawned processes, the database and the browser; CI took the same time with 3, the
// cores being busy either way).
// SVC_TEST_BATCH: 0 runs every file in a process of its own; by default the files that share nothing
// with the process they run in (see batchable) run a few to a process, which saves each of them
// the second or so of CPU a node process spends loading our modules before its first test.
// SVC_TEST_FILE_TIMEOUT_S: a file still running after this many seconds (default 900, some three
// times the longest file on a busy CI machine) is killed and counted as failed, so that a hang
// fails the run with the file's output so far instead of stalling it.
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

const args = process.argv.slice(2);
const withChecks = args.includes('--checks');
const filter = args.filter((a) => a !== '--checks');
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
if (process.env.SVC_TEST_DATABASE_URL && process.env.SVC_TEST_POSTGRES_URL) {
  console.error('set SVC_TEST_DATABASE_URL (PostgreSQL only) or SVC_TEST_POSTGRES_URL (SQLite and PostgreSQL), not both');
  process.exit(2);
}
/** The passes: each dialect with the server its files create their databases on (null: SQLite). */
const dialects = process.env.SVC_TEST_DATABASE_URL
  ? [{ name: 'postgres', url: process.env.SVC_TEST_DATABASE_URL }]
  : [{ name: 'sqlite', url: null }, ...(process.env.SVC_TEST_POSTGRES_URL ? [{ name: 'postgres', url: process.env.SVC_TEST_POSTGRES_URL }] : [])];
const concurrency = Math.max(1, Number(process.env.SVC_TEST_CONCURRENCY) || 4);
const fileTimeoutMs = Math.max(1, Number(process.env.SVC_TEST_FILE_TIMEOUT_S) || 900) * 1000;
const started = Date.now();
/** CPU seconds of the children reaped so far, at the last reap: each job's CPU is the difference. */
let lastCpu = 0;

/** CPU seconds (user + system) of every child process reaped so far, theirs included (Linux /proc). */
function childCpuSeconds() {
  try {
    const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(f[13]) + Number(f[14])) / 100;
  } catch {
    return 0;
  }
}

await ensureBuilt();
// The journeys and the bundle checks under test/web read dist/app; the unit tests beside them do not.
if (files.some((f) => /startWeb\(|ensureBuilt\(|dist\/app/.test(readFileSync(join(ROOT, f), 'utf8')))) await ensureWebBuilt();
for (const d of dialects) d.env = await prepareTemplates(d.url ?? undefined);
const testBuild = await compileTests();
process.on('exit', () => rmSync(testBuild, { recursive: true, force: true }));
// One Chromium for every browser test of the run (see test/chromium.ts), when a selected file drives one.
let sharedBrowser = null;
if (files.some((f) => /startWeb\(|startChromiumApp\(/.test(readFileSync(join(ROOT, f), 'utf8')))) {
  const { chromiumMissing, launchSharedBrowser, SHARED_BROWSER_ENV } = await import(join(testBuild, 'test/chromium.js'));
  if (!chromiumMissing) {
    sharedBrowser = await launchSharedBrowser();
    process.env[SHARED_BROWSER_ENV] = sharedBrowser.wsEndpoint;
  }
}
// the builds above were children too: each job's CPU counts from here
lastCpu = childCpuSeconds();

const COUNTS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'];
/** The pass of the files that use no database (see usesDatabase): no database URL, no template. */
const NO_DATABASE = { name: 'no database', url: null, env: { SVC_TEST_NO_DATABASE: '1' } };
const passes = [...dialects, NO_DATABASE];
const totals = Object.fromEntries(passes.map((d) => [d.name, Object.fromEntries(COUNTS.map((k) => [k, 0]))]));
const failed = [];
/** What each failed file printed about its failure, repeated at the end of the run: a CI log that keeps only its tail still says why. */
const failures = [];
/** A failed file's own summary of its failing tests (the spec reporter's closing section), or the end of its output when it died without one; bounded. */
function failureExcerpt(out) {
  const at = out.lastIndexOf('✖ failing tests:');
  const text = at >= 0 ? out.slice(at) : out.slice(-3000);
  return text.length > 6000 ? `${text.slice(0, 6000)}\n… (cut; the whole output is above)` : text;
}
/** per dialect: files that failed without a failing test (a crash, a signal), each counted as one failure */
const crashed = Object.fromEntries(passes.map((d) => [d.name, 0]));

/** Records a file's time at once (merged with the other files' from earlier runs, sorted for small diffs): an interrupted run keeps what it measured. */
function recordDuration(file, ms) {
  const all = { ...readJson(DURATIONS), [file]: ms };
  writeFileSync(DURATIONS, `${JSON.stringify(Object.fromEntries(Object.keys(all).sort().map((k) => [k, all[k]])), null, 1)}\n`);
}

/**
 * How node runs a test file: compiled (see compileTests), or through tsx for the few unit tests of
 * the web app's own modules (web/src, JSX and bundler-style imports that only Vite resolves).
 */
function runnerArgs(file) {
  if (/from '[./]*web\/src\//.test(readFileSync(join(ROOT, file), 'utf8'))) return ['--import', 'tsx', file];
  return ['--enable-source-maps', join(testBuild, file.replace(/\.ts$/, '.js'))];
}

/**
 * Runs a command to its end (or kills it after `timeoutMs`), its output kept; resolves with its
 * exit, signal, output, wall ms and CPU seconds.
 */
function run(command, argv, env, timeoutMs = Infinity) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(command, argv, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = Number.isFinite(timeoutMs)
      ? setTimeout(() => {
        out += `\n✖ still running after ${timeoutMs / 1000} s (SVC_TEST_FILE_TIMEOUT_S): killed\n`;
        child.kill('SIGKILL');
      }, timeoutMs)
      : null;
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      const cpu = childCpuSeconds();
      const used = cpu - lastCpu;
      lastCpu = cpu;
      resolve({ code, signal, out, ms: Date.now() - t0, cpu: used });
    });
  });
}

/**
 * Whether a file can share its node process with others: it spawns nothing, changes no process-wide
 * setting (the environment, the working directory, mocked timers), drives no browser, runs under
 * tsx for nothing, and has no hooks outside its describe blocks (they would run around the other
 * files too). Each file still gets its own database and app; what a file leaves behind that others
 * could see (the clock's offset) its own afterEach resets. A file that needs a process of its own
 * for another reason says so with a comment `svc-test: own process` and why.
 */
const SHARES_NOTHING_NOT = /svc-test: own process|runSvc|startSvc|spawn|process\.env(\.\w+|\[[^\]]+\])\s*=[^=]|delete process\.env|startWeb|startChromiumApp|from '[./]*web\/src\/|mock\.timers|process\.exit|process\.chdir|^(after|before|afterEach|beforeEach)\(/m;
const batching = process.env.SVC_TEST_BATCH !== '0';

/**
 * Whether a file uses a database: it names one of the ways a test makes one (test/harness.ts,
 * test/processes.ts) or reads the dialect. A file that does not runs once, in a pass of its own
 * without a database (NO_DATABASE): run again on PostgreSQL it would do exactly the same. The pass
 * sets SVC_TEST_NO_DATABASE, under which createTestDatabase throws, so a file that makes one
 * anyway (through a helper this pattern does not see) fails instead of running on one dialect.
 */
const USES_DATABASE = /createTestDatabase|startTestApp|TestApp|startWeb|startChromiumApp|startSvc|dbEnv|databasesDroppedAfter|openDatabase|migrateToLatest|createSystem|buildApp|cli-session|SVC_TEST_DATABASE_URL|DIALECT/;
function usesDatabase(file) {
  return USES_DATABASE.test(readFileSync(join(ROOT, file), 'utf8'));
}
function batchable(file) {
  return batching && !SHARES_NOTHING_NOT.test(readFileSync(join(ROOT, file), 'utf8'));
}

/**
 * The batchable files in groups of about BATCH_MS of their last wall time (at most BATCH_FILES
 * each), longest first: first fit, so a group fills up with shorter files.
 */
const BATCH_MS = 60_000;
const BATCH_FILES = 16;
function batchesOf(list) {
  const groups = [];
  for (const f of list) {
    const g = groups.find((x) => x.ms + expected(f) <= BATCH_MS && x.files.length < BATCH_FILES);
    if (g) {
      g.files.push(f);
      g.ms += expected(f);
    } else groups.push({ files: [f], ms: expected(f) });
  }
  return groups.map((g) => g.files);
}

/** The static checks of `npm test`, each one process. */
const CHECKS = [
  { name: 'typecheck (tsconfig.json)', argv: [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json', '--noEmit'] },
  { name: 'typecheck (web/tsconfig.json)', argv: [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'web/tsconfig.json', '--noEmit'] },
  { name: 'layer check', argv: [join(ROOT, 'scripts/check-layers.js')] },
];

async function runCheck(check) {
  const r = await run(process.execPath, check.argv, process.env);
  const ok = r.code === 0;
  if (!ok) {
    failed.push(`${check.name} (${r.signal ?? `exit ${r.code}`})`);
    failures.push(`▶ ${check.name}\n${r.out.slice(-6000)}`);
  }
  process.stdout.write(`\n▶ ${check.name} (${(r.ms / 1000).toFixed(1)} s, ${r.cpu.toFixed(1)} s CPU)${ok ? '' : ' FAILED'}\n${r.out}`);
}

let batchCount = 0;
/** An entry module importing each file in turn: node's test runner collects the tests of all of them in one process. */
function batchEntry(batch) {
  const entry = join(testBuild, 'test', `.batch-${++batchCount}.js`);
  writeFileSync(entry, batch.map((f) => `import ${JSON.stringify(`./${relative(join(ROOT, 'test'), join(ROOT, f)).replace(/\.ts$/, '.js')}`)};\n`).join(''));
  return entry;
}

/**
 * Runs one file, or a batch of files sharing one process, on one dialect, with the spec reporter;
 * the output is printed when it ends. A batch's time is shared out among its files by their
 * expected times (for the next run's order and batches).
 */
async function runFile(file, dialect) {
  const batch = Array.isArray(file) ? file : [file];
  const env = { ...process.env, ...dialect.env, NODE_ENV: 'test' };
  delete env.SVC_TEST_POSTGRES_URL;
  delete env.SVC_TEST_DATABASE_URL;
  if (dialect.url) env.SVC_TEST_DATABASE_URL = dialect.url;
  const argv = batch.length > 1 ? ['--enable-source-maps', batchEntry(batch)] : runnerArgs(batch[0]);
  const r = await run(process.execPath, ['--test-reporter=spec', ...argv], env, fileTimeoutMs);
  const share = batch.reduce((sum, f) => sum + expected(f), 0) || 1;
  for (const f of batch) {
    durations[f] = batch.length > 1 ? Math.round((r.ms * expected(f)) / share) : r.ms;
    recordDuration(f, durations[f]);
  }
  file = batch.length > 1 ? `${batch.length} files: ${batch.join(', ')}` : batch[0];
  const counts = {};
  for (const m of r.out.matchAll(/^ℹ (\w+) (\d+)$/gm)) if (COUNTS.includes(m[1])) counts[m[1]] = Number(m[2]);
  for (const k of COUNTS) totals[dialect.name][k] += counts[k] ?? 0;
  const ok = r.code === 0 && counts.tests !== undefined;
  const label = dialects.length > 1 || dialect === NO_DATABASE ? `${file} [${dialect.name}]` : file;
  if (!ok) {
    failed.push(`${label} (${r.signal ?? `exit ${r.code}`})`);
    failures.push(`▶ ${label}\n${failureExcerpt(r.out)}`);
  }
  if (!ok && !counts.fail) crashed[dialect.name]++;
  process.stdout.write(`\n▶ ${label} (${(r.ms / 1000).toFixed(1)} s, ${r.cpu.toFixed(1)} s CPU)${ok ? '' : ' FAILED'}\n${r.out}`);
}

// The checks first (the type-check is the longest single process), then the files longest first,
// each file's dialects side by side.
// A batch counts as its files' summed time in the order. The files that use no database run once,
// whatever the dialects (see usesDatabase).
const byTime = (a, b) => {
  const ms = (j) => (Array.isArray(j) ? j.reduce((sum, f) => sum + expected(f), 0) : expected(j));
  return ms(b) - ms(a);
};
const jobsOf = (list) => [...list.filter((f) => !batchable(f)), ...batchesOf(list.filter(batchable))];
const dbJobs = jobsOf(files.filter(usesDatabase));
const onceJobs = jobsOf(files.filter((f) => !usesDatabase(f)));
const jobs = [...dbJobs.map((job) => ({ job, dialects })), ...onceJobs.map((job) => ({ job, dialects: [NO_DATABASE] }))]
  .sort((a, b) => byTime(a.job, b.job));
console.log(`running ${files.length} test files on ${dialects.map((d) => d.name).join(' and ')} (${dbJobs.length} processes per dialect, and ${onceJobs.length} for the ${files.length - files.filter(usesDatabase).length} files that use no database, run once)${withChecks ? ', with the type and layer checks' : ''}, ${concurrency} at a time`);
const queue = [
  ...(withChecks ? CHECKS.map((c) => () => runCheck(c)) : []),
  ...jobs.flatMap(({ job, dialects: ds }) => ds.map((d) => () => runFile(job, d))),
];
await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, async () => {
  while (queue.length) await queue.shift()();
}));

await sharedBrowser?.close();
const wall = ((Date.now() - started) / 1000).toFixed(0);
/** The passes that had files to run: each dialect with files that use a database, and the once-run pass. */
const ran = passes.filter((d) => (d === NO_DATABASE ? onceJobs.length : dbJobs.length) > 0);
const named = ran.length > 1;
for (const d of ran) {
  const t = totals[d.name];
  console.log(`\n${named ? `${d.name}${d === NO_DATABASE ? ' (the files that use none, run once)' : ''}:\n` : ''}${COUNTS.map((k) => `ℹ ${k} ${t[k]}`).join('\n')}`);
}
console.log(`ℹ files ${files.length}\nℹ duration_s ${wall}\nℹ cpu_s ${childCpuSeconds().toFixed(0)}`);
console.log(`longest files: ${files.slice().sort((a, b) => durations[b] - durations[a]).slice(0, 8).map((f) => `${f} ${(durations[f] / 1000).toFixed(0)} s`).join(', ')}`);
if (failures.length) console.log(`\nwhat failed, again (each file's whole output is above):\n\n${failures.join('\n\n')}`);
if (failed.length) console.log(`\nfailed:\n  ${failed.join('\n  ')}`);
// The plain closing line CI reads, per pass (a file that crashed before reporting counts as one failure).
for (const d of ran) {
  const t = totals[d.name];
  console.log(`${named ? `${d.name}: ` : ''}${t.pass} passed, ${t.fail + crashed[d.name]} failed, ${t.skipped} skipped`);
}
process.exit(failed.length || ran.length === 0 || ran.some((d) => totals[d.name].tests === 0) ? 1 : 0);
