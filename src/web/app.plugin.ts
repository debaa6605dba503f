// Serves the web app (API.md 8.8) from its build directory (SVC_WEB_DIR, default dist/app):
// - `/assets/*`: the hashed files Vite writes, cached for a year as immutable (a new build has
//   new names); a missing one is the JSON 404 of any unknown path, never index.html;
// - every other GET or HEAD path that is not the API's (see app-paths.ts): index.html, revalidated
//   on each load (`no-cache`), so every `html_url` opens the app, which routes in the browser.
//   Other methods there stay the JSON 404 of an unknown route.
// index.html is read once, when the app is built: a rebuild of the web app needs a restart.
// Without an index.html (the server runs from source and `npm run build` was not run) those paths
// answer a short page saying so, with 503; the API is unaffected.
//
// The app is a client of /v1 at the root of the origin: a service mounted under a path prefix of
// SVC_PUBLIC_URL (basePath in cookie.session.ts) serves the API and /device there, but the app's
// asset URLs and routes assume `/`, so the app is not supported under a prefix yet.
//
// The preview router (install URLs and preview hostnames) is a server of its own on
// SVC_PREVIEW_PORT: nothing here sees its hosts.
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../platform/http.js';
import { isAppPath } from './app-paths.js';

/** Scripts, styles, images, fonts and calls from this origin only; no inline code; never framed. */
export const APP_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
  "connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const HTML_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': APP_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
};

/** Asset paths below /assets/: segments of safe characters not starting with a dot (no `..`, no dotfiles). */
const ASSET_FILE = /^(?:\/[A-Za-z0-9_-][A-Za-z0-9._-]*)+$/;

const NOT_BUILT = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>The web app is not built · svc</title>
</head>
<body>
<main>
<h1>The web app is not built</h1>
<p>This server found no <code>index.html</code> in its web app directory (<code>SVC_WEB_DIR</code>).
Run <code>npm run build</code> in the svc checkout, then restart the server.</p>
<p>The API under <code>/v1/</code> works as always.</p>
</main>
</body>
</html>
`;

interface IndexPage {
  html: Buffer;
  etag: string;
}

function readIndex(app: App, dir: string): IndexPage | null {
  let html: Buffer;
  try {
    html = readFileSync(join(dir, 'index.html'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') app.log.warn({ err, dir }, 'the web app\'s index.html cannot be read; app paths answer 503');
    return null;
  }
  return { html, etag: `"${createHash('sha256').update(html).digest('base64url').slice(0, 22)}"` };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

export async function webAppRoutes(app: App, opts: { dir: string }): Promise<void> {
  const index = readIndex(app, opts.dir);

  // Assets and index.html alike: the type a response declares is the type it is.
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('x-content-type-options', 'nosniff');
    done();
  });

  const assets = join(opts.dir, 'assets');
  if (isDirectory(assets)) {
    await app.register(fastifyStatic, {
      root: assets,
      prefix: '/assets/',
      // One year, immutable: the file names carry a hash of their content.
      maxAge: 365 * 24 * 3600 * 1000,
      immutable: true,
      index: false,
      redirect: false,
      dotfiles: 'deny',
      decorateReply: false,
      preCompressed: false,
      // Decoded path below /assets; anything else (`..`, dotfiles, encoded slashes) is a 404.
      allowedPath: (pathname: string) => ASSET_FILE.test(pathname),
    });
  }

  function answer(request: FastifyRequest<{ Params: { '*': string } }>, reply: FastifyReply) {
    // The wildcard is the decoded path, so `/%76%31/x` is the API's `/v1/x` here as in the router.
    if (!isAppPath(`/${request.params['*'] ?? ''}`)) return reply.callNotFound();
    if (!index) return reply.code(503).headers(HTML_HEADERS).header('cache-control', 'no-store').send(NOT_BUILT);
    reply.headers(HTML_HEADERS).header('cache-control', 'no-cache').header('etag', index.etag);
    if (request.headers['if-none-match'] === index.etag) return reply.code(304).send();
    return reply.send(index.html);
  }

  // `/*` matches `/` too, and only where no other route does (find-my-way tries wildcards last).
  app.get('/*', { config: { auth: 'none' }, schema: { hide: true } }, answer);
}
