// `svc installs logs <id>`: the install's pods' lines, `pod/container | line` (just the line when
// they all come from one container), oldest first; with -f, followed as Server-Sent Events until
// Ctrl-C or the server ends the stream (the install deleted, its pods' logs ended). `--since` takes
// a Unix time or a duration back from now (90s, 10m, 2h, 1d). --json prints the API's JSON (with
// -f: one line's JSON per line, as the stream sends it).
import { CliError, EXIT } from './errors.js';
import type { Api } from './http.js';
import { sseMessages } from './sse.js';
import type { buildRequest, Invocation } from './execute.js';
import type { Output } from './output.js';

/** The server writes a comment every 15 s: three missed mean the connection is dead. */
const IDLE_MS = 45_000;
const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

interface LogLine {
  time: number;
  timestamp: string;
  pod: string;
  container: string;
  line: string;
}

/** `--since`: a Unix time (seconds), or how long back from now (`90s`, `10m`, `2h`, `1d`). */
export function parseSince(raw: string, nowMs = Date.now()): number {
  const text = raw.trim();
  if (/^\d{1,12}$/.test(text)) return Number(text);
  const m = /^(\d{1,9})([smhd])$/.exec(text);
  if (m) return Math.max(0, Math.floor(nowMs / 1000) - Number(m[1]) * UNITS[m[2]!]!);
  throw new CliError(`--since: expected a Unix time in seconds or a duration such as 10m, 2h or 1d, got ${JSON.stringify(raw)}`, EXIT.USAGE);
}

const prefixOf = (o: Output, l: LogLine) => o.color.dim(`${l.pod}/${l.container} | `);

export async function logsCommand(api: Api, o: Output, inv: Invocation, req: ReturnType<typeof buildRequest>): Promise<number> {
  const json = Boolean(inv.common.json);
  if (req.query.follow !== true) {
    const res = await api.call('GET', inv.spec.path, { ...req, auth: inv.spec.auth });
    if (json) {
      o.out.write(`${res.text}\n`);
      return EXIT.OK;
    }
    const { items, truncated } = res.body as { items: LogLine[]; truncated: boolean };
    const one = new Set(items.map((l) => `${l.pod}/${l.container}`)).size <= 1;
    for (const l of items) o.out.write(`${one ? '' : prefixOf(o, l)}${l.line}\n`);
    if (truncated) o.err.write(`${o.errColor.dim('some lines were left out (more than 20 pod containers, or over 10,000 lines): narrow with --container, --since or --tail')}\n`);
    return EXIT.OK;
  }

  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once('SIGINT', onSigint);
  try {
    const res = await api.open('GET', inv.spec.path, { ...req, header: { ...req.header, accept: 'text/event-stream' }, auth: inv.spec.auth, signal: abort.signal });
    if (!res.body) throw new CliError('the log stream has no body', EXIT.RETRYABLE);
    for await (const m of sseMessages(res.body, IDLE_MS)) {
      if (m.event === 'line') {
        if (json) o.out.write(`${m.data}\n`);
        else {
          const l = JSON.parse(m.data) as LogLine;
          // Following, more containers may speak at any time: every line says whose it is.
          o.out.write(`${prefixOf(o, l)}${l.line}\n`);
        }
      } else if (m.event === 'notice') {
        o.err.write(`${o.errColor.yellow('!')} ${(JSON.parse(m.data) as { message: string }).message}\n`);
      } else if (m.event === 'end') {
        const reason = (JSON.parse(m.data) as { reason: string }).reason;
        o.err.write(`${o.errColor.dim(`the log stream ended (${reason.replace(/_/g, ' ')})`)}\n`);
        return EXIT.OK;
      }
    }
    throw new CliError('the log stream was cut before the server ended it; run the command again (with --since to start where it stopped)', EXIT.RETRYABLE);
  } catch (err) {
    if (abort.signal.aborted) return EXIT.INTERRUPTED;
    throw err;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}
