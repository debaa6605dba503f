// Keeps the builds the tests run fresh: dist/ (spawned `svc` processes run it, see
// test/processes.ts) and the web app dist/app (the journeys under test/web serve it). Each is
// rebuilt only when older than its sources, so a run after `npm ci` builds nothing.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');

/** The newest modification time of a file or of anything under a directory. */
export function newestMtime(path) {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  let newest = 0;
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)));
  return newest;
}

const builtAt = (file) => (existsSync(file) ? statSync(file).mtimeMs : 0);

/** Compiles src/ into dist/ (tsc -p tsconfig.build.json) when dist/main.js is missing or older than src/. */
export function ensureBuilt() {
  if (builtAt(join(ROOT, 'dist', 'main.js')) >= newestMtime(join(ROOT, 'src'))) return;
  console.log('building dist/ (tsc -p tsconfig.build.json): src/ changed since the last build');
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('tsc -p tsconfig.build.json failed');
}

/** Builds the web app into dist/app when it is missing or older than web/ or the generated API types it uses. */
export async function ensureWebBuilt() {
  const sources = Math.max(newestMtime(join(ROOT, 'web')), newestMtime(join(ROOT, 'src/cli/generated/api.ts')));
  if (builtAt(join(ROOT, 'dist', 'app', 'index.html')) >= sources) return;
  console.log('building the web app (vite build): web/ changed since the last build');
  const { build } = await import('vite');
  await build({ configFile: join(ROOT, 'web/vite.config.ts'), logLevel: 'warn' });
}

/** The ES-module packages compileTests bundles (see there): many small files each, imported by the app at start. */
const VENDORED = new Set(['typebox', 'kysely', 'jose']);

/** The package a bare import names (`typebox/value` -> typebox, `@scope/x/y` -> @scope/x), or null for a path or a builtin. */
function packageOf(specifier) {
  if (/^(\.|\/|node:)/.test(specifier)) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * The esbuild plugin of compileTests: an import from our code stays an import (of the compiled
 * file beside it, or of the package), except of a VENDORED package, which esbuild bundles with
 * what it imports itself (its own files; other packages stay imports).
 */
const vendorOnly = {
  name: 'vendor-only',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      const fromPackage = args.importer.includes('/node_modules/');
      const pkg = packageOf(args.path);
      if (pkg === null) return fromPackage && !args.path.startsWith('node:') ? undefined : { path: args.path, external: true };
      return VENDORED.has(pkg) ? undefined : { path: args.path, external: true };
    });
  },
};

/** Where compileTests puts the JavaScript the test files run as (git-ignored): a folder per run. */
const TEST_BUILDS = join(ROOT, '.test-build');

/** True while the process runs (a run's folder is removed when it ends, or by a later run). */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** Every file under dir (recursively), as paths relative to ROOT. */
function filesUnder(dir) {
  const out = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const p = join(dir, name);
    if (statSync(join(ROOT, p)).isDirectory()) out.push(...filesUnder(p));
    else out.push(p);
  }
  return out;
}

/**
 * Compiles src/, test/ and scripts/ to JavaScript once per run, into .test-build/<pid>/ laid out
 * like the repository, so that each test file runs in plain node instead of loading every module
 * through tsx's loader: that loader cost about 3 s of CPU per test file, half of what a small file
 * costs. A folder per run, so that two runs of one checkout do not pull files from under each
 * other: the caller removes it at the end, and folders of runs no longer alive are removed here.
 * The transform is esbuild's, the one tsx applies to each module (same tsconfig, TypeScript's types
 * removed), with inline source maps so that a failure names the .ts line. Our own modules stay one
 * file each, as in the repository (their import.meta.url, their relative imports). The ES-module
 * packages in VENDORED, which come as hundreds of small files each (TypeBox alone is some 680),
 * are bundled into shared chunks instead: one copy of each, read as a few files, without source
 * maps. Loading their files one by one was about half of the second a test file spent importing
 * the app. Every other package (CommonJS, native, or imported by few files) is left to node.
 *
 * What the compiled code reads beside itself resolves as in the repository: every other top-level
 * entry (dist/, web/, node_modules/, package.json...) and every file under the compiled folders
 * (the .ts sources beside their .js) is a symlink to the original. Test helpers that need the
 * repository itself (to build, spawn or write screenshots) take it from test/paths.ts.
 */
export async function compileTests() {
  const { build } = await import('esbuild');
  mkdirSync(TEST_BUILDS, { recursive: true });
  for (const name of readdirSync(TEST_BUILDS)) {
    if (!/^\d+$/.test(name) || !alive(Number(name))) rmSync(join(TEST_BUILDS, name), { recursive: true, force: true });
  }
  const out = join(TEST_BUILDS, String(process.pid));
  mkdirSync(out);
  /** the folders with TypeScript that tests import (test/ itself, src/, scripts/) */
  const compiled = ['src', 'test', 'scripts'];
  const files = compiled.flatMap((dir) => filesUnder(dir));
  const typescript = files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  const entries = typescript.map((f) => join(ROOT, f));
  const result = await build({
    entryPoints: entries,
    outdir: out,
    outbase: ROOT,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    bundle: true,
    splitting: true,
    chunkNames: 'vendor/[name]-[hash]',
    plugins: [vendorOnly],
    tsconfig: join(ROOT, 'tsconfig.json'),
    logLevel: 'warning',
    write: false,
  });
  // Write the outputs; the shared chunks (vendored packages) without their source maps, which node
  // would otherwise decode at every load under --enable-source-maps.
  const entryOutputs = new Set(typescript.map((f) => join(out, f.replace(/\.ts$/, '.js'))));
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    const text = entryOutputs.has(file.path) ? file.contents : Buffer.from(file.text.replace(/\n\/\/# sourceMappingURL=data:[^\n]*\n?$/, '\n'));
    writeFileSync(file.path, text);
  }
  // every file, the TypeScript too (tests that read a source's text), beside the compiled .js
  for (const f of files) {
    mkdirSync(dirname(join(out, f)), { recursive: true });
    symlinkSync(join(ROOT, f), join(out, f));
  }
  for (const name of readdirSync(ROOT)) {
    if (![...compiled, '.git', '.test-build'].includes(name)) symlinkSync(join(ROOT, name), join(out, name));
  }
  return out;
}
