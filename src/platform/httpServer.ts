// The HTTP server's own limits and answers, before a request reaches a route: timeouts against
// slow clients, connection caps (per process and per address), request ids, and the one error shape (API.md section 2) for what
// Node's HTTP parser and Fastify's router refuse (bad framing, 431, 408, bad URL encoding, an
// over-long path parameter).
import { randomBytes } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { Config } from '../config.js';
import { ApiError, type ErrorBodyT, type Reason } from './errors.js';

// Generated request ids: a random per-process prefix and a counter. Unique across instances and
// restarts without paying for randomBytes on every request.
const REQUEST_ID_PREFIX = `req_${randomBytes(8).toString('hex')}`;
let requestCounter = 0;
export function nextRequestId(): string {
  return `${REQUEST_ID_PREFIX}${(++requestCounter).toString(36).padStart(6, '0')}`;
}

/**
 * Node's parser refuses these before any route runs; Fastify's default answers them outside our
 * error shape. Status and reason by Node's error code (HPE_* come from llhttp).
 */
function clientErrorOf(code: string | undefined): { status: number; reason: Reason; message: string } {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, reason: 'REQUEST_TIMEOUT', message: 'the request was not received in time (SVC_REQUEST_TIMEOUT_MS, SVC_HEADERS_TIMEOUT_MS)' };
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, reason: 'HEADERS_TOO_LARGE', message: 'the request line and headers are larger than the server accepts' };
    default:
      return { status: 400, reason: 'MALFORMED_REQUEST', message: 'the request is not valid HTTP/1.1 (framing, headers or request line)' };
  }
}

/**
 * `clientError` handler: the one error shape with a fresh request id, then the connection closes
 * (the parser's state is unknown after such an error). A socket that cannot be written to is
 * just closed: no HTTP response is possible there.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (!socket.writable || (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent) {
    socket.destroy();
    return;
  }
  const { status, reason, message } = clientErrorOf(err.code);
  const requestId = nextRequestId();
  const body: ErrorBodyT = { error: { code: 'INVALID_ARGUMENT', message, reason, request_id: requestId } };
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(text)}\r\nx-request-id: ${requestId}\r\nConnection: close\r\n\r\n${text}`,
  );
  socket.destroySoon?.();
}

/**
 * Router-level refusals that skip the hooks and the error handler: a path that is not valid
 * percent-encoding, and a path parameter longer than the router takes (no id is that long, so it
 * names nothing: 404, as any id with the wrong form is).
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  const apiError = error.code === 'FST_ERR_MAX_PARAM_LENGTH'
    ? new ApiError('NOT_FOUND', 'a path parameter is longer than any id; it names nothing', { reason: 'NOT_FOUND' })
    : new ApiError('INVALID_ARGUMENT', 'the URL is not valid percent-encoding', { reason: 'BAD_URL' });
  const body: ErrorBodyT = { error: { code: apiError.code, message: apiError.message, reason: apiError.options.reason!, request_id: request.id } };
  reply.code(apiError.status).type('application/json').send(body);
}

/** Node's server options from config.http (slowloris, idle sockets), for every HTTP server of the process. */
export function nodeServerLimits(limits: Config['http']): ServerOptions {
  return {
    requestTimeout: limits.requestTimeoutMs,
    // Node refuses headersTimeout > requestTimeout.
    headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // How often Node looks for expired requests (default 30 s): a timeout fires within a second.
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
  };
}

export interface ServerLimits extends Pick<FastifyServerOptions, 'requestTimeout' | 'keepAliveTimeout'> {
  http: ServerOptions;
}

/** Fastify's server options from config.http: Fastify sets its own requestTimeout and keepAliveTimeout on the server it creates. */
export function serverOptions(config: Config): ServerLimits {
  return { requestTimeout: config.http.requestTimeoutMs, keepAliveTimeout: config.http.keepAliveTimeoutMs, http: nodeServerLimits(config.http) };
}

type HttpSocket = Socket & { _httpMessage?: unknown; parser?: { incoming?: { complete: boolean } | null } | null };

/** A request of the socket is being read or answered. */
const inRequest = (socket: HttpSocket) => Boolean(socket._httpMessage) || (socket.parser?.incoming ? !socket.parser.incoming.complete : false);

/**
 * Connection limits against one client holding the server's connections: the process-wide cap
 * (maxConnections), a cap per client address, and a short timeout for a connection that sends
 * nothing at all (firstByteTimeoutMs, separate from the keep-alive and headers timeouts).
 * Connections over the address cap are closed before a byte is read. At the process-wide cap a
 * new connection closes an idle one instead, the one idle longest (no request under way: a
 * keep-alive socket between requests, or one that never sent a byte), so a few clients that
 * reconnect and idle cannot keep everyone else out; only when none is idle is the new one closed.
 * Long-lived responses (streams, `:wait`) are never idle: they are capped per principal and
 * workspace instead (long-requests.ts). Costs nothing per request beyond two map updates; the
 * search for an idle socket runs only at the cap.
 */
export function limitConnections(server: Server, limits: Config['http']): void {
  const perAddress = new Map<string, number>();
  /** Sockets with no request under way, oldest idle first, with their bytesRead when they went idle. */
  const idle = new Map<HttpSocket, number>();
  /** Sockets counted against maxConnections (an evicted one leaves at once, before its close event). */
  const counted = new Set<Socket>();
  const closeOneIdle = (): boolean => {
    for (const [socket, readWhenIdle] of idle) {
      idle.delete(socket);
      // Still idle: nothing read since its last response ended (a request begun since is not idle).
      if (!socket.destroyed && socket.bytesRead === readWhenIdle && !inRequest(socket)) {
        counted.delete(socket);
        socket.destroy();
        return true;
      }
    }
    return false;
  };
  server.on('connection', (socket: HttpSocket) => {
    const address = socket.remoteAddress ?? '';
    const open = perAddress.get(address) ?? 0;
    if (limits.maxConnectionsPerAddress > 0 && open >= limits.maxConnectionsPerAddress) {
      socket.destroy();
      return;
    }
    if (limits.maxConnections > 0 && counted.size >= limits.maxConnections && !closeOneIdle()) {
      socket.destroy();
      return;
    }
    perAddress.set(address, open + 1);
    counted.add(socket);
    idle.set(socket, 0);
    socket.once('close', () => {
      counted.delete(socket);
      idle.delete(socket);
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
    socket.setTimeout(limits.firstByteTimeoutMs);
  });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket as HttpSocket;
    idle.delete(socket);
    response.once('finish', () => {
      if (counted.has(socket) && !socket.destroyed) idle.set(socket, socket.bytesRead);
    });
  });
  // With a listener here Node no longer closes a timed-out socket by itself (its keep-alive
  // timeout uses the same timer), so this decides for every socket timeout.
  //
  // Decided one turn of the event loop later (setImmediate runs after the poll phase, where waiting
  // bytes are read): after the process was busy past a timeout, its timer fires before the bytes
  // that arrived meanwhile are read, and closing then would reset a client that did send its
  // request in time (a silent socket or an idle keep-alive one, as the timer saw it).
  server.on('timeout', (socket: HttpSocket) => {
    const read = socket.bytesRead;
    setImmediate(() => {
      // Closed meanwhile, or bytes came in: the timer is armed again by that activity.
      if (socket.destroyed || socket.bytesRead !== read) return;
      // Never sent a byte: the first-byte timeout.
      if (read === 0) return void socket.destroy();
      // The first request is under way, or any request is: its own timeouts (headers, request) govern.
      if (socket.bytesWritten === 0 || inRequest(socket)) return void socket.setTimeout(0);
      // Idle after a response: the keep-alive timeout, closed as Node would.
      socket.destroy();
    });
  });
}
