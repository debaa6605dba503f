// Keeps the builds the tests run fresh: dist/ (spawned `svc` processes run it, see
// test/processes.ts) and the web app dist/app (the journeys under test/web serve it). Each is
// rebuilt only when older than its sources, so a run after `npm ci` builds nothing.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

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
