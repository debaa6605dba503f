#!/usr/bin/env node
// Where a V8 CPU profile's time went (the .cpuprofile files BENCH_CPU_PROF=1 writes, or any
// `node --cpu-prof` output): the top functions and files by self time and by total time (a
// function's own time plus that of everything it called, counted once per sample however often it
// recurs). Time outside JavaScript shows as (idle), (garbage collector) and native calls by name
// (writev, writeString...). Usage: node bench/profile-summary.js <file.cpuprofile> [top (40)]
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/profile-summary.js <file.cpuprofile> [top]');
  process.exit(2);
}
const TOP = Number(topArg ?? 40);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// Each sample's duration is the delta to the next one.
const selfById = new Map();
let total = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i + 1] ?? 0;
  selfById.set(profile.samples[i], (selfById.get(profile.samples[i]) ?? 0) + dt);
  total += dt;
}

const short = (url) => url.replace(/^file:\/\/.*?\/(dist|node_modules|src)\//, '$1/');
const fn = (n) => `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
const fileOf = (n) => {
  const url = short(n.callFrame.url);
  if (!url) return n.callFrame.functionName;
  const pkg = /^node_modules\/((@[^/]+\/)?[^/]+)/.exec(url);
  return pkg ? pkg[1] : url;
};
const add = (map, key, dt) => map.set(key, (map.get(key) ?? 0) + dt);
const self = { fn: new Map(), file: new Map() };
const all = { fn: new Map(), file: new Map() };
for (const [id, dt] of selfById) {
  const node = byId.get(id);
  add(self.fn, fn(node), dt);
  add(self.file, fileOf(node), dt);
  const seen = { fn: new Set(), file: new Set() };
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const n = byId.get(cur);
    for (const [kind, key] of [['fn', fn(n)], ['file', fileOf(n)]]) {
      if (seen[kind].has(key)) continue;
      seen[kind].add(key);
      add(all[kind], key, dt);
    }
  }
}
const print = (title, map, n) => {
  console.log(`\n== ${title} (of ${(total / 1000).toFixed(0)} ms sampled)`);
  for (const [key, t] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${((100 * t) / total).toFixed(1).padStart(5)} %  ${key}`);
};
print('self time by function', self.fn, TOP);
print('self time by file', self.file, 25);
print('total time by function', all.fn, TOP);
print('total time by file', all.file, 25);
