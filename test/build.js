// Keeps the builds the tests run fresh: dist/ (spawned `svc` processes run it, see
// test/processes.ts) and the web app dist/app (the journeys under test/web serve it). Each is
// rebuilt only when older than its sources, so a run after `npm ci` builds nothing.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { buildDist, compileOptions, filesUnder } from '../scripts/build.js';

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

/** Compiles src/ into dist/ (scripts/build.js) when dist/main.js is missing or older than src/. */
export async function ensureBuilt() {
  if (builtAt(join(ROOT, 'dist', 'main.js')) >= newestMtime(join(ROOT, 'src'))) return;
  console.log('building dist/ (scripts/build.js): src/ changed since the last build');
  await buildDist();
}

/** Builds the web app into dist/app when it is missing or older than web/ or the generated API types it uses. */
export async function ensureWebBuilt() {
  const sources = Math.max(newestMtime(join(ROOT, 'web')), newestMtime(join(ROOT, 'src/cli/generated/api.ts')));
  if (builtAt(join(ROOT, 'dist', 'app', 'index.html')) >= sources) return;
  console.log('building the web app (vite build): web/ changed since the last build');
  const { build } = await import('vite');
  await build({ configFile: join(ROOT, 'web/vite.config.ts'), logLevel: 'warn' });
}

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
const filesUnderRoot = (dir) => filesUnder(join(ROOT, dir)).map((file) => relative(ROOT, file));

/**
 * Compiles src/, test/ and scripts/ to JavaScript once per run, into .test-build/<pid>/ laid out
 * like the repository, so that each test file runs in plain node instead of loading every module
 * through tsx's loader: that loader cost about 3 s of CPU per test file, half of what a small file
 * costs. A folder per run, so that two runs of one checkout do not pull files from under each
 * other: the caller removes it at the end, and folders of runs no longer alive are removed here.
 * The build is dist/'s (compileOptions in scripts/build.js: our modules one file each, the packages
 * bundled into shared chunks), with inline source maps so that a failure names the .ts line; the
 * chunks are written without theirs.
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
  const files = compiled.flatMap((dir) => filesUnderRoot(dir));
  const typescript = files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  const result = await build({
    ...compileOptions({ entryPoints: typescript.map((f) => join(ROOT, f)), outdir: out, outbase: ROOT, sourcemap: 'inline' }),
    write: false,
  });
  // Write the outputs; the shared chunks (bundled packages) without their source maps, which node
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
