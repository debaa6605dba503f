// The preview router's reverse proxy to a workload on a kubernetes cluster (issue 36), over plain
// node:http/https (no library: what is needed is small, and every limit stays in view here).
// Upstream: the cluster's gateway address when the operator set one (the original Host is sent,
// and over https it is the TLS server name too), else the Kubernetes API server's service proxy,
// `{server}/api/v1/namespaces/{ns}/services/{name}:{port}/proxy/{path}`, with the cluster's
// credentials. Bodies stream both ways (never buffered, except the API server's own small error
// Status objects, read to say what they mean); WebSocket upgrades are piped socket to socket.
// Hop-by-hop headers are dropped both ways; X-Forwarded-For/-Proto/-Host are set, overwriting what
// the client sent (the router is the edge: a client's own X-Forwarded-For is not to be trusted).
// Every wait on the upstream ends: connect, response head and idle timeouts; the request body is
// bounded. Credentials go only into the upstream request's headers or TLS options: never into an
// answer or a log line.
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type RequestOptions, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import type { PreviewProxyConfig } from '../../config.js';
import { requestAccessOf, type ParsedKubeconfig } from '../../drivers/cluster/kubeconfig.js';
import { addressKind, publicOnlyLookup } from '../../platform/addresses.js';

/** The cluster's connection, as the clusters module gives it (only the fields the proxy reads). */
export interface ProxyConnection {
  gatewayUrl: string | null;
  kubeconfig: ParsedKubeconfig | null;
}

export interface Upstream {
  /** `gateway` or `service proxy`, for messages */
  via: 'gateway' | 'service proxy';
  https: boolean;
  /** host, port, TLS options (CA, client certificate), never logged */
  options: RequestOptions;
  /** the upstream path for the client's path and query */
  pathOf(clientPath: string): string;
  /** the Host header sent upstream */
  host: string;
  /** credentials for the API server (Authorization), never logged */
  auth: Record<string, string>;
  /** the Service, for messages: `name:port` */
  service: string;
  /** why the router does not connect at all (a gateway_url with a non-public IP address), for the 502 */
  refusal?: string;
}

/** Where a request to `service` of `namespace` goes, and with which credentials. */
export function upstreamOf(
  conn: ProxyConnection, namespace: string, service: { name: string; port: number }, originalHost: string, allowPrivateGateways = false,
): Upstream {
  const serviceName = `${service.name}:${service.port}`;
  if (conn.gatewayUrl) {
    const url = new URL(conn.gatewayUrl);
    const https = url.protocol === 'https:';
    const servername = originalHost.replace(/:\d+$/, '');
    const hostname = url.hostname.replace(/^\[|\]$/g, '');
    // A workspace admin sets gateway_url: unless the operator allows it, the router connects to
    // public addresses only. A name is checked on what it resolves to, at every connection (the
    // socket's lookup); Node looks up no IP literal, so that is checked here.
    const kind = allowPrivateGateways ? null : addressKind(hostname);
    return {
      via: 'gateway', https, host: originalHost, auth: {}, service: serviceName,
      options: { hostname, port: url.port || (https ? 443 : 80), ...(https ? { servername } : {}), ...(allowPrivateGateways ? {} : { lookup: publicOnlyLookup }) },
      pathOf: (path) => path,
      ...(kind ? { refusal: refusalMessage(kind) } : {}),
    };
  }
  const kc = conn.kubeconfig;
  if (!kc) throw new Error('a kubernetes cluster without a kubeconfig');
  const server = new URL(kc.cluster.server);
  const https = server.protocol === 'https:';
  const base = `${server.pathname.replace(/\/+$/, '')}/api/v1/namespaces/${encodeURIComponent(namespace)}/services/${encodeURIComponent(serviceName)}/proxy`;
  const access = requestAccessOf(kc);
  const options: RequestOptions = { hostname: server.hostname.replace(/^\[|\]$/g, ''), port: server.port || (https ? 443 : 80), ...(https ? access.tls : {}) };
  const auth: Record<string, string> = access.authorization ? { authorization: access.authorization } : {};
  return { via: 'service proxy', https, host: server.host, auth, service: serviceName, options, pathOf: (path) => base + path };
}

/** Headers that describe one connection, never forwarded (RFC 9110 section 7.6.1), plus those the Connection header names. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function hopByHop(headers: IncomingHttpHeaders): Set<string> {
  const drop = new Set(HOP_BY_HOP);
  const connection = headers.connection;
  for (const name of (typeof connection === 'string' ? connection : '').split(',')) if (name.trim()) drop.add(name.trim().toLowerCase());
  return drop;
}

/** The end-to-end headers of a message: hop-by-hop ones and any `proxy-*` dropped. */
export function endToEnd(headers: IncomingHttpHeaders, alsoDrop: string[] = []): OutgoingHttpHeaders {
  const drop = hopByHop(headers);
  for (const name of alsoDrop) drop.add(name);
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || drop.has(name) || name.startsWith('proxy-')) continue;
    out[name] = value;
  }
  return out;
}

/**
 * True when a path could leave the prefix it is appended to: a `.` or `..` segment (also
 * percent-encoded: `%2e%2e`), or an encoded slash or backslash (`%2f`, `%5c`) or a backslash, which
 * a server may decode into a separator. Through the service proxy the path follows
 * `/api/v1/namespaces/{ns}/services/{svc}/proxy` and goes with the cluster's credentials: a path
 * climbing out of it would read the API server itself (its Secrets) with them. Browsers resolve
 * dot segments before sending, so only crafted requests have them.
 */
function escapesPrefix(path: string): boolean {
  const end = path.search(/[?#]/);
  const pathname = end === -1 ? path : path.slice(0, end);
  if (/\\|%2f|%5c/i.test(pathname)) return true;
  for (const segment of pathname.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return true; // malformed percent-encoding: nothing to forward
    }
    if (decoded === '.' || decoded === '..') return true;
  }
  return false;
}

/**
 * The client path of a request line: origin form kept, absolute form reduced to its path and
 * query; null when it is not a path, or one that could leave the upstream's prefix (escapesPrefix).
 */
export function clientPathOf(url: string | undefined): string | null {
  if (!url) return '/';
  let path: string;
  if (url.startsWith('/')) path = url;
  else {
    try {
      const parsed = new URL(url);
      path = parsed.pathname + parsed.search;
    } catch {
      return null;
    }
  }
  return escapesPrefix(path) ? null : path;
}

/** The upstream request's headers: the client's end-to-end ones, Host, X-Forwarded-*, and the API server's credentials. */
function upstreamHeaders(req: IncomingMessage, up: Upstream, upgrade: string | null): OutgoingHttpHeaders {
  // Through the service proxy the Authorization header carries the cluster's credentials: the
  // client's own cannot reach the workload that way (the API server consumes it).
  const headers = endToEnd(req.headers, ['host', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'forwarded', ...(up.via === 'service proxy' ? ['authorization'] : [])]);
  headers.host = up.host;
  headers['x-forwarded-for'] = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  headers['x-forwarded-proto'] = 'http';
  headers['x-forwarded-host'] = req.headers.host ?? '';
  Object.assign(headers, up.auth);
  if (upgrade !== null) {
    headers.connection = 'upgrade';
    headers.upgrade = upgrade;
  }
  return headers;
}

export type ProxyFailure =
  | { kind: 'unreachable'; message: string }
  | { kind: 'timeout'; message: string }
  | { kind: 'too_large'; message: string }
  | { kind: 'upstream_status'; status: number; message: string };

export interface ProxyHooks {
  /** answers a failure before the response began (a page or the error shape); after, the proxy just closes */
  fail(failure: ProxyFailure): void;
  /** the exchange is over, however it ended (once) */
  done(): void;
}

function refusalMessage(kind: string): string {
  return `the cluster's gateway_url leads to a ${kind} address, which this router does not connect to (the operator allows it with SVC_PREVIEW_PROXY_ALLOW_PRIVATE=true)`;
}

function codeOf(err: unknown): string {
  return (err as NodeJS.ErrnoException | undefined)?.code ?? '';
}

/** A short, secret-free sentence for a connection error. */
function unreachable(up: Upstream, err: unknown): ProxyFailure {
  const code = codeOf(err);
  const refused = err as { code?: string; kind?: string };
  if (refused.code === 'ESVC_ADDRESS_REFUSED') return { kind: 'unreachable', message: refusalMessage(refused.kind ?? 'non-public') };
  const where = up.via === 'gateway' ? 'the cluster\'s gateway' : 'the cluster\'s API server';
  const what = code === 'ECONNREFUSED' ? 'refused the connection'
    : code === 'ECONNRESET' || code === 'EPIPE' ? 'closed the connection without an answer'
      : code === 'ENOTFOUND' || code === 'EAI_AGAIN' ? 'has a name that does not resolve'
        : code.startsWith('HPE_') ? 'answered with something that is not valid HTTP'
          : /CERT|SSL|TLS|SELF_SIGNED|ERR_TLS/.test(code) ? `failed the TLS handshake (${code})`
            : code ? `could not be reached (${code})` : 'could not be reached';
  return { kind: 'unreachable', message: `${where} ${what} for Service ${up.service}` };
}

/** An error Status of the API server itself (its service proxy: no endpoints, no such Service, forbidden), read from a small JSON body. */
function apiServerStatus(text: string): { code: number; message: string; reason: string } | null {
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    if (body.kind !== 'Status' || body.apiVersion !== 'v1') return null;
    return { code: Number(body.code) || 0, message: typeof body.message === 'string' ? body.message.slice(0, 300) : '', reason: String(body.reason ?? '') };
  } catch {
    return null;
  }
}

const STATUS_BODY_MAX = 16 * 1024;

/** What an API server Status means to the person at the URL. */
function statusFailure(up: Upstream, status: number, s: { code: number; message: string; reason: string }): ProxyFailure {
  if (status === 503 && /no endpoints available/i.test(s.message)) {
    return { kind: 'upstream_status', status: 503, message: `Service ${up.service} has no ready pods yet (the cluster says: ${s.message}); retry in a moment` };
  }
  if (status === 404) return { kind: 'upstream_status', status: 502, message: `the cluster has no Service ${up.service} in the install's namespace (the cluster says: ${s.message})` };
  if (status === 401) return { kind: 'upstream_status', status: 502, message: 'the cluster refused the credentials of its kubeconfig; register the cluster again with working ones' };
  if (status === 403) return { kind: 'upstream_status', status: 502, message: `the cluster's kubeconfig may not proxy to the Service (services/proxy): ${s.message}` };
  return { kind: 'upstream_status', status: 502, message: `the cluster's API server answered ${status}: ${s.message || s.reason}` };
}

/** An answer that may be the API server's own refusal rather than the workload's: a small JSON body on a refusal status. */
function isApiServerRefusal(up: Upstream, res: IncomingMessage): boolean {
  const type = String(res.headers['content-type'] ?? '');
  const length = Number(res.headers['content-length'] ?? 0);
  return up.via === 'service proxy' && [401, 403, 404, 503].includes(res.statusCode ?? 0) && type.startsWith('application/json') && length <= STATUS_BODY_MAX;
}

/** Reads a body of at most STATUS_BODY_MAX bytes; null when it is larger or breaks off. */
function readSmall(res: IncomingMessage, done: (body: Buffer | null) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  res.on('data', (c: Buffer) => {
    size += c.length;
    if (size > STATUS_BODY_MAX) over = true;
    else chunks.push(c);
  });
  res.on('error', () => done(null));
  res.on('end', () => done(over ? null : Buffer.concat(chunks)));
}

/** Counts the request body against the limit as it streams to the upstream. */
function pumpBody(req: IncomingMessage, upstream: ClientRequest, limit: number, tooLarge: () => void): void {
  let seen = 0;
  req.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > limit) {
      req.pause();
      tooLarge();
      return;
    }
    if (!upstream.write(chunk)) {
      req.pause();
      upstream.once('drain', () => req.resume());
    }
  });
  req.on('end', () => upstream.end());
}

/**
 * Proxies one HTTP request. `hooks.fail` answers what fails before the response head arrived; a
 * failure after it closes the client's connection (its status is already sent).
 */
export function proxyRequest(req: IncomingMessage, res: ServerResponse, up: Upstream, clientPath: string, limits: PreviewProxyConfig, hooks: ProxyHooks): void {
  let finished = false;
  const timers: NodeJS.Timeout[] = [];
  const finish = () => {
    if (finished) return;
    finished = true;
    for (const t of timers) clearTimeout(t);
    hooks.done();
  };
  const fail = (failure: ProxyFailure) => {
    if (finished) return;
    upstream.destroy();
    if (!res.headersSent) hooks.fail(failure);
    else res.destroy();
    finish();
  };
  if (up.refusal) {
    req.resume();
    hooks.fail({ kind: 'unreachable', message: up.refusal });
    finished = true;
    hooks.done();
    return;
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limits.bodyLimitBytes) {
    // Refused before anything is sent upstream; the connection closes rather than read the body.
    res.shouldKeepAlive = false;
    hooks.fail({ kind: 'too_large', message: `the request body is larger than the ${limits.bodyLimitBytes} bytes this router accepts (SVC_PREVIEW_PROXY_BODY_LIMIT_BYTES)` });
    finished = true;
    hooks.done();
    return;
  }
  const send = up.https ? httpsRequest : httpRequest;
  const upstream = send({ ...up.options, agent: false, method: req.method, path: up.pathOf(clientPath), headers: upstreamHeaders(req, up, null) });
  const timeout = (message: string) => fail({ kind: 'timeout', message });
  timers.push(setTimeout(() => timeout(`the cluster's ${up.via} did not accept a connection within ${limits.connectTimeoutMs / 1000} s (SVC_PREVIEW_PROXY_CONNECT_TIMEOUT_S)`), limits.connectTimeoutMs));
  upstream.on('socket', (socket) => {
    // Connected means the TLS handshake is done too, for an https upstream.
    socket.once(up.https ? 'secureConnect' : 'connect', () => clearTimeout(timers[0]));
    socket.setTimeout(limits.idleTimeoutMs, () => timeout(`nothing moved between the router and the workload for ${limits.idleTimeoutMs / 1000} s (SVC_PREVIEW_PROXY_IDLE_TIMEOUT_S)`));
  });
  // The response head is awaited from when the request is sent whole.
  upstream.on('finish', () => {
    timers.push(setTimeout(() => timeout(`the workload did not answer within ${limits.responseTimeoutMs / 1000} s (SVC_PREVIEW_PROXY_TIMEOUT_S)`), limits.responseTimeoutMs));
  });
  upstream.on('error', (err) => fail(unreachable(up, err)));
  upstream.on('response', (upRes) => {
    for (const t of timers) clearTimeout(t);
    const status = upRes.statusCode ?? 502;
    // The service proxy's own refusals are small JSON Status objects; anything else streams.
    if (isApiServerRefusal(up, upRes)) {
      readSmall(upRes, (body) => {
        if (finished) return;
        if (body === null) return fail({ kind: 'upstream_status', status: 502, message: 'the cluster\'s API server answered an error that could not be read' });
        const s = apiServerStatus(body.toString('utf8'));
        if (s) return fail(statusFailure(up, status, s));
        res.writeHead(status, { ...endToEnd(upRes.headers), 'content-length': body.length });
        res.end(req.method === 'HEAD' ? undefined : body);
        finish();
      });
      return;
    }
    res.writeHead(status, STATUS_CODES[status] === upRes.statusMessage ? undefined : upRes.statusMessage, endToEnd(upRes.headers));
    upRes.on('error', () => fail({ kind: 'unreachable', message: 'the workload\'s answer broke off' }));
    upRes.on('end', () => {
      res.end();
      finish();
    });
    upRes.pipe(res, { end: false });
  });
  // The client went away: so does the upstream request.
  res.on('close', () => {
    if (!finished) {
      upstream.destroy();
      finish();
    }
  });
  pumpBody(req, upstream, limits.bodyLimitBytes, () => {
    res.shouldKeepAlive = false;
    fail({ kind: 'too_large', message: `the request body is larger than the ${limits.bodyLimitBytes} bytes this router accepts (SVC_PREVIEW_PROXY_BODY_LIMIT_BYTES)` });
  });
}

/** An HTTP response written on a raw socket (upgrade requests have no ServerResponse). */
export function writeRawResponse(socket: Duplex, status: number, headers: Record<string, string | number>, body: string): void {
  if (socket.destroyed) return;
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`];
  for (const [k, v] of Object.entries({ ...headers, 'content-length': Buffer.byteLength(body), connection: 'close' })) lines.push(`${k}: ${v}`);
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
  // The client may keep its side open: the socket goes once the answer had its moment.
  setTimeout(() => socket.destroy(), 1_000).unref();
}

/** The head of an upstream's answer, as raw lines for the client's socket (hop-by-hop dropped, except the upgrade itself). */
function rawHead(res: IncomingMessage, keepUpgrade: boolean): string {
  const drop = hopByHop(res.headers);
  const lines = [`HTTP/1.1 ${res.statusCode} ${res.statusMessage ?? STATUS_CODES[res.statusCode ?? 0] ?? ''}`];
  for (let i = 0; i < res.rawHeaders.length; i += 2) {
    const name = res.rawHeaders[i]!;
    const lower = name.toLowerCase();
    if ((drop.has(lower) || lower.startsWith('proxy-')) && !(keepUpgrade && (lower === 'connection' || lower === 'upgrade'))) continue;
    lines.push(`${name}: ${res.rawHeaders[i + 1]}`);
  }
  if (keepUpgrade) {
    if (!res.headers.connection) lines.push('Connection: Upgrade');
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/**
 * Proxies an upgrade request (WebSocket): the upstream's 101 and then both sockets piped, each
 * closed after the idle timeout; an upstream that answers without upgrading has its answer passed
 * on and the connection closed.
 */
export function proxyUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, up: Upstream, clientPath: string, limits: PreviewProxyConfig, hooks: ProxyHooks): void {
  let finished = false;
  const timers: NodeJS.Timeout[] = [];
  const finish = () => {
    if (finished) return;
    finished = true;
    for (const t of timers) clearTimeout(t);
    hooks.done();
  };
  let upgraded = false;
  if (up.refusal) {
    hooks.fail({ kind: 'unreachable', message: up.refusal });
    finish();
    return;
  }
  const fail = (failure: ProxyFailure) => {
    if (finished) return;
    upstream.destroy();
    if (!upgraded) hooks.fail(failure);
    else socket.destroy();
    finish();
  };
  const send = up.https ? httpsRequest : httpRequest;
  const upstream = send({ ...up.options, agent: false, method: req.method, path: up.pathOf(clientPath), headers: upstreamHeaders(req, up, String(req.headers.upgrade ?? 'websocket')) });
  const timeout = (message: string) => fail({ kind: 'timeout', message });
  timers.push(setTimeout(() => timeout(`the cluster's ${up.via} did not accept a connection within ${limits.connectTimeoutMs / 1000} s (SVC_PREVIEW_PROXY_CONNECT_TIMEOUT_S)`), limits.connectTimeoutMs));
  upstream.on('socket', (s) => s.once(up.https ? 'secureConnect' : 'connect', () => {
    clearTimeout(timers[0]);
    timers.push(setTimeout(() => timeout(`the workload did not answer the upgrade within ${limits.responseTimeoutMs / 1000} s (SVC_PREVIEW_PROXY_TIMEOUT_S)`), limits.responseTimeoutMs));
  }));
  upstream.on('error', (err) => fail(unreachable(up, err)));
  socket.on('error', () => fail({ kind: 'unreachable', message: 'the client went away' }));
  socket.on('close', () => {
    if (!finished) {
      upstream.destroy();
      finish();
    }
  });
  upstream.on('response', (upRes) => {
    // No upgrade: the answer is passed on as it is, and the connection ends with it; the service
    // proxy's own refusals (a small JSON Status) are said in words, as for plain requests.
    for (const t of timers) clearTimeout(t);
    const status = upRes.statusCode ?? 502;
    if (isApiServerRefusal(up, upRes)) {
      readSmall(upRes, (body) => {
        const s = body === null ? null : apiServerStatus(body.toString('utf8'));
        if (s) return fail(statusFailure(up, status, s));
        upgraded = true;
        socket.end(rawHead(upRes, false).replace(/\r\n\r\n$/, '\r\nConnection: close\r\n\r\n') + (body ?? ''));
        finish();
      });
      return;
    }
    upgraded = true;
    socket.write(rawHead(upRes, false).replace(/\r\n\r\n$/, '\r\nConnection: close\r\n\r\n'));
    upRes.pipe(socket);
    upRes.on('end', finish);
  });
  upstream.on('upgrade', (upRes, upSocket, upHead) => {
    for (const t of timers) clearTimeout(t);
    upgraded = true;
    socket.write(rawHead(upRes, true));
    if (upHead.length > 0) socket.write(upHead);
    if (head.length > 0) upSocket.write(head);
    const idle = () => {
      upSocket.destroy();
      socket.destroy();
    };
    for (const s of [socket, upSocket]) {
      (s as Duplex & { setTimeout?: (ms: number, cb: () => void) => void }).setTimeout?.(limits.idleTimeoutMs, idle);
      s.on('error', idle);
      // WebSocket has its own closing handshake: one side ending ends the exchange (a half-open
      // pair would hold both sockets until the idle timeout).
      s.on('end', idle);
      s.on('close', () => {
        idle();
        finish();
      });
    }
    upSocket.pipe(socket);
    socket.pipe(upSocket);
  });
  upstream.end();
}
