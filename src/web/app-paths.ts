// Which URL paths belong to the web app (API.md 8.8): every path that is not the API's, nor a
// built asset, opens the app, so each `html_url` the API hands out (`/operations/{id}`,
// `/clusters/{id}`, later `/machines/{id}`, ...) needs no route of its own here.
//
// The API's paths: the versioned JSON API (`/v1/...`; any `/v<n>` is kept for later versions),
// the OAuth endpoints (`/oauth/...`, `/.well-known/...`), the server-rendered device approval
// pages (`/device`, `/device/...`), and the probes and metrics. An unknown path under them stays
// the JSON 404 it always was.
const API_PATH = /^\/(?:v\d+|oauth|\.well-known|device|healthz|readyz|metrics)(?:\/|$)/;
/** The built, hashed files (`dist/app/assets/`): a missing one is a 404, never index.html. */
const ASSET_PATH = /^\/assets(?:\/|$)/;

/** True for a path (no query string) that the web app answers with index.html. */
export function isAppPath(path: string): boolean {
  return !API_PATH.test(path) && !ASSET_PATH.test(path);
}

/**
 * A same-site path with an optional query: one leading `/` (so never `//host`, a scheme-relative
 * URL), only unreserved characters, `/`, `?`, `=`, `&` and percent-escapes (so no `\`, which
 * browsers read as `/`, and no `:` of a scheme), no `//` anywhere, at most 512 characters.
 */
const LOCAL_PATH = /^\/[A-Za-z0-9._~/?=&%-]{0,511}$/;

/**
 * `next` after the /device sign-in: a path of the web app to go to (a record page the person
 * opened while signed out, say), or undefined when the value is anything else, which is then
 * ignored. Never an open redirect: only paths of this service pass, and not the API's.
 */
export function nextAppPath(value: string | undefined): string | undefined {
  if (value === undefined || !LOCAL_PATH.test(value) || value.includes('//')) return undefined;
  const q = value.indexOf('?');
  return isAppPath(q === -1 ? value : value.slice(0, q)) ? value : undefined;
}

/**
 * `next` of a sign-in through the OpenID provider (/v1/auth/oidc/start): a path of the web app as
 * for nextAppPath, or the device approval page (`/device`, with its query: the code being
 * approved). Anything else is undefined, and the sign-in then ends on the web app's home.
 */
export function signInNextPath(value: string | undefined): string | undefined {
  if (value === undefined || !LOCAL_PATH.test(value) || value.includes('//')) return undefined;
  const q = value.indexOf('?');
  const path = q === -1 ? value : value.slice(0, q);
  return isAppPath(path) || path === '/device' ? value : undefined;
}
