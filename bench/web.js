#!/usr/bin/env node
// `npm run bench:web`: the web app's first-load budget of issue 22 and the cost of serving it.
//
//   The JavaScript index.html loads at once (its entry and preloaded chunks), gzipped: budget
//   < 150 KB. Also reported: all JavaScript and CSS of the build, gzipped.
//   Against a running `svc serve` (SQLite): median latency of GET / (index.html, as every app path
//   gets it) and of GET of the entry script, over 200 sequential requests each.
import { readdirSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { ensureBuilt, freePort, RESULTS, ROOT, startProcess, stopProcess, waitUntilUp } from './processes.js';

const BUDGET = 150 * 1024;
const RUNS = 200;
const WEB = join(ROOT, 'dist', 'app');

ensureBuilt();
const html = readFileSync(join(WEB, 'index.html'), 'utf8');
const initial = [...html.matchAll(/<(?:script[^>]*\bsrc|link[^>]*rel="modulepreload"[^>]*\bhref)="([^"]+)"/g)].map((m) => m[1]).filter((r) => r.endsWith('.js'));
const gz = (file) => gzipSync(readFileSync(join(WEB, file))).length;
const assets = readdirSync(join(WEB, 'assets'));
const kb = (n) => Math.round((n / 1024) * 10) / 10;
const sizes = {
  initial_js_gzip_kb: kb(initial.reduce((n, f) => n + gz(f), 0)),
  all_js_gzip_kb: kb(assets.filter((a) => a.endsWith('.js')).reduce((n, a) => n + gz(`assets/${a}`), 0)),
  css_gzip_kb: kb(assets.filter((a) => a.endsWith('.css')).reduce((n, a) => n + gz(`assets/${a}`), 0)),
};

async function median(url) {
  const samples = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    const res = await fetch(url);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return Math.round(samples[Math.floor(samples.length / 2)] * 100) / 100;
}

const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-web-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const server = startProcess(['bin/svc.js', 'serve'], { SVC_DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', SVC_PUBLIC_URL: base, LOG_LEVEL: 'warn' }, join(dataDir, 'serve.log'));
let latency;
try {
  await waitUntilUp(`${base}/readyz`, server);
  latency = { index_html_median_ms: await median(`${base}/clusters/clu_01kaxq3m7y0c9v8t6r5p4n3m2k`), entry_js_median_ms: await median(`${base}${initial[0]}`) };
} finally {
  await stopProcess(server);
  rmSync(dataDir, { recursive: true, force: true });
}

const result = { at: new Date().toISOString(), budget_initial_js_gzip_kb: BUDGET / 1024, ...sizes, ...latency, pass: sizes.initial_js_gzip_kb * 1024 < BUDGET };
writeFileSync(join(RESULTS, 'web.json'), `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify(result, null, 2));
process.exit(result.pass ? 0 : 1);
