// Module hooks running the TypeScript sources in the test processes (registered by
// test/ts-loader.mjs): a relative `./x.js` import from a .ts file resolves to `./x.ts` when that
// exists (the NodeNext convention the sources use), and a .ts file is compiled by esbuild's
// transform (types stripped, nothing else changed), cached on disk by content.
//
// Why not `--import tsx`: tsx's hooks cost a test process ~0.6 s of CPU more for the ~1,200
// modules a test file loads (its resolver tries extensions and tsconfig paths for every import,
// of node_modules too, and it installs a CommonJS hook as well); these hooks do only what the
// sources need. Spawned children that need TypeScript (the sandbox's worker on the source) still
// register tsx themselves.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CACHE = join(tmpdir(), 'svc-test-ts-cache');
/** esbuild options (their text is part of the cache key) */
const OPTIONS = { loader: 'ts', format: 'esm', target: 'node20', sourcemap: 'inline' };
let esbuild = null;

export async function resolve(specifier, context, next) {
  if (specifier.endsWith('.js') && (specifier.startsWith('./') || specifier.startsWith('../')) && context.parentURL?.endsWith('.ts')) {
    const ts = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
    if (existsSync(fileURLToPath(ts))) return { url: ts.href, format: 'module', shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  const path = fileURLToPath(url);
  const source = readFileSync(path, 'utf8');
  esbuild ??= await import('esbuild');
  const key = createHash('sha256').update(`${esbuild.version}\0${JSON.stringify(OPTIONS)}\0${path}\0${source}`).digest('hex');
  const cached = join(CACHE, `${key}.js`);
  if (existsSync(cached)) return { format: 'module', source: readFileSync(cached, 'utf8'), shortCircuit: true };
  const { code } = esbuild.transformSync(source, { ...OPTIONS, sourcefile: path });
  mkdirSync(CACHE, { recursive: true });
  // Written aside and renamed: a test process running beside this one never reads half a file.
  const partial = `${cached}.${process.pid}.tmp`;
  writeFileSync(partial, code);
  renameSync(partial, cached);
  return { format: 'module', source: code, shortCircuit: true };
}
