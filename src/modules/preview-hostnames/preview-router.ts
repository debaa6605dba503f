// The built-in preview router: a plain node:http server on its own port (SVC_PREVIEW_PORT) that
// answers by Host header for every install URL and active preview hostname, naming the install
// and render it serves, so `curl -H 'Host: <hostname>' http://127.0.0.1:8081/` works with the
// local cluster driver. A stand-in for the gateway of a real cluster: it proxies nothing.
// Anything else (unknown, evicted, released, or an install being deleted) is 404 in the API's one
// error shape. One indexed lookup per request: the label form tells the two kinds apart.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { limitConnections, nodeServerLimits } from '../../platform/httpServer.js';
import { newReadEpoch, type Executor } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { randomString } from '../../platform/crypto.js';
import { ApiError, errorBody } from '../../platform/errors.js';
import * as repo from './preview-hostnames.repo.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** an id body (26 characters) after `--` ends a preview label; after a single `-`, an install URL's */
const PREVIEW_LABEL = /--[0-9a-hjkmnp-tv-z]{26}$/;
/** last_seen_at is written at most this often per hostname */
const SEEN_RESOLUTION_SECONDS = 60;

export interface PreviewAnswer {
  hostname: string;
  kind: 'install_url' | 'preview_hostname';
  install_id: string;
  render_id: string;
  package_version_id: string;
  semver: string;
  route_key?: string;
  protocol?: string;
  preview_hostname_id?: string;
  binding_kind?: string;
  track?: string;
}

/** The Host header's name: lowercase, without the port or a trailing dot; null when absent or malformed. */
export function hostOf(header: string | undefined): string | null {
  if (!header || header.length > 300) return null;
  const name = header.trim().toLowerCase().replace(/:\d{1,5}$/, '').replace(/\.$/, '');
  return /^[a-z0-9.-]+$/.test(name) ? name : null;
}

/** What the router serves at `hostname`, or null. */
export async function resolvePreviewHost(
  db: Executor,
  hostname: string,
  now: number,
  onSeenError: (err: unknown) => void = () => {},
): Promise<PreviewAnswer | null> {
  const label = hostname.slice(0, hostname.indexOf('.') === -1 ? hostname.length : hostname.indexOf('.'));
  if (PREVIEW_LABEL.test(label)) {
    const row = await repo.findServedPreview(db, hostname);
    if (!row) return null;
    // Bookkeeping: a failed write must not deny the answer.
    if (row.last_seen_at <= now - SEEN_RESOLUTION_SECONDS) await repo.touchLastSeen(db, row.id, now).catch(onSeenError);
    return {
      hostname, kind: 'preview_hostname', install_id: row.install_id, render_id: row.render_id, package_version_id: row.package_version_id,
      semver: row.semver, preview_hostname_id: row.id, binding_kind: row.binding_kind, track: row.track,
    };
  }
  const row = await repo.findServedInstallUrl(db, hostname);
  if (!row) return null;
  return {
    hostname, kind: 'install_url', install_id: row.install_id, render_id: row.render_id, package_version_id: row.package_version_id,
    semver: row.semver, route_key: row.route_key, protocol: row.protocol,
  };
}

export interface PreviewRouter {
  /** Listens; resolves with the base URL (port 0 takes any free port). */
  listen(port: number, host: string): Promise<string>;
  /** Stops accepting, ends idle keep-alive connections, waits for in-flight requests. */
  close(): Promise<void>;
  readonly server: Server;
}

/** `limits`: config.http, the same limits as the API server (slowloris, idle sockets, connection floods). */
export function createPreviewRouter(deps: { db: Executor; domain: string; logger?: Logger; limits: Config['http'] }): PreviewRouter {
  const { db, domain, logger, limits } = deps;
  const suffix = `.${domain}`;
  let counter = 0;
  const prefix = `prv_${randomString(12)}`;

  function send(res: ServerResponse, head: boolean, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', ...headers });
    res.end(head ? undefined : text);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    newReadEpoch();
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : `${prefix}${(++counter).toString(36)}`;
    const head = req.method === 'HEAD';
    const host = hostOf(req.headers.host);
    let answer: PreviewAnswer | null = null;
    try {
      if (host !== null && host.endsWith(suffix)) {
        answer = await resolvePreviewHost(db, host, clock.now(), (err) => logger?.warn({ err, host }, 'recording last_seen_at failed'));
      }
    } catch (err) {
      logger?.error({ err, host, request_id: requestId }, 'preview router lookup failed');
      const unavailable = new ApiError('UNAVAILABLE', 'the preview router cannot read its routes right now; retry', {
        reason: 'ROUTES_UNAVAILABLE',
      });
      send(res, head, 503, errorBody(unavailable, requestId), { 'x-request-id': requestId, 'retry-after': '1' });
      return;
    }
    if (!answer) {
      const missing = new ApiError('NOT_FOUND', `nothing is served at host ${host ?? '(none)'}`, { reason: 'HOST_NOT_FOUND' });
      send(res, head, 404, errorBody(missing, requestId), { 'x-request-id': requestId });
      return;
    }
    send(res, head, 200, answer, {
      'x-request-id': requestId, 'x-svc-install-id': answer.install_id, 'x-svc-render-id': answer.render_id,
    });
  }

  const server = createServer(nodeServerLimits(limits), (req, res) => {
    // The body (if any) is not read; drain it so keep-alive connections stay usable.
    req.resume();
    // handle() answers every outcome itself; what is left is a broken socket.
    handle(req, res).catch((err) => {
      logger?.warn({ err }, 'preview router could not answer');
      res.destroy();
    });
  });
  limitConnections(server, limits);

  return {
    server,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address() as AddressInfo;
          const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
          resolve(`http://${shown}:${address.port}`);
        });
      }),
    close: () =>
      new Promise((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
