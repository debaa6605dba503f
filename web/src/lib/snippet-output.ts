// How a snippet's output reads on a page (API.md 8.3): its display_type picks the rendering, as the
// CLI's `svc snippets run` does: `table` (an array of objects: one column per key, in first-seen
// order), `stat` (one value, or `{value, label}` as a dashboard's stat widget takes it), `json`, or
// `logs` (the console lines). Output without the shape its display_type asks for is shown as JSON
// with the reason, so a person always sees what the code returned. Pure: unit-tested without a DOM.

export type DisplayType = 'table' | 'stat' | 'json' | 'logs';

export const DISPLAY_TYPES: [DisplayType, string][] = [
  ['table', 'Table'],
  ['stat', 'Stat'],
  ['json', 'JSON'],
  ['logs', 'Logs'],
];

export function displayLabel(type: string): string {
  return DISPLAY_TYPES.find(([t]) => t === type)?.[1] ?? type;
}

export interface LogLine {
  level: string;
  message: string;
  at_ms: number;
}

export interface Table {
  columns: string[];
  rows: string[][];
}

export interface Stat {
  value: string;
  label?: string;
}

export type Shaped =
  | { kind: 'table'; table: Table }
  | { kind: 'stat'; stat: Stat }
  | { kind: 'logs'; lines: LogLine[] }
  | { kind: 'json'; text: string; mismatch?: string };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isScalar(v: unknown): v is string | number | boolean | null {
  return v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/** A table cell: strings as they are, nothing as empty, numbers and booleans in words, the rest as JSON. */
export function cellText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/**
 * Rows and columns of a table output: an array of objects (columns: every key of every row, in
 * first-seen order; a row without a key has an empty cell), or an array of plain values (one
 * column, "Value"). Anything else is not a table: null.
 */
export function tableOf(output: unknown): Table | null {
  if (!Array.isArray(output)) return null;
  if (output.every(isRecord)) {
    const keys = new Set<string>();
    for (const row of output) for (const k of Object.keys(row)) keys.add(k);
    const columns = [...keys];
    return { columns, rows: output.map((row) => columns.map((c) => cellText(row[c]))) };
  }
  if (output.every(isScalar)) return { columns: ['Value'], rows: output.map((v) => [cellText(v)]) };
  return null;
}

/** One value as a stat: a plain value, or `{value, label?}` with a plain value. Anything else: null. */
export function statOf(output: unknown, locale?: string): Stat | null {
  const [value, label] = isRecord(output) && 'value' in output ? [output.value, output.label] : [output, undefined];
  if (!isScalar(value) && value !== undefined) return null;
  const text = typeof value === 'number' ? new Intl.NumberFormat(locale, { maximumFractionDigits: 6 }).format(value) : value === null || value === undefined ? '—' : String(value);
  return typeof label === 'string' && label !== '' ? { value: text, label } : { value: text };
}

/** The output as pretty JSON (undefined, what code that returns nothing gives, as null). */
export function jsonText(output: unknown): string {
  return JSON.stringify(output, null, 2) ?? 'null';
}

/** The rendering of a run's output by the snippet's display_type. */
export function shapeOutput(displayType: DisplayType, output: unknown, logs: LogLine[] = [], locale?: string): Shaped {
  switch (displayType) {
    case 'logs':
      return { kind: 'logs', lines: logs };
    case 'table': {
      const table = tableOf(output);
      return table ? { kind: 'table', table } : { kind: 'json', text: jsonText(output), mismatch: 'The output is not a list of rows, so it is shown as JSON.' };
    }
    case 'stat': {
      const stat = statOf(output, locale);
      return stat ? { kind: 'stat', stat } : { kind: 'json', text: jsonText(output), mismatch: 'The output is not one value, so it is shown as JSON.' };
    }
    default:
      return { kind: 'json', text: jsonText(output) };
  }
}

/** How many lines of each level, for the console's summary ("3 lines, 1 warning, 1 error"). */
export function logSummary(lines: LogLine[]): string {
  const warnings = lines.filter((l) => l.level === 'warn').length;
  const errors = lines.filter((l) => l.level === 'error').length;
  const parts = [`${lines.length} ${lines.length === 1 ? 'line' : 'lines'}`];
  if (warnings) parts.push(`${warnings} ${warnings === 1 ? 'warning' : 'warnings'}`);
  if (errors) parts.push(`${errors} ${errors === 1 ? 'error' : 'errors'}`);
  return parts.join(', ');
}
