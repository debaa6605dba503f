#!/usr/bin/env node
// `npm run build` compiles src/ into dist/ with this script (then Vite builds the web app into
// dist/app). The type-check is not part of the build: `npm test` runs `tsc --noEmit` on everything.
//
// esbuild removes the types of each module (the transform tsx and the tests apply too); our own
// modules stay one file each, laid out as in src/, so what a module finds beside itself
// (import.meta.url: the sandbox's worker, package.json, the CLI's command tree) is where it was.
// Only the ES-module packages in VENDORED are bundled, into shared chunks under dist/vendor/: each
// comes as hundreds of small files (TypeBox alone is some 680), and reading them one by one was a
// third of what `svc serve` spent starting. Every other package (CommonJS, native, or loaded only
// on demand) stays an import that node resolves in node_modules.
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = join(import.meta.dirname, '..');

/** The ES-module packages that are bundled (see above): many small files each, imported at start. */
export const VENDORED = new Set(['typebox', 'kysely', 'jose']);

/** The package a bare import names (`typebox/value` -> typebox, `@scope/x/y` -> @scope/x), or null for a path or a builtin. */
function packageOf(specifier) {
  if (/^(\.|\/|node:)/.test(specifier)) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * The esbuild plugin that bundles only VENDORED: an import from our code stays an import (of the
 * compiled file beside it, or of the package), except of a vendored package, which esbuild bundles
 * with its own files (what it imports from other packages stays an import).
 */
export const vendorOnly = {
  name: 'vendor-only',
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      const fromPackage = args.importer.includes('/node_modules/');
      const pkg = packageOf(args.path);
      if (pkg === null) return fromPackage && !args.path.startsWith('node:') ? undefined : { path: args.path, external: true };
      return VENDORED.has(pkg) ? undefined : { path: args.path, external: true };
    });
  },
};

/** The esbuild options both builds share (dist/ here, the tests' compiled copy in test/build.js). */
export function compileOptions({ entryPoints, outdir, outbase, sourcemap }) {
  return {
    entryPoints,
    outdir,
    outbase,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap,
    bundle: true,
    splitting: true,
    chunkNames: 'vendor/[name]-[hash]',
    plugins: [vendorOnly],
    tsconfig: join(ROOT, 'tsconfig.json'),
    logLevel: 'warning',
  };
}

/** Every file under dir (recursively), as absolute paths. */
function filesUnder(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

/** Builds dist/ from src/ (dist/app, the web app's build, is left alone): the old output is removed first. */
export async function buildDist() {
  const { build } = await import('esbuild');
  const dist = join(ROOT, 'dist');
  mkdirSync(dist, { recursive: true });
  for (const name of readdirSync(dist)) if (name !== 'app') rmSync(join(dist, name), { recursive: true, force: true });
  const entryPoints = filesUnder(join(ROOT, 'src')).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.test.ts'));
  const result = await build(compileOptions({ entryPoints, outdir: dist, outbase: join(ROOT, 'src'), sourcemap: 'linked' }));
  if (result.errors.length) throw new Error('esbuild failed');
  return entryPoints.length;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const started = performance.now();
  const count = await buildDist();
  console.log(`built dist/ from src/ (${count} modules) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
