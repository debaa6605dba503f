// `svc snippets run` (issue 13, scope 5): inputs typed by the snippet's declarations, and the output
// printed the way its display_type asks: `table` (an array of objects as an aligned table), `stat`
// (one value alone), `json` (pretty JSON) or `logs` (the captured console lines). A run that failed
// prints its console lines and its error on stderr and exits 1. Ad hoc code (`--code-file`, the
// :execute endpoint) has no display_type: its output is printed by its shape unless --display-type says.
import { CliError, EXIT } from './errors.js';
import type { Invocation } from './execute.js';
import type { Api } from './http.js';
import { terminalText, type Output } from './output.js';
import { columnsOf, printTable } from './table.js';
import type { RenderContext } from './presenters.js';

export const DISPLAY_TYPES = ['table', 'stat', 'json', 'logs'] as const;
type DisplayType = (typeof DISPLAY_TYPES)[number];

interface DeclaredInput {
  key: string;
  kind: string;
}
interface SnippetBody {
  display_type: DisplayType;
  inputs: DeclaredInput[];
}
interface LogLine {
  level: string;
  message: string;
}
/** What a run (SnippetRun) and an ad hoc execution (SnippetExecuteResult) have in common. */
interface RunResult {
  state?: string;
  output?: unknown;
  error?: { code: string; message: string; details?: unknown } | null;
  logs?: LogLine[];
}

/** A number input must read as a finite number, a boolean one as true/false; text stays text. */
function typed(input: DeclaredInput | undefined, key: string, raw: string): unknown {
  switch (input?.kind) {
    case 'number': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n)) throw new CliError(`--input ${key}=${raw}: ${key} is a number input`, EXIT.USAGE);
      return n;
    }
    case 'boolean':
      if (raw !== 'true' && raw !== 'false') throw new CliError(`--input ${key}=${raw}: ${key} is a boolean input (true or false)`, EXIT.USAGE);
      return raw === 'true';
    case 'text':
    case 'enum':
    case 'resource':
      return raw;
    default: // time_range ({"start":..,"end":..}) and keys the snippet does not declare (the API says no)
      try {
        return JSON.parse(raw);
      } catch {
        return raw;
      }
  }
}

/** Reads the snippet: its declared inputs type the --input values, its display_type the output. */
export async function prepareSnippetRun({ api, inv, path }: { api: Api; inv: Invocation; path: Record<string, string> }): Promise<SnippetBody> {
  const res = await api.call('GET', '/v1/snippets/{id}', { path, auth: inv.spec.auth, header: svcContext(inv) });
  const snippet = res.body as SnippetBody;
  inv.coerce = (_flag, key, raw) => typed(snippet.inputs.find((i) => i.key === key), key, raw);
  return snippet;
}

function svcContext(inv: Invocation): Record<string, string> {
  const flag = inv.spec.flags.find((f) => f.flag === 'svc-context');
  const value = flag ? inv.values.get(flag) : undefined;
  return value ? { 'svc-context': String(value) } : {};
}

/** Ad hoc output without a display_type: rows of objects as a table, a scalar as a stat, the rest as JSON. */
function byShape(output: unknown): DisplayType {
  if (Array.isArray(output) && output.length > 0 && output.every((r) => r && typeof r === 'object' && !Array.isArray(r))) return 'table';
  if (output === null || typeof output !== 'object') return 'stat';
  return 'json';
}

function printLogs(o: Output, logs: LogLine[], stream: 'out' | 'err'): void {
  const c = stream === 'out' ? o.color : o.errColor;
  for (const l of logs) {
    const line = l.level === 'error' ? c.red(l.message) : l.level === 'warn' ? c.yellow(l.message) : l.level === 'debug' ? c.dim(l.message) : l.message;
    o[stream].write(`${l.level === 'log' || l.level === 'info' ? '' : `${c.dim(l.level)} `}${line}\n`);
  }
}

export function renderSnippetResult({ body, o, prepared, extra }: RenderContext): void {
  const run = body as RunResult;
  if (run.error) {
    // the console lines say what happened before the error (the error itself: `failure`, on stderr)
    printLogs(o, run.logs ?? [], 'err');
    return;
  }
  const display = (extra.displayType as DisplayType | undefined) ?? (prepared as SnippetBody | undefined)?.display_type ?? byShape(run.output);
  const output = run.output;
  if (display === 'logs') return printLogs(o, run.logs ?? [], 'out');
  if (display === 'table' && byShape(output) === 'table') {
    const columns = columnsOf(output as unknown[]);
    return printTable(o, columns, output as unknown[], Object.fromEntries(columns.map((c) => [c, (r: unknown) => plain(o, (r as Record<string, unknown>)[c])])));
  }
  // a stat is one value; `{value, label}` (what a dashboard's stat widget takes) shows its value
  const stat = output && typeof output === 'object' && 'value' in output ? (output as { value: unknown }).value : output;
  if (display === 'stat' && (stat === null || typeof stat !== 'object')) {
    o.out.write(`${o.tty ? o.color.bold(plain(o, stat)) : plain(o, stat)}\n`);
    return;
  }
  // json, and any output that does not have the shape its display_type asks for
  o.out.write(`${JSON.stringify(output, null, 2) ?? 'null'}\n`);
}

/** A cell of a snippet's table: strings as they are (control characters made safe on a terminal), the rest as JSON; empty is `-` (dim). */
function plain(o: Output, v: unknown): string {
  if (v === undefined || v === null) return o.tty ? o.color.dim('-') : '';
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return o.tty ? terminalText(text) : text;
}

export function snippetFailure(body: unknown): CliError | null {
  const { error, state } = body as RunResult;
  if (!error) return null;
  const details = (error.details as { stack?: string } | null)?.stack;
  return new CliError(`snippet ${state ?? 'failed'}: ${error.code}: ${error.message}`, EXIT.ERROR, details ? details.split('\n').filter((l) => l.trim()).map((l) => `  ${l.trim()}`) : []);
}
