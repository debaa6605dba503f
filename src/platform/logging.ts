// What reaches a log line: no credential, wherever it would appear. No header reaches a line at
// all: the `req` and `res` serializers copy none (so Authorization, Cookie, idempotency-key and
// Set-Cookie cannot appear), the query string's values are redacted unless known to be harmless (a
// token sent as `?access_token=` must not land in the access log), and the known token forms are
// masked in every line as a last line of defence (an error message quoting input, say).
import { createRequire } from 'node:module';
import pino, { type DestinationStream, type Logger } from 'pino';

/**
 * The header paths a logger must redact if it logs raw requests or replies (a logger given to
 * buildApp in a test, say). The process logger below needs no redaction by path: its serializers
 * copy no headers, and pino's redaction cost ~4 µs on every access-log line (a clone and a
 * path walk per line; measured on the kernel benchmark's request).
 */
export const REDACT_PATHS = ['req.headers.authorization', 'req.headers.cookie', 'req.headers["idempotency-key"]', 'res.headers["set-cookie"]'];

/** Query parameters whose values are logged as sent; every other value is `[redacted]`. */
const LOGGED_QUERY_PARAMS = new Set(['limit', 'page_token', 'timeout', 'state', 'type', 'kind', 'filter', 'order_by', 'track']);

/** The URL as logged: the path, and the query with values redacted unless harmless. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const params = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const name = eq === -1 ? pair : pair.slice(0, eq);
    if (eq === -1 || LOGGED_QUERY_PARAMS.has(name)) return pair;
    return `${name.length > 64 ? `${name.slice(0, 64)}...` : name}=[redacted]`;
  });
  return `${url.slice(0, q)}?${params.join('&')}`;
}

// API tokens (sk_svc_), OAuth client secrets (svc_cs_), worker bootstrap tokens (svcb_), machine
// credentials (svcm_) and JWTs (three base64url parts, the first
// a JSON header `{"...` = `eyJ`). Session tokens have no prefix; they travel only in the
// Authorization header (redacted above) and, refused, in a query string (redacted above).
const TOKEN_FORMS = /\b(sk_svc_|svc_cs_|svcb_|svcm_)[A-Za-z0-9_-]{8,}|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/g;

export function maskTokens(line: string): string {
  // Cheap test first: almost no line holds a token form.
  if (!line.includes('sk_svc_') && !line.includes('svc_cs_') && !line.includes('svcb_') && !line.includes('svcm_') && !line.includes('eyJ')) return line;
  return line.replace(TOKEN_FORMS, (m, prefix: string | undefined) => `${prefix ?? 'eyJ'}[masked]`);
}

interface LoggedRequest {
  method: string;
  url: string;
  ip?: string;
  host?: string;
  socket?: { remotePort?: number };
}

interface LoggedReply {
  statusCode: number;
}

/**
 * Standard output, written once per turn of the event loop: the lines logged during a turn (one
 * access line per request completed in it, among others) leave in one write at its end
 * (setImmediate) instead of one write each. Under load a turn completes several requests, and each
 * write is a system call: on the kernel benchmark the write per access line cost about 15 µs of
 * a request's CPU (bench/run.js, the quotas route: 150 µs with it, 135 without). Nothing is held
 * longer than the turn that logged it; whatever is pending when the process exits (an uncaught
 * error, process.exit) is written synchronously by the exit handler. SonicBoom in sync mode does
 * the write itself (partial writes, EAGAIN on a non-blocking pipe).
 */
class TurnBatchedStdout implements DestinationStream {
  private readonly out = pino.destination({ dest: 1, sync: true });
  private pending = '';
  private scheduled = false;
  private readonly flushNow = (): void => {
    this.scheduled = false;
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    this.out.write(text);
  };

  constructor() {
    process.on('exit', this.flushNow);
  }

  write(line: string): void {
    this.pending += line;
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flushNow);
  }
}

/** One per process: every logger without a destination of its own shares it (and its exit handler). */
let stdout: TurnBatchedStdout | undefined;

/**
 * Standard output through pino-pretty (SVC_LOG_FORMAT=pretty): one coloured line a record for a
 * person at a terminal (colour only on a terminal), the other fields indented below it. Loaded
 * here, only then: the JSON format never loads it. Written synchronously, line by line (a person
 * reads it; the turn batching above is for the JSON log's throughput under load).
 */
let prettyStdout: DestinationStream | undefined;
function pretty(): DestinationStream {
  const build = createRequire(import.meta.url)('pino-pretty') as (options: Record<string, unknown>) => DestinationStream;
  prettyStdout ??= build({ destination: 1, sync: true, translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l', ignore: 'pid,hostname' });
  return prettyStdout;
}

export interface LoggerOptions {
  /** `json` (the default: one JSON object a line) or `pretty` (pino-pretty, standard output only) */
  format?: 'json' | 'pretty';
  /** fields added to every line, such as the current trace's ids when tracing is on */
  mixin?: () => object;
}

/**
 * The process logger: JSON lines on stdout (or `destination`, written line by line as logged), or
 * pino-pretty's lines with `format: 'pretty'`, with the redactions and masking above either way.
 */
export function createLogger(level: string, destination?: DestinationStream, options: LoggerOptions = {}): Logger {
  const out = destination ?? (options.format === 'pretty' ? pretty() : (stdout ??= new TurnBatchedStdout()));
  const masked: DestinationStream = { write: (line: string) => out.write(maskTokens(line)) };
  return pino({
    level,
    ...(options.mixin ? { mixin: options.mixin } : {}),
    serializers: {
      // Fastify's own request serializer (no headers), with the URL's query values redacted.
      req: (req: LoggedRequest) => ({
        method: req.method,
        url: redactUrl(req.url),
        host: req.host,
        remoteAddress: req.ip,
        remotePort: req.socket?.remotePort,
      }),
      // Fastify's own reply serializer: the status, no headers.
      res: (reply: LoggedReply) => ({ statusCode: reply.statusCode }),
    },
  }, masked);
}
