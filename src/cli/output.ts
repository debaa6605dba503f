// Terminal output: colours (picocolors, only on a terminal and never with NO_COLOR), the terminal's
// width, relative times, and the API's JSON (indented and coloured on a terminal, exact elsewhere).
// Tables and records are in table.ts. Results go to stdout; progress, prompts and errors to stderr.
import pc from 'picocolors';
import { CliError, EXIT } from './errors.js';

export type Colors = ReturnType<typeof pc.createColors>;

export interface Stream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface Output {
  out: Stream;
  err: Stream;
  /** stdout is a terminal: tables, relative times, colours, indented JSON */
  tty: boolean;
  /** stderr is a terminal: live progress line */
  errTty: boolean;
  color: Colors;
  errColor: Colors;
  /** columns of the terminal stdout / stderr is (80 when it does not say) */
  width(): number;
  errWidth(): number;
  now(): number;
}

/** A terminal's width when nothing says it (a pseudo-terminal of size 0, a stream without columns). */
const DEFAULT_WIDTH = 80;

/**
 * What the process writes to, and how. `streams` stand in for stdout and stderr (tests give fake
 * terminals of a chosen width). COLUMNS, when a positive integer, wins over what a terminal reports,
 * as in most command-line tools, so a width can be forced.
 */
export function createOutput(env: NodeJS.ProcessEnv = process.env, streams: { out?: Stream; err?: Stream } = {}): Output {
  const out = streams.out ?? process.stdout;
  const err = streams.err ?? process.stderr;
  const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== '';
  const tty = Boolean(out.isTTY);
  const errTty = Boolean(err.isTTY);
  const forced = /^[1-9][0-9]{0,4}$/.test(env.COLUMNS ?? '') ? Number(env.COLUMNS) : undefined;
  const widthOf = (s: Stream) => () => forced ?? (s.columns && s.columns > 0 ? s.columns : DEFAULT_WIDTH);
  return {
    out,
    err,
    tty,
    errTty,
    color: pc.createColors(tty && !noColor),
    errColor: pc.createColors(errTty && !noColor),
    width: widthOf(out),
    errWidth: widthOf(err),
    now: () => Math.floor(Date.now() / 1000),
  };
}

// Only the SGR sequences picocolors writes: data shown on a terminal has its control characters
// replaced first (terminalText), so no other escape reaches the screen.
// eslint-disable-next-line no-control-regex
export const ANSI = /\x1b\[[0-9;]*m/g;
// East Asian wide characters and emoji take two columns.
const WIDE = /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1faff}\u{20000}-\u{3fffd}]/u;
const charWidth = (ch: string) => (WIDE.test(ch) ? 2 : 1);

/** Columns a string takes on a terminal (colour sequences take none). */
export function visibleWidth(text: string): number {
  const plain = text.replace(ANSI, '');
  // eslint-disable-next-line no-control-regex
  if (/^[\x20-\x7e]*$/.test(plain)) return plain.length;
  let w = 0;
  for (const ch of plain) w += charWidth(ch);
  return w;
}

/** At most `max` columns of `text`, cut with `…`; colour sequences are kept and closed when cut. */
export function truncate(text: string, max: number): string {
  if (visibleWidth(text) <= max) return text;
  if (max <= 0) return '';
  let out = '';
  let w = 0;
  let coloured = false;
  for (const part of text.split(/(\x1b\[[0-9;]*m)/)) {
    if (part.startsWith('\x1b[')) {
      out += part;
      coloured = true;
      continue;
    }
    for (const ch of part) {
      if (w + charWidth(ch) > max - 1) return `${out}…${coloured ? '\x1b[0m' : ''}`;
      out += ch;
      w += charWidth(ch);
    }
  }
  return out;
}

/**
 * Text from the API made safe for a terminal: control characters (an escape sequence in a name or
 * comment would act on the terminal; a newline or tab would break a table) become a space or `?`.
 */
export function terminalText(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => (c === '\t' || c === '\n' || c === '\r' ? ' ' : '?'));
}

/** "3m ago", "in 2h", "just now" from Unix seconds. */
export function relativeTime(at: number, now: number): string {
  const d = now - at;
  const abs = Math.abs(d);
  if (abs < 10) return 'just now';
  const [n, unit] =
    abs < 60 ? [abs, 's'] : abs < 3600 ? [Math.floor(abs / 60), 'm'] : abs < 86400 ? [Math.floor(abs / 3600), 'h'] : abs < 86400 * 60 ? [Math.floor(abs / 86400), 'd'] : [Math.floor(abs / (86400 * 30)), 'mo'];
  return d >= 0 ? `${n}${unit} ago` : `in ${n}${unit}`;
}

export function isoTime(at: number): string {
  return new Date(at * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * The value at a dotted path (`plan.tier`, `data.0.id`): own fields of objects and numeric indexes
 * of arrays only (so `constructor` or `length` are no field); undefined when there is none.
 */
export function pick(obj: unknown, path: string): unknown {
  let v: unknown = obj;
  for (const k of path.split('.')) {
    if (Array.isArray(v)) v = /^(0|[1-9][0-9]*)$/.test(k) ? v[Number(k)] : undefined;
    else if (v && typeof v === 'object' && Object.hasOwn(v, k)) v = (v as Record<string, unknown>)[k];
    else return undefined;
  }
  return v;
}

/** Unix-seconds fields: `*_at`, and a subscription's period bounds (issue 34 made them seconds too). */
const isTimeField = (key: string) => /(^|_)at$|^current_period_(start|end)$/.test(key.split('.').pop() ?? '');

/** One value as a table cell or record value. */
export function cell(o: Output, key: string, value: unknown, mode: 'table' | 'record'): string {
  if (value === null || value === undefined) return o.color.dim('-');
  if (typeof value === 'number' && isTimeField(key)) {
    if (!o.tty) return isoTime(value);
    return mode === 'table' ? relativeTime(value, o.now()) : `${isoTime(value)} ${o.color.dim(`(${relativeTime(value, o.now())})`)}`;
  }
  // a few fields are ISO 8601 text rather than Unix seconds (a member's joined_at)
  if (typeof value === 'string' && o.tty && mode === 'table' && isTimeField(key) && /^\d{4}-\d\d-\d\dT/.test(value) && !Number.isNaN(Date.parse(value))) {
    return relativeTime(Math.floor(Date.parse(value) / 1000), o.now());
  }
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  const safe = o.tty ? terminalText(text) : text;
  if (typeof value === 'string' && (key === 'state' || key === 'status' || key.endsWith('.state'))) return stateColor(o.color, safe);
  return safe;
}

export function stateColor(c: Colors, state: string): string {
  if (/^(SUCCEEDED|active|healthy|completed|ready)$/i.test(state)) return c.green(state);
  if (/^(FAILED|CANCELLED|failed|error|degraded|unhealthy)$/i.test(state)) return c.red(state);
  if (/^(RUNNING|pending|running|provisioning|syncing|deleting|releasing)$/i.test(state)) return c.yellow(state);
  return state;
}

/** JSON indented by two spaces (as JSON.stringify) with keys, strings, numbers, booleans and null coloured as gh does. */
export function colorJson(c: Colors, value: unknown, pad = ''): string {
  if (value === null) return c.dim('null');
  if (typeof value === 'string') return c.green(JSON.stringify(value));
  if (typeof value === 'number') return c.cyan(JSON.stringify(value));
  if (typeof value === 'boolean') return c.yellow(String(value));
  const inner = `${pad}  `;
  if (Array.isArray(value)) return value.length ? `[\n${value.map((v) => inner + colorJson(c, v, inner)).join(',\n')}\n${pad}]` : '[]';
  const entries = Object.entries(value as Record<string, unknown>);
  if (!entries.length) return '{}';
  return `{\n${entries.map(([k, v]) => `${inner}${c.bold(c.blue(JSON.stringify(k)))}: ${colorJson(c, v, inner)}`).join(',\n')}\n${pad}}`;
}

/**
 * What --json prints: the API's JSON text exactly when piped (one line, as received); on a terminal
 * indented and coloured (plain with NO_COLOR). Text that is not JSON is printed as it is.
 */
export function printJson(o: Output, text: string): void {
  if (!text) return;
  if (o.tty) {
    try {
      o.out.write(`${colorJson(o.color, JSON.parse(text))}\n`);
      return;
    } catch {
      // not JSON (or nested deeper than the stack allows): as received
    }
  }
  o.out.write(text.endsWith('\n') ? text : `${text}\n`);
}

/**
 * --field PATH: one field of what --json prints (`text`), on one line: a string bare, anything
 * else as compact JSON (numbers, booleans and null as their text). A missing field is exit 1.
 */
export function printField(o: Output, text: string, path: string): void {
  let value: unknown;
  try {
    value = pick(JSON.parse(text), path);
  } catch {
    value = undefined;
  }
  if (value === undefined) throw new CliError(`no field "${path}" in the response`, EXIT.ERROR);
  o.out.write(`${typeof value === 'string' ? value : JSON.stringify(value)}\n`);
}
