// The stand-in API server's service proxy (issue 36), as a real one serves it:
// `/api/v1/namespaces/{ns}/services/{name}[:{port}]/proxy/{path}` (also `http:{name}:{port}`),
// after the same authentication as every other path, forwards the request to the Service's
// endpoints, here a real HTTP server the test starts as the workload (`serviceBackends`, keyed
// `{ns}/{name}:{port}`), streaming both ways, WebSocket upgrades included. Like the API server it
// consumes the Authorization header and appends the caller's address to X-Forwarded-For; other
// headers go on as they came, so a test sees what the caller sent. A Service without a backend is
// the API server's 503 Status "no endpoints available for service"; a backend that refuses, its
// 503 "error trying to reach service".
// Also a minimal WebSocket (RFC 6455) echo and client over raw sockets, for the workload side and
// the test's side: the `ws` package is only a transitive dependency here, and a handshake and
// one-frame text messages are all the tests need.
import { createHash } from 'node:crypto';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

const PROXY_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/services\/([^/]+)\/proxy(\/.*)?$/;

type Json = Record<string, unknown>;
const status = (code: number, reason: string, message: string): Json => ({
  kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code,
});

/** The service proxy's answer for a path, or null when the path is not one. */
export interface ServiceProxy {
  /** `{ns}/{name}:{port}` -> the workload's base URL (http://127.0.0.1:port) */
  serviceBackends: Map<string, string>;
  /** true when it answered (the path was a service proxy path) */
  handle(req: IncomingMessage, res: ServerResponse, authorized: boolean): boolean;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, authorized: boolean): void;
}

interface Resolved {
  backend: string | undefined;
  service: string;
  path: string;
}

function resolve(backends: Map<string, string>, url: string): Resolved | null {
  const [pathname, query] = splitQuery(url);
  const m = PROXY_PATH.exec(pathname);
  if (!m) return null;
  const ns = decodeURIComponent(m[1]!);
  // {name}, {name}:{port} or {scheme}:{name}:{port}
  const parts = decodeURIComponent(m[2]!).split(':');
  if (parts.length === 3) parts.shift();
  const [name, port] = parts as [string, string | undefined];
  const key = port ? `${ns}/${name}:${port}` : [...backends.keys()].find((k) => k.startsWith(`${ns}/${name}:`)) ?? `${ns}/${name}`;
  return { backend: backends.get(key), service: name, path: (m[3] ?? '/') + (query ? `?${query}` : '') };
}

function splitQuery(url: string): [string, string] {
  const i = url.indexOf('?');
  return i === -1 ? [url, ''] : [url.slice(0, i), url.slice(i + 1)];
}

/** The caller's headers as the API server passes them on: without its own credentials, host and framing. */
function forwarded(req: IncomingMessage): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || ['authorization', 'host', 'connection', 'transfer-encoding'].includes(k)) continue;
    out[k] = v;
  }
  const peer = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  out['x-forwarded-for'] = req.headers['x-forwarded-for'] ? `${req.headers['x-forwarded-for']}, ${peer}` : peer;
  return out;
}

export function createServiceProxy(): ServiceProxy {
  const serviceBackends = new Map<string, string>();
  const sendStatus = (res: ServerResponse, code: number, body: Json) => {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  return {
    serviceBackends,
    handle(req, res, authorized) {
      const target = resolve(serviceBackends, req.url ?? '/');
      if (!target) return false;
      if (!authorized) {
        sendStatus(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
        return true;
      }
      if (!target.backend) {
        req.resume();
        sendStatus(res, 503, status(503, 'ServiceUnavailable', `no endpoints available for service "${target.service}"`));
        return true;
      }
      const backend = new URL(target.backend);
      const up = httpRequest({ hostname: backend.hostname, port: backend.port, method: req.method, path: target.path, headers: forwarded(req) }, (upRes) => {
        const headers = { ...upRes.headers };
        delete headers.connection;
        delete headers['transfer-encoding'];
        res.writeHead(upRes.statusCode ?? 502, headers);
        upRes.pipe(res);
      });
      up.on('error', (err: NodeJS.ErrnoException) => {
        if (res.headersSent) return res.destroy();
        sendStatus(res, 503, status(503, 'ServiceUnavailable', `error trying to reach service: dial tcp ${backend.host}: connect: ${err.code === 'ECONNREFUSED' ? 'connection refused' : err.code}`));
      });
      res.on('close', () => up.destroy());
      req.pipe(up);
      return true;
    },
    handleUpgrade(req, socket, head, authorized) {
      const target = resolve(serviceBackends, req.url ?? '/');
      const refuse = (code: number, body: Json) => {
        const text = JSON.stringify(body);
        socket.end(`HTTP/1.1 ${code} Refused\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`);
      };
      if (!target) return refuse(404, status(404, 'NotFound', 'the server could not find the requested resource'));
      if (!authorized) return refuse(401, status(401, 'Unauthorized', 'Unauthorized'));
      if (!target.backend) return refuse(503, status(503, 'ServiceUnavailable', `no endpoints available for service "${target.service}"`));
      const backend = new URL(target.backend);
      const up = connect(Number(backend.port), backend.hostname, () => {
        const headers = forwarded(req);
        const lines = [`${req.method} ${target.path} HTTP/1.1`, `host: ${backend.host}`, 'connection: Upgrade'];
        for (const [k, v] of Object.entries(headers)) for (const one of Array.isArray(v) ? v : [v]) lines.push(`${k}: ${one}`);
        up.write(`${lines.join('\r\n')}\r\n\r\n`);
        if (head.length) up.write(head);
        up.pipe(socket);
        socket.pipe(up);
      });
      const both = () => {
        up.destroy();
        socket.destroy();
      };
      for (const s of [up, socket]) for (const event of ['error', 'end', 'close']) s.on(event, both);
    },
  };
}

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const acceptOf = (key: string) => createHash('sha1').update(key + WS_GUID).digest('base64');

/** One WebSocket frame, masked when a client sends it. */
export function wsFrame(text: string, mask: boolean): Buffer {
  const payload = Buffer.from(text);
  if (payload.length > 125) throw new Error('the test frames are short');
  const header = Buffer.from([0x81, (mask ? 0x80 : 0) | payload.length]);
  if (!mask) return Buffer.concat([header, payload]);
  const key = Buffer.from([1, 2, 3, 4]);
  return Buffer.concat([header, key, Buffer.from(payload.map((b, i) => b ^ key[i % 4]!))]);
}

/** Reads one short text frame from the start of `buf`, or null when it is not all there yet. */
export function readFrame(buf: Buffer): { text: string; opcode: number; rest: Buffer } | null {
  if (buf.length < 2) return null;
  const masked = (buf[1]! & 0x80) !== 0;
  const len = buf[1]! & 0x7f;
  const start = 2 + (masked ? 4 : 0);
  if (buf.length < start + len) return null;
  let payload = buf.subarray(start, start + len);
  if (masked) {
    const key = buf.subarray(2, 6);
    payload = Buffer.from(payload.map((b, i) => b ^ key[i % 4]!));
  }
  return { text: payload.toString('utf8'), opcode: buf[0]! & 0x0f, rest: buf.subarray(start + len) };
}

/**
 * The workload's WebSocket echo, for a node:http server's `upgrade` event: answers the handshake
 * and sends back every text frame as `echo: <text>`, with the request's X-Forwarded-For in the 101.
 */
export function wsEcho(req: IncomingMessage, socket: Duplex, head: Buffer): void {
  const key = req.headers['sec-websocket-key'];
  if (typeof key !== 'string' || String(req.headers.upgrade).toLowerCase() !== 'websocket') {
    socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    return;
  }
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptOf(key)}\r\n` +
    `x-seen-forwarded-for: ${req.headers['x-forwarded-for'] ?? ''}\r\n\r\n`);
  let buf: Buffer = head;
  const onData = (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    for (let f = readFrame(buf); f; f = readFrame(buf)) {
      buf = f.rest;
      if (f.opcode === 0x8) return socket.end();
      socket.write(wsFrame(`echo: ${f.text}`, false));
    }
  };
  socket.on('data', onData);
  socket.on('error', () => socket.destroy());
  socket.on('end', () => socket.destroy());
  if (head.length) onData(Buffer.alloc(0));
}

export interface WsClient {
  /** the 101's head */
  head: string;
  send(text: string): void;
  /** the next text frame */
  next(): Promise<string>;
  close(): void;
}

/** Opens a WebSocket to `base` with a Host header (the preview router answers by Host); rejects with the answer's head when it is not a 101. */
export function wsConnect(base: string, host: string, path = '/'): Promise<WsClient> {
  const url = new URL(base);
  const key = Buffer.from('0123456789abcdef').toString('base64');
  return new Promise((resolveConnect, reject) => {
    const socket: Socket = connect(Number(url.port), url.hostname, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    });
    let buf: Buffer = Buffer.alloc(0);
    let head: string | null = null;
    const waiting: ((text: string) => void)[] = [];
    const frames: string[] = [];
    socket.on('error', reject);
    socket.on('end', () => {
      if (head === null) reject(new Error(`closed before a 101: ${buf.toString('utf8')}`));
    });
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (head === null) {
        const end = buf.indexOf('\r\n\r\n');
        if (end === -1) return;
        const text = buf.subarray(0, end).toString('utf8');
        if (!text.startsWith('HTTP/1.1 101')) {
          // Not upgraded: wait for the whole answer, then reject with it.
          socket.on('close', () => reject(new Error(buf.toString('utf8'))));
          return;
        }
        head = text;
        buf = buf.subarray(end + 4);
        if (!text.toLowerCase().includes(`sec-websocket-accept: ${acceptOf(key).toLowerCase()}`)) return reject(new Error(`bad accept: ${text}`));
        resolveConnect({
          head,
          send: (t) => socket.write(wsFrame(t, true)),
          next: () => new Promise((r) => (frames.length ? r(frames.shift()!) : waiting.push(r))),
          close: () => socket.destroy(),
        });
      }
      for (let f = readFrame(buf); f; f = readFrame(buf)) {
        buf = f.rest;
        const w = waiting.shift();
        if (w) w(f.text);
        else frames.push(f.text);
      }
    });
  });
}
