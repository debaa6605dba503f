// Tables and records. On a terminal: borderless aligned columns like gh and kubectl, fitted to the
// terminal's width (columns left out by priority, long text cut with …; ids and URLs never cut,
// because people copy them); a record as `key  value` lines with its lists of objects as tables
// below. Piped: tab-separated, header-less lines of every column (for cut and awk) and the flat
// `key  value` record, whatever the width, so scripts see the same output everywhere.
import { ANSI, cell, pick, terminalText, truncate, visibleWidth, type Output } from './output.js';

export type Cells = Record<string, (row: unknown, o: Output) => string>;

/** How a table shows on a terminal (piped output ignores it). */
export interface TableLayout {
  /** the columns shown instead of the piped ones (computed columns of `cells` allowed) */
  screen?: string[];
  /** the columns left out first when the terminal is too narrow, in order; default: from the last */
  drop?: string[];
  /** header labels instead of the field name in capitals */
  headers?: Record<string, string>;
  /** columns never cut (besides ids and URLs) */
  keep?: string[];
}

/** A list of objects inside a record shown as a table: which of its fields, laid out how. */
export type RecordTable = TableLayout & { columns?: string[]; cells?: Cells };

/** A column narrowed to fit is cut to no fewer columns than this (or its header, if wider). */
const MIN_CUT_WIDTH = 20;
/** ... and, once no column is left to leave out, to no fewer than this. */
const LAST_CUT_WIDTH = 5;
const GAP = 2;

/** Ids and URLs keep their full width: they are what people copy out of a table. */
const isKept = (column: string, layout: TableLayout) => column === 'id' || /(_id|\.id|url)$/.test(column) || Boolean(layout.keep?.includes(column));

/** The columns of rows of objects: every key of every row, in first-seen order. */
export function columnsOf(rows: unknown[]): string[] {
  const keys = new Set<string>();
  for (const r of rows) if (r && typeof r === 'object') for (const k of Object.keys(r)) keys.add(k);
  return [...keys];
}

/**
 * Which columns to show and how wide, so a line takes at most `avail` columns: columns are left out
 * in `drop` order while even the narrowest cut of the rest (`floor`) does not fit (one left out early
 * comes back if it fits once later ones are gone); then the widest cuttable columns give up one
 * column at a time, down to `floor`, and when nothing is left to leave out, down to `last`. What
 * still does not fit (ids alone wider than the terminal) wraps.
 */
function fit(columns: string[], natural: number[], floor: number[], last: number[], avail: number, drop: string[]): { shown: number[]; widths: number[] } {
  const all = columns.map((_, i) => i);
  const need = (set: number[]) => set.reduce((sum, i) => sum + floor[i]!, 0) + GAP * (set.length - 1);
  const order = drop.map((c) => columns.indexOf(c)).filter((i) => i >= 0);
  let shown = all;
  let dropped = 0;
  while (need(shown) > avail && dropped < order.length) {
    const gone = order[dropped++];
    shown = shown.filter((i) => i !== gone);
  }
  for (let j = dropped - 2; j >= 0; j--) {
    const back = all.filter((i) => shown.includes(i) || i === order[j]);
    if (need(back) <= avail) shown = back;
  }
  const widths = [...natural];
  let excess = shown.reduce((sum, i) => sum + natural[i]!, 0) + GAP * (shown.length - 1) - avail;
  for (const min of [floor, last]) {
    while (excess > 0) {
      let widest = -1;
      for (const i of shown) if (widths[i]! > min[i]! && (widest < 0 || widths[i]! > widths[widest]!)) widest = i;
      if (widest < 0) break;
      widths[widest]!--;
      excess--;
    }
  }
  return { shown, widths };
}

/**
 * Aligned columns fitted to the terminal; tab-separated, header-less lines of `columns` elsewhere.
 * `cells` computes the columns it names from the whole row.
 */
export function printTable(o: Output, columns: string[], rows: unknown[], cells: Cells = {}, layout: TableLayout = {}): void {
  const at = (r: unknown, c: string) => (cells[c] ? cells[c](r, o) : cell(o, c, pick(r, c), 'table'));
  if (!o.tty) {
    for (const r of rows) o.out.write(`${columns.map((c) => at(r, c).replace(ANSI, '')).join('\t')}\n`);
    return;
  }
  if (rows.length === 0) {
    o.out.write(`${o.color.dim('no results')}\n`);
    return;
  }
  const screen = layout.screen ?? columns;
  const header = screen.map((c) => layout.headers?.[c] ?? terminalText(c).replace(/_at$/, '').replace(/[._]/g, ' ').toUpperCase());
  const body = rows.map((r) => screen.map((c) => at(r, c)));
  const natural = screen.map((_, i) => Math.max(visibleWidth(header[i]!), ...body.map((line) => visibleWidth(line[i]!))));
  const cutTo = (min: number) => screen.map((c, i) => (isKept(c, layout) ? natural[i]! : Math.min(natural[i]!, Math.max(min, visibleWidth(header[i]!)))));
  const { shown, widths } = fit(screen, natural, cutTo(MIN_CUT_WIDTH), cutTo(LAST_CUT_WIDTH), o.width(), layout.drop ?? [...screen].slice(1).reverse());
  const line = (values: string[], paint: (s: string) => string = (s) => s) =>
    shown.map((i, n) => {
      const v = paint(truncate(values[i]!, widths[i]!));
      return n === shown.length - 1 ? v : v + ' '.repeat(widths[i]! - visibleWidth(v));
    }).join(' '.repeat(GAP));
  o.out.write(`${line(header, o.color.bold)}\n`);
  for (const values of body) o.out.write(`${line(values)}\n`);
}

/**
 * A single resource: `key  value` lines, nested objects flattened with dots. A list of objects
 * (an operation's steps, an install's urls) is, on a terminal, a table below the lines, laid out
 * by `tables` (keyed by the list's field name) or with every key as a column; piped, `key[i].field`
 * lines as the rest.
 */
export function printRecord(o: Output, value: unknown, tables: Record<string, RecordTable> = {}): void {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
    o.out.write(`${o.tty ? terminalText(text) : text}\n`);
    return;
  }
  const lines: [string, string][] = [];
  const lists: [string, Record<string, unknown>[]][] = [];
  const walk = (obj: Record<string, unknown>, prefix: string) => {
    for (const [k, v] of Object.entries(obj)) {
      const key = prefix + k;
      if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length && prefix.split('.').length < 3) walk(v as Record<string, unknown>, `${key}.`);
      else if (o.tty && Array.isArray(v) && v.length && v.every((x) => x && typeof x === 'object' && !Array.isArray(x))) lists.push([key, v]);
      else if (Array.isArray(v) && v.length && v.every((x) => x && typeof x === 'object')) {
        v.forEach((item, i) => walk(item as Record<string, unknown>, `${key}[${i}].`));
      } else lines.push([key, cell(o, key, v, 'record')]);
    }
  };
  walk(value as Record<string, unknown>, '');
  const w = Math.max(0, ...lines.map(([k]) => k.length));
  for (const [k, v] of lines) o.out.write(`${o.color.bold(k.padEnd(w))}  ${v}\n`);
  for (const [key, items] of lists) {
    const layout = tables[key.split('.').pop()!] ?? {};
    const present = columnsOf(items);
    o.out.write(`\n${o.color.bold(terminalText(key))}\n`);
    printTable(o, layout.columns?.filter((c) => present.includes(c) || layout.cells?.[c]) ?? present, items, layout.cells, layout);
  }
}
