// The hostnames of an install: its URLs (the install workflows publish them) and its preview
// hostnames (the preview-hostnames module binds them), which the preview router answers for, each
// one DNS label under the preview domain (so one wildcard record `*.<domain>` covers them all). Every label ends with the 26 characters of the
// install id, so hostnames of different installs never collide; the separator before them tells
// the kinds apart: an install URL is `<route_key>-<install>`, a preview hostname
// `<name>--<install>` (route keys never end in `-`, track labels never do either).
//   install URL        web-01jf8x3q6m2c4y7n0k5t9r1b3d.preview.localhost
//   floating track     feature-login--01jf8x3q6m2c4y7n0k5t9r1b3d.preview.localhost
//   pinned render      main-5t9r1b3dxyzw--01jf8x3q6m2c4y7n0k5t9r1b3d.preview.localhost
import { sha256Hex } from '../../platform/crypto.js';

/** The ULID part of a prefixed id (`inst_01jf...` -> `01jf...`): DNS labels cannot hold `_`. */
function idBody(id: string): string {
  return id.slice(id.indexOf('_') + 1);
}

/** A DNS label of at most 63 characters. */
const MAX_LABEL = 63;
/** room left for the name part of a preview label: 63 - `--` - 26 */
const PREVIEW_NAME_MAX = MAX_LABEL - 2 - 26;

/**
 * A track as a label part of at most `max` characters: lowercase, runs of other characters as one
 * `-`, trimmed. When that changed the track (or cut it), 6 hex characters of the track's hash are
 * appended, so `Feature/A` and `feature-a` still get different hostnames.
 */
export function trackLabel(track: string, max = PREVIEW_NAME_MAX): string {
  const slug = track.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
  if (slug === track && slug.length <= max && slug.length > 0) return slug;
  const hash = sha256Hex(track).slice(0, 6);
  const room = max - 7;
  const head = slug.slice(0, room).replace(/-+$/, '');
  return head ? `${head}-${hash}` : `t-${hash}`;
}

export function installUrlHostname(routeKey: string, installId: string, domain: string): string {
  return `${routeKey}-${idBody(installId)}.${domain}`;
}

export function floatingHostname(track: string, installId: string, domain: string): string {
  return `${trackLabel(track)}--${idBody(installId)}.${domain}`;
}

/** 12 characters of the render's random part identify it within the install. */
export function pinnedHostname(track: string, renderId: string, installId: string, domain: string): string {
  const render = idBody(renderId).slice(-12);
  return `${trackLabel(track, PREVIEW_NAME_MAX - 13)}-${render}--${idBody(installId)}.${domain}`;
}

/** The URL of a hostname served by the preview router: plain HTTP, with the port unless it is 80. */
export function previewUrl(hostname: string, port: number): string {
  return `http://${hostname}${port === 80 ? '' : `:${port}`}`;
}
