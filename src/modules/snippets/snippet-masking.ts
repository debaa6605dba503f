// Secret values a run read never leave it in plain text (issue 20), as CI systems mask secrets in
// build logs: every value a run's `platform.request` got from `:access` is replaced by `[masked]`
// wherever it appears in the run's output, console lines and error, before the run is stored or
// answered. The output is at most 1 MiB and a run reads at most 50 values, so a pass per value
// (a native substring search first) stays linear in the size of what is masked.
//
// Also masked: the value's JSON-escaped, URL-encoded and base64 (standard and URL-safe, without
// padding) forms, which a snippet gets from JSON.stringify, encodeURIComponent or a hand-written
// encoder. A value shorter than MIN_MASKED_SUBSTRING characters is masked only where it stands
// alone (not next to a letter, digit or underscore): masking "abc" inside every word would wreck
// the output and, by where the marks fall, tell the value anyway. Such short secrets are weak
// whatever happens; docs/snippets.md says so.
import type { JsonValue, LogLine, RunResult } from '../../sandbox/index.js';

export const MASK = '[masked]';
/** Values at least this long are masked wherever they occur; shorter ones only as whole tokens. */
export const MIN_MASKED_SUBSTRING = 8;

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** The forms of a value that are masked: itself and its usual encodings. */
function formsOf(value: string): string[] {
  const bytes = Buffer.from(value);
  const forms = [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value), bytes.toString('base64').replace(/=+$/, ''), bytes.toString('base64url')];
  return [...new Set(forms)].filter((form) => form.length > 0);
}

/** True for the body of a `:access` answer: `{secret_id, version_id, version_number, value}`. */
function accessedValue(body: JsonValue): string | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  return typeof body.secret_id === 'string' && typeof body.version_id === 'string' && typeof body.value === 'string' ? body.value : null;
}

export class SecretMask {
  private readonly anywhere = new Set<string>();
  private readonly alone = new Set<string>();
  private aloneRegExp: RegExp | null = null;
  private sortedAnywhere: string[] = [];

  /** Records the secret value in a response the run received, if the response is a value read. */
  noteResponse(body: JsonValue): void {
    const value = accessedValue(body);
    if (value === null || value.length === 0) return;
    const target = value.length >= MIN_MASKED_SUBSTRING ? this.anywhere : this.alone;
    for (const form of formsOf(value)) target.add(form);
    // Longest first: a value that contains another is masked whole.
    this.sortedAnywhere = [...this.anywhere].sort((a, b) => b.length - a.length);
    const alone = [...this.alone].sort((a, b) => b.length - a.length).map(escapeRegExp);
    this.aloneRegExp = alone.length ? new RegExp(`(?<![\\p{L}\\p{N}_])(?:${alone.join('|')})(?![\\p{L}\\p{N}_])`, 'gu') : null;
  }

  get empty(): boolean {
    return this.anywhere.size === 0 && this.alone.size === 0;
  }

  /** The run read a secret value: what it left behind is secret-derived (masking cannot catch every form). */
  get read(): boolean {
    return !this.empty;
  }

  text(text: string): string {
    let out = text;
    for (const form of this.sortedAnywhere) {
      if (out.includes(form)) out = out.split(form).join(MASK);
    }
    if (this.aloneRegExp) out = out.replace(this.aloneRegExp, MASK);
    return out;
  }

  /** Masks every string and key of a JSON value, in place where it can (an explicit stack: any depth). */
  json(value: JsonValue): JsonValue {
    if (typeof value === 'string') return this.text(value);
    const todo: JsonValue[] = [value];
    while (todo.length > 0) {
      const item = todo.pop()!;
      if (item === null || typeof item !== 'object') continue;
      if (Array.isArray(item)) {
        for (let i = 0; i < item.length; i++) {
          const child = item[i]!;
          if (typeof child === 'string') item[i] = this.text(child);
          else todo.push(child);
        }
        continue;
      }
      const entries = Object.entries(item);
      const keys = entries.map(([key]) => this.text(key));
      const renamed = keys.some((key, i) => key !== entries[i]![0]);
      if (renamed) for (const [key] of entries) delete item[key];
      entries.forEach(([key, child], i) => {
        const masked = typeof child === 'string' ? this.text(child) : child;
        if (typeof child !== 'string') todo.push(child);
        // defineProperty: a key named __proto__ stays an own property.
        if (renamed || masked !== child) Object.defineProperty(item, keys[i]!, { value: masked, enumerable: true, writable: true, configurable: true });
      });
    }
    return value;
  }

  /** The run's result as it may be stored and answered. */
  result(result: RunResult): RunResult {
    if (this.empty) return result;
    const logs: LogLine[] = result.logs.map((line) => ({ ...line, message: this.text(line.message) }));
    if (result.ok) return { ...result, output: this.json(result.output), logs };
    const error = { ...result.error, message: this.text(result.error.message), details: this.json(result.error.details) as typeof result.error.details };
    return { ...result, error, logs };
  }
}
