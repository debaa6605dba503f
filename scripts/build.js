#!/usr/bin/env node
// `npm run build` compiles src/ into dist/ with this script (then Vite builds the web app into
// dist/app). The type-check is not part of the build: `npm test` runs `tsc --noEmit` on everything.
//
// esbuild removes the types of each module (the transform tsx and the tests apply too); our own
// modules stay one file each, laid out as in src/, so what a module finds beside itself
// (import.meta.url: the sandbox's worker, package.json, the CLI's command tree) is where it was.
// The packages they import are bundled, into shared chunks under dist/vendor/ (or into the one
// module that uses them): node_modules holds some 1,700 files of the packages loaded at start, and
// finding, reading and compiling them one by one was more than half of what `svc serve`, each CLI
// command and each test file spent starting. CommonJS packages keep their semantics (esbuild wraps
// each module); the `require` they call for node's own modules is node's, made by a line at the top
// of every output file (REQUIRE_BANNER). The packages in EXTERNAL stay imports node resolves in
// node_modules, each for the reason given there.
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = join(import.meta.dirname, '..');

/** The packages that are not bundled, and why. */
export const EXTERNAL = new Set([
  // a native addon, found by its own loader beside its JavaScript
  'better-sqlite3',
  // pino runs its transports in worker threads started from its own files, by path
  'pino', 'thread-stream', 'pino-pretty', 'pino-abstract-transport', 'sonic-boom',
  // loads `cookie` (CommonJS) with import(): bundled, that import would find a chunk with only a
  // default export, where node gives the named exports it reads (parseCookie...)
  '@fastify/cookie',
  // the sandbox's QuickJS reads its WebAssembly file beside its module
  '@jitl/quickjs-wasmfile-release-sync', 'quickjs-emscripten-core',
  // large SDKs loaded only when their driver is configured: they cost nothing at start unbundled
  '@kubernetes/client-node', 'stripe', 'openai', '@anthropic-ai/sdk', 'nodemailer',
  // tracing's SDK and instrumentations (src/platform/otel.ts), loaded only when an OTLP endpoint is
  // configured: unbundled they cost nothing at start. @opentelemetry/api stays bundled (prom-client
  // loads it at start): its copies share one registration (a global symbol), so the instrumentations'
  // own copy sees the tracer provider ours registers
  '@opentelemetry/context-async-hooks', '@opentelemetry/core', '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources', '@opentelemetry/sdk-trace-base', '@opentelemetry/instrumentation-undici', '@fastify/otel',
  // optional, not installed (pg tries it inside a try)
  'pg-native',
  // build and test tooling, never imported by the service
  'esbuild', 'vite', 'typescript', 'tsx', 'playwright-core',
]);

/** Gives every output file node's `require` (esbuild's bundled CommonJS calls it for node's own modules). */
export const REQUIRE_BANNER = "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);";

/** The package a bare import names (`typebox/value` -> typebox, `@scope/x/y` -> @scope/x), or null for a path or a builtin. */
function packageOf(specifier) {
  if (/^(\.|\/|node:)/.test(specifier)) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * The esbuild plugin that decides what is bundled: an import from our code of our code stays an
 * import (of the compiled file beside it); a package is bundled with its own files unless it is in
 * EXTERNAL; node's own modules stay imports. A bundled package that loads another with import()
 * stops the build: esbuild turns a CommonJS module reached that way into a chunk whose only export
 * is `default`, where node would give its named exports, so the package must be judged and, most
 * likely, listed in EXTERNAL.
 */
const bundlePackages = {
  name: 'bundle-packages',
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      const fromPackage = args.importer.includes('/node_modules/');
      const pkg = packageOf(args.path);
      if (pkg === null) return fromPackage && !args.path.startsWith('node:') ? undefined : { path: args.path, external: true };
      if (EXTERNAL.has(pkg)) return { path: args.path, external: true };
      if (fromPackage && args.kind === 'dynamic-import') {
        return { errors: [{ text: `${args.importer} loads "${args.path}" with import(): add its package to EXTERNAL in scripts/build.js (see bundlePackages)` }] };
      }
      return undefined;
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
    plugins: [bundlePackages],
    banner: { js: REQUIRE_BANNER },
    tsconfig: join(ROOT, 'tsconfig.json'),
    logLevel: 'warning',
  };
}

/** Every file under dir (recursively), as absolute paths. */
export function filesUnder(dir) {
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
  await build(compileOptions({ entryPoints, outdir: dist, outbase: join(ROOT, 'src'), sourcemap: 'linked' }));
  return entryPoints.length;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const started = performance.now();
  const count = await buildDist();
  console.log(`built dist/ from src/ (${count} modules) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
