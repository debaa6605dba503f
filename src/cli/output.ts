// Terminal output: colours (picocolors, only on a terminal and never with NO_COLOR), borderless
// aligned tables like gh and kubectl, key/value records, relative times. Results go to stdout;
// progress, prompts and errors to stderr.
import pc from 'picocolors';

export type Colors = ReturnType<typeof pc.createColors>;

export interface Stream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface Output {
  out: Stream;
  err: Stream;
  /** stdout is a terminal: tables, relative times, colours */
  tty: boolean;
  /** stderr is a terminal: live progress line */
  errTty: boolean;
  color: Colors;
  errColor: Colors;
  now(): number;
}

export function createOutput(env: NodeJS.ProcessEnv = process.env): Output {
  const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== '';
  const tty = Boolean(process.stdout.isTTY);
  const errTty = Boolean(process.stderr.isTTY);
  return {
    out: process.stdout,
    err: process.stderr,
    tty,
    errTty,
    color: pc.createColors(tty && !noColor),
    errColor: pc.createColors(errTty && !noColor),
    now: () => Math.floor(Date.now() / 1000),
  };
}

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;
const width = (s: string) => s.replace(ANSI, '').length;

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

/** Reads `a.b.c` out of an object. */
export function pick(obj: unknown, path: string): unknown {
  let v: unknown = obj;
  for (const k of path.split('.')) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

const isTimeField = (key: string) => /(^|_)at$/.test(key.split('.').pop() ?? '');

/** One value as a table cell or record value. */
export function cell(o: Output, key: string, value: unknown, mode: 'table' | 'record'): string {
  if (value === null || value === undefined) return o.color.dim('-');
  if (typeof value === 'number' && isTimeField(key)) {
    if (!o.tty) return isoTime(value);
    return mode === 'table' ? relativeTime(value, o.now()) : `${isoTime(value)} ${o.color.dim(`(${relativeTime(value, o.now())})`)}`;
  }
  if (typeof value === 'string' && (key === 'state' || key === 'status' || key.endsWith('.state'))) return stateColor(o.color, value);
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export function stateColor(c: Colors, state: string): string {
  if (/^(SUCCEEDED|active|healthy|completed|ready)$/i.test(state)) return c.green(state);
  if (/^(FAILED|CANCELLED|failed|error|degraded|unhealthy)$/i.test(state)) return c.red(state);
  if (/^(RUNNING|pending|running|provisioning|syncing|deleting|releasing)$/i.test(state)) return c.yellow(state);
  return state;
}

export type Cells = Record<string, (row: unknown, o: Output) => string>;

/**
 * Aligned columns on a terminal; tab-separated, header-less lines elsewhere (for cut and awk).
 * `cells` computes the columns it names from the whole row.
 */
export function printTable(o: Output, columns: string[], rows: unknown[], cells: Cells = {}): void {
  const at = (r: unknown, c: string) => (cells[c] ? cells[c](r, o) : cell(o, c, pick(r, c), 'table'));
  if (!o.tty) {
    for (const r of rows) o.out.write(`${columns.map((c) => at(r, c).replace(ANSI, '')).join('\t')}\n`);
    return;
  }
  if (rows.length === 0) {
    o.out.write(`${o.color.dim('no results')}\n`);
    return;
  }
  const header = columns.map((c) => o.color.bold(c.replace(/_at$/, '').replace(/[._]/g, ' ').toUpperCase()));
  const body = rows.map((r) => columns.map((c) => at(r, c)));
  const widths = columns.map((_, i) => Math.max(width(header[i]!), ...body.map((line) => width(line[i]!))));
  for (const line of [header, ...body]) {
    o.out.write(`${line.map((v, i) => (i === line.length - 1 ? v : v + ' '.repeat(widths[i]! - width(v)))).join('  ')}\n`);
  }
}

/** A single resource: `key  value` lines, nested objects flattened with dots. */
export function printRecord(o: Output, value: unknown): void {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    o.out.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);
    return;
  }
  const lines: [string, string][] = [];
  const walk = (obj: Record<string, unknown>, prefix: string) => {
    for (const [k, v] of Object.entries(obj)) {
      const key = prefix + k;
      if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length && prefix.split('.').length < 3) walk(v as Record<string, unknown>, `${key}.`);
      else if (Array.isArray(v) && v.length && v.every((x) => x && typeof x === 'object')) {
        v.forEach((item, i) => walk(item as Record<string, unknown>, `${key}[${i}].`));
      } else lines.push([key, cell(o, key, v, 'record')]);
    }
  };
  walk(value as Record<string, unknown>, '');
  const w = Math.max(...lines.map(([k]) => k.length));
  for (const [k, v] of lines) o.out.write(`${o.color.bold(k.padEnd(w))}  ${v}\n`);
}
