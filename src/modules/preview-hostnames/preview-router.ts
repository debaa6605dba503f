// The built-in preview router: a plain node:http server on its own port (SVC_PREVIEW_PORT) that
// answers by Host header for every install URL and active preview hostname.
// - An install on a kubernetes cluster: the request is proxied to its workload (preview-proxy.ts),
//   to the Service its route names: an install URL's route by its route_key; a preview hostname
//   (which has no route_key) the render's first route of the hostname's protocol, else the first
//   route (the same rule the driver's route objects follow).
// - An install on the local simulated cluster runs nothing: a browser (Accept: text/html) gets a
//   short page of what would run; other clients the JSON naming the install and render, so
//   `curl -H 'Host: <hostname>' http://127.0.0.1:8081/` works with the local cluster driver.
// Anything else (unknown, evicted, released, or an install being deleted) is 404 in the API's one
// error shape. One indexed lookup per request: the label form tells the two kinds apart.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Config, PreviewProxyConfig } from '../../config.js';
import { limitConnections, nodeServerLimits } from '../../platform/httpServer.js';
import { newReadEpoch, type Executor } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { randomString } from '../../platform/crypto.js';
import { ApiError, errorBody, type Reason } from '../../platform/errors.js';
import { installNamespace, type RouteSpec } from '../../drivers/cluster/driver.js';
import type { ClusterConnection } from '../clusters/clusters.service.js';
import { findRenderManifest, installNames } from '../installs/installs.service.js';
import { PAGE_CSP, errorPage, localInstallPage, wantsHtml } from './preview-pages.js';
import { clientPathOf, proxyRequest, proxyUpgrade, upstreamOf, writeRawResponse, type ProxyFailure, type Upstream } from './preview-proxy.js';
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

/** What the router serves, with where it runs (not part of the JSON answer). */
export interface ServedHost {
  answer: PreviewAnswer;
  clusterId: string;
  /** the install URL's route protocol, or the preview hostname's */
  protocol: string;
}

/** What the router serves at `hostname`, or null. */
export async function resolvePreviewHost(
  db: Executor,
  hostname: string,
  now: number,
  onSeenError: (err: unknown) => void = () => {},
): Promise<ServedHost | null> {
  const label = hostname.slice(0, hostname.indexOf('.') === -1 ? hostname.length : hostname.indexOf('.'));
  if (PREVIEW_LABEL.test(label)) {
    const row = await repo.findServedPreview(db, hostname);
    if (!row) return null;
    // Bookkeeping: a failed write must not deny the answer.
    if (row.last_seen_at <= now - SEEN_RESOLUTION_SECONDS) await repo.touchLastSeen(db, row.id, now).catch(onSeenError);
    const answer: PreviewAnswer = {
      hostname, kind: 'preview_hostname', install_id: row.install_id, render_id: row.render_id, package_version_id: row.package_version_id,
      semver: row.semver, preview_hostname_id: row.id, binding_kind: row.binding_kind, track: row.track,
    };
    return { answer, clusterId: row.cluster_id, protocol: row.protocol };
  }
  const row = await repo.findServedInstallUrl(db, hostname);
  if (!row) return null;
  const answer: PreviewAnswer = {
    hostname, kind: 'install_url', install_id: row.install_id, render_id: row.render_id, package_version_id: row.package_version_id,
    semver: row.semver, route_key: row.route_key, protocol: row.protocol,
  };
  return { answer, clusterId: row.cluster_id, protocol: row.protocol };
}

/** The route a host serves: an install URL's by its key; a preview hostname's the first of its protocol, else the first. */
export function routeOf(routes: RouteSpec[], answer: PreviewAnswer, protocol: string): RouteSpec | undefined {
  if (answer.kind === 'install_url') return routes.find((r) => r.route_key === answer.route_key);
  return routes.find((r) => (r.protocol ?? 'http') === protocol) ?? routes[0];
}

/** Renders are immutable: their parsed manifests are kept (a few hundred, the most recently used). */
const MANIFEST_CACHE_MAX = 256;

export interface PreviewRouter {
  /** Listens; resolves with the base URL (port 0 takes any free port). */
  listen(port: number, host: string): Promise<string>;
  /** Stops accepting, ends idle keep-alive connections, waits for in-flight requests. */
  close(): Promise<void>;
  readonly server: Server;
}

export interface PreviewRouterDeps {
  db: Executor;
  domain: string;
  logger?: Logger;
  /** config.http, the same limits as the API server (slowloris, idle sockets, connection floods) */
  limits: Config['http'];
  /** config.preview.proxy: timeouts, body limit, streams per install */
  proxy: PreviewProxyConfig;
  /** the clusters module's connection details of a cluster (decrypted kubeconfig, gateway address), cached briefly there */
  connectionOf(clusterId: string): Promise<ClusterConnection | null>;
  /** the web app's base URL, for links on the local cluster's page */
  publicUrl: string;
}

type Manifest = { routes: RouteSpec[]; resources: unknown[] };

export function createPreviewRouter(deps: PreviewRouterDeps): PreviewRouter {
  const { db, domain, logger, limits } = deps;
  const suffix = `.${domain}`;
  let counter = 0;
  const prefix = `prv_${randomString(12)}`;
  const manifests = new Map<string, Manifest>();
  /** proxied requests and WebSockets open per install */
  const streams = new Map<string, number>();

  async function manifestOf(renderId: string): Promise<Manifest> {
    const cached = manifests.get(renderId);
    if (cached) {
      manifests.delete(renderId);
      manifests.set(renderId, cached);
      return cached;
    }
    const text = await findRenderManifest(db, renderId);
    const parsed = text ? (JSON.parse(text) as Partial<Manifest>) : {};
    const manifest = { routes: Array.isArray(parsed.routes) ? parsed.routes : [], resources: Array.isArray(parsed.resources) ? parsed.resources : [] };
    if (manifests.size >= MANIFEST_CACHE_MAX) manifests.delete(manifests.keys().next().value!);
    manifests.set(renderId, manifest);
    return manifest;
  }

  function send(res: ServerResponse, head: boolean, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', ...headers });
    res.end(head ? undefined : text);
  }

  function sendPage(res: ServerResponse, head: boolean, status: number, html: string, headers: Record<string, string> = {}): void {
    res.writeHead(status, {
      'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html), 'cache-control': 'no-store',
      'content-security-policy': PAGE_CSP, 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', ...headers,
    });
    res.end(head ? undefined : html);
  }

  /** A refusal of the router itself: a page for a browser, the one error shape for anyone else. */
  function refuse(req: IncomingMessage, res: ServerResponse, err: ApiError, title: string, host: string, requestId: string, headers: Record<string, string> = {}): void {
    const head = req.method === 'HEAD';
    if (wantsHtml(req)) sendPage(res, head, err.status, errorPage(err.status, title, err.message, host, requestId), { 'x-request-id': requestId, ...headers });
    else send(res, head, err.status, errorBody(err, requestId), { 'x-request-id': requestId, ...headers });
  }

  /** The ApiError of a proxy failure: 502 bad gateway, 504 timeout, 413 too large, or what the API server's Status meant. */
  function failureError(f: ProxyFailure): { err: ApiError; title: string; headers: Record<string, string> } {
    const make = (status: number, reason: Reason, code: 'UNAVAILABLE' | 'INVALID_ARGUMENT' = 'UNAVAILABLE') => new ApiError(code, f.message, { reason, status });
    switch (f.kind) {
      case 'timeout': return { err: make(504, 'UPSTREAM_TIMEOUT'), title: 'Gateway Timeout', headers: {} };
      case 'too_large': return { err: make(413, 'BODY_TOO_LARGE', 'INVALID_ARGUMENT'), title: 'Content Too Large', headers: { connection: 'close' } };
      case 'upstream_status':
        return f.status === 503
          ? { err: make(503, 'UPSTREAM_UNREACHABLE'), title: 'Service Unavailable', headers: { 'retry-after': '5' } }
          : { err: make(502, 'UPSTREAM_UNREACHABLE'), title: 'Bad Gateway', headers: {} };
      default: return { err: make(502, 'UPSTREAM_UNREACHABLE'), title: 'Bad Gateway', headers: {} };
    }
  }

  type Target =
    | { kind: 'answered' }
    | { kind: 'proxy'; upstream: Upstream; installId: string; clientPath: string; served: ServedHost };

  /**
   * What serves the request: proxied upstream, or answered here (404, 503, the local cluster's
   * JSON or page, a 502 when there is nothing to proxy to). `answer(err...)` writes a refusal.
   */
  async function targetOf(
    req: IncomingMessage, host: string | null, requestId: string,
    reply: { refuse(err: ApiError, title: string, headers?: Record<string, string>): void; local(served: ServedHost): Promise<void> },
  ): Promise<Target> {
    let served: ServedHost | null = null;
    try {
      if (host !== null && host.endsWith(suffix)) {
        served = await resolvePreviewHost(db, host, clock.now(), (err) => logger?.warn({ err, host }, 'recording last_seen_at failed'));
      }
    } catch (err) {
      logger?.error({ err, host, request_id: requestId }, 'preview router lookup failed');
      const unavailable = new ApiError('UNAVAILABLE', 'the preview router cannot read its routes right now; retry', { reason: 'ROUTES_UNAVAILABLE' });
      reply.refuse(unavailable, 'Service Unavailable', { 'retry-after': '1' });
      return { kind: 'answered' };
    }
    if (!served) {
      reply.refuse(new ApiError('NOT_FOUND', `nothing is served at host ${host ?? '(none)'}`, { reason: 'HOST_NOT_FOUND' }), 'Not Found');
      return { kind: 'answered' };
    }
    let conn: ClusterConnection | null;
    try {
      conn = await deps.connectionOf(served.clusterId);
    } catch (err) {
      // The message names no secret (clusters.service connectionOf); the error itself is not logged whole.
      const message = err instanceof Error ? err.message : 'the cluster cannot be reached';
      logger?.warn({ host, request_id: requestId, cluster_id: served.clusterId, reason: message }, 'preview router: no connection to the cluster');
      reply.refuse(new ApiError('UNAVAILABLE', `the install's cluster cannot be reached: ${message}`, { reason: 'CLUSTER_UNREACHABLE', status: 502 }), 'Bad Gateway');
      return { kind: 'answered' };
    }
    if (!conn) {
      reply.refuse(new ApiError('NOT_FOUND', `nothing is served at host ${host}`, { reason: 'HOST_NOT_FOUND' }), 'Not Found');
      return { kind: 'answered' };
    }
    if (conn.provider !== 'kubernetes') {
      await reply.local(served);
      return { kind: 'answered' };
    }
    const manifest = await manifestOf(served.answer.render_id);
    const route = routeOf(manifest.routes, served.answer, served.protocol);
    if (!route?.service) {
      const which = route ? `route ${route.route_key}` : 'the render';
      reply.refuse(new ApiError('UNAVAILABLE', `${which} of this install names no Service to send traffic to (the package manifest's routes[].service)`, {
        reason: 'ROUTE_HAS_NO_SERVICE', status: 502,
      }), 'Bad Gateway');
      return { kind: 'answered' };
    }
    const clientPath = clientPathOf(req.url);
    if (clientPath === null) {
      reply.refuse(new ApiError('INVALID_ARGUMENT', 'the request target is not a path the router forwards (no . or .. segments, no encoded slashes)', { reason: 'BAD_URL' }), 'Bad Request');
      return { kind: 'answered' };
    }
    const upstream = upstreamOf(conn, installNamespace(served.answer.install_id), route.service, req.headers.host ?? host!, deps.proxy.allowPrivateGateways);
    return { kind: 'proxy', upstream, installId: served.answer.install_id, clientPath, served };
  }

  /** Takes one of the install's streams, or says it cannot. */
  function takeStream(installId: string): (() => void) | null {
    const open = streams.get(installId) ?? 0;
    if (open >= deps.proxy.streamsPerInstall) return null;
    streams.set(installId, open + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (streams.get(installId) ?? 1) - 1;
      if (left <= 0) streams.delete(installId);
      else streams.set(installId, left);
    };
  }

  const tooManyStreams = (installId: string) =>
    new ApiError('UNAVAILABLE', `install ${installId} has ${deps.proxy.streamsPerInstall} requests open through this router already (SVC_PREVIEW_PROXY_STREAMS_PER_INSTALL); retry`, {
      reason: 'TOO_MANY_STREAMS',
    });

  function requestIdOf(req: IncomingMessage): string {
    const incoming = req.headers['x-request-id'];
    return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : `${prefix}${(++counter).toString(36)}`;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    newReadEpoch();
    const requestId = requestIdOf(req);
    const head = req.method === 'HEAD';
    const host = hostOf(req.headers.host);
    const answered = (headers: Record<string, string> = {}) => ({ 'x-request-id': requestId, ...headers });
    const target = await targetOf(req, host, requestId, {
      refuse: (err, title, headers) => {
        req.resume();
        refuse(req, res, err, title, host ?? '(none)', requestId, headers);
      },
      local: async ({ answer }) => {
        // The body (if any) is not read; drain it so keep-alive connections stay usable.
        req.resume();
        const headers = answered({ 'x-svc-install-id': answer.install_id, 'x-svc-render-id': answer.render_id });
        if (!wantsHtml(req)) return send(res, head, 200, answer, headers);
        const [manifest, names] = await Promise.all([manifestOf(answer.render_id), installNames(db, answer.install_id)]);
        sendPage(res, head, 200, localInstallPage({
          hostname: answer.hostname, packageName: names?.package_name ?? '(deleted package)', semver: answer.semver, installId: answer.install_id,
          renderId: answer.render_id, clusterName: names?.cluster_name ?? '(unknown)', resources: manifest.resources,
          installUrl: `${deps.publicUrl}/installs/${answer.install_id}`,
        }), headers);
      },
    });
    if (target.kind !== 'proxy') return;
    const release = takeStream(target.installId);
    if (!release) {
      req.resume();
      refuse(req, res, tooManyStreams(target.installId), 'Service Unavailable', host!, requestId, { 'retry-after': '1' });
      return;
    }
    res.setHeader('x-request-id', requestId);
    proxyRequest(req, res, target.upstream, target.clientPath, deps.proxy, {
      fail: (f) => {
        const { err, title, headers } = failureError(f);
        if (f.kind !== 'too_large') logger?.info({ host, request_id: requestId, via: target.upstream.via, status: err.status, reason: f.message }, 'preview router: upstream failed');
        else {
          // The rest of the body is read into nothing for a moment (so the client reads the 413
          // rather than a reset), then the connection is closed whatever the client still sends.
          res.once('finish', () => {
            req.resume();
            setTimeout(() => req.socket.destroy(), 1_000).unref();
          });
        }
        refuse(req, res, err, title, host!, requestId, headers);
      },
      done: release,
    });
  }

  async function handleUpgrade(req: IncomingMessage, socket: Duplex, headBytes: Buffer): Promise<void> {
    newReadEpoch();
    const requestId = requestIdOf(req);
    const host = hostOf(req.headers.host);
    socket.on('error', () => socket.destroy());
    const rawRefuse = (err: ApiError, title: string, headers: Record<string, string> = {}) => {
      const html = wantsHtml(req);
      const body = html ? errorPage(err.status, title, err.message, host ?? '(none)', requestId) : JSON.stringify(errorBody(err, requestId));
      writeRawResponse(socket, err.status, {
        'content-type': html ? 'text/html; charset=utf-8' : 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-request-id': requestId,
        ...(html ? { 'content-security-policy': PAGE_CSP } : {}), ...headers,
      }, body);
    };
    const target = await targetOf(req, host, requestId, {
      refuse: rawRefuse,
      // Nothing runs on a simulated cluster: nothing to upgrade to.
      local: async ({ answer }) => rawRefuse(new ApiError('UNAVAILABLE', `install ${answer.install_id} runs on a simulated cluster: there is no workload to open a WebSocket to`, {
        reason: 'UPSTREAM_UNREACHABLE', status: 502,
      }), 'Bad Gateway'),
    });
    if (target.kind !== 'proxy') return;
    const release = takeStream(target.installId);
    if (!release) return rawRefuse(tooManyStreams(target.installId), 'Service Unavailable', { 'retry-after': '1' });
    proxyUpgrade(req, socket, headBytes, target.upstream, target.clientPath, deps.proxy, {
      fail: (f) => {
        const { err, title, headers } = failureError(f);
        logger?.info({ host, request_id: requestId, via: target.upstream.via, status: err.status, reason: f.message }, 'preview router: upstream upgrade failed');
        rawRefuse(err, title, headers);
      },
      done: release,
    });
  }

  const server = createServer(nodeServerLimits(limits), (req, res) => {
    // handle() answers every outcome itself; what is left is a broken socket.
    handle(req, res).catch((err) => {
      logger?.warn({ err }, 'preview router could not answer');
      res.destroy();
    });
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    handleUpgrade(req, socket, head).catch((err) => {
      logger?.warn({ err }, 'preview router could not answer an upgrade');
      socket.destroy();
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
