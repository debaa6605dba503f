#!/usr/bin/env node
// Runs every *.test.ts under test/ with node's test runner (TypeScript through tsx).
// The database is SQLite unless SVC_TEST_DATABASE_URL names a PostgreSQL server whose user may
// create databases: each test file then gets a database of its own.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function find(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...find(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const filter = process.argv.slice(2);
const files = find('test').filter((f) => filter.length === 0 || filter.some((x) => f.includes(x))).sort();
const dialect = process.env.SVC_TEST_DATABASE_URL ? 'postgres' : 'sqlite';
console.log(`running ${files.length} test files on ${dialect}`);
const res = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files], {
  stdio: 'inherit',
  env: { ...process.env, NODE_ENV: 'test' },
});
process.exit(res.status ?? 1);
