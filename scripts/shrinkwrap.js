#!/usr/bin/env node
// npm-shrinkwrap.json for the packed package: `npm pack` (and `npm publish`) run this as `prepack`,
// and `postpack` removes the file again. It is package-lock.json as it is: the production packages
// exactly as locked, and the development ones marked `dev`, which `npm ci --omit=dev` leaves out
// (npm ci refuses a lock that lacks a dependency package.json names, development ones included).
// A server installs from the unpacked tarball with `npm ci --omit=dev --ignore-scripts` and builds
// only better-sqlite3's addon (docs/production.md: "From a tarball"): the locked versions, not the
// registry's newest, and no build of the service (dist/ is in the tarball).
// Kept out of the checkout (.gitignore): at the root of a checkout a shrinkwrap would take the
// place of package-lock.json for `npm ci` and `npm install`.
//
//   node scripts/shrinkwrap.js            writes npm-shrinkwrap.json beside package.json
//   node scripts/shrinkwrap.js --remove   removes it
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const FILE = join(ROOT, 'npm-shrinkwrap.json');

if (process.argv[2] === '--remove') {
  rmSync(FILE, { force: true });
} else {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  if (!(lock.lockfileVersion >= 2) || !lock.packages?.['']) throw new Error('package-lock.json must be lockfileVersion 2 or 3 (npm 7 or later)');
  if (lock.version !== pkg.version) throw new Error(`package-lock.json is of version ${lock.version}, package.json of ${pkg.version}: run npm install`);
  writeFileSync(FILE, JSON.stringify(lock, null, 2) + '\n');
  const packages = Object.entries(lock.packages).filter(([path]) => path !== '');
  console.error(`npm-shrinkwrap.json: ${packages.filter(([, p]) => !p.dev).length} production packages (and ${packages.filter(([, p]) => p.dev).length} development ones, marked dev)`);
}
