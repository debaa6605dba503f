// The provider's API key never leaves a model call in the answer either (issue 33): a model can be
// made to repeat what it was sent, and a server in between (a proxy, a misconfigured gateway) can
// echo a request header into the text. Errors are scrubbed in remote.ts; this scrubs the answer's
// text as it streams, and the strings of tool call arguments. The key and every 8-character piece
// of it become `[key]`, as in errors. Streamed text is split anywhere, so the end of a delta that
// could begin a piece of the key (at most 7 characters) waits for the next one: a piece cut in two
// is still found whole, and other text passes on at once.
import type { ModelStreamEvent } from './driver.js';

/** The key the SDKs get when there is none (remote.ts): nothing to scrub. */
const PLACEHOLDER_KEY = 'no-key';
const MARK = '[key]';

/** Which characters of `text` belong to an occurrence of a pattern. */
function coverage(text: string, patterns: string[]): Uint8Array {
  const covered = new Uint8Array(text.length);
  for (const pattern of patterns) {
    for (let at = text.indexOf(pattern); at >= 0; at = text.indexOf(pattern, at + 1)) covered.fill(1, at, at + pattern.length);
  }
  return covered;
}

/** The first `upTo` characters of `text`, each covered run replaced by one mark. */
function rendered(text: string, covered: Uint8Array, upTo: number): string {
  let out = '';
  for (let i = 0; i < upTo; i++) {
    if (!covered[i]) out += text[i];
    else if (i === 0 || !covered[i - 1]) out += MARK;
  }
  return out;
}

export class AnswerScrubber {
  private readonly patterns: string[];
  /** the most characters kept back from a delta: one less than the longest pattern */
  private readonly hold: number;
  private pending = '';

  constructor(key: string | null) {
    if (!key || key === PLACEHOLDER_KEY) this.patterns = [];
    else if (key.length >= 12) this.patterns = [...new Set(Array.from({ length: key.length - 7 }, (_, i) => key.slice(i, i + 8)))];
    else this.patterns = [key];
    this.hold = this.patterns.length ? Math.max(...this.patterns.map((p) => p.length)) - 1 : 0;
  }

  /** What of the answer so far may be passed on now (possibly ''); the rest waits for the next delta or `end`. */
  push(delta: string): string {
    if (this.patterns.length === 0) return delta;
    this.pending += delta;
    return this.take(false);
  }

  /** The text still held back, at the end of the answer. */
  end(): string {
    return this.take(true);
  }

  /** A whole string, scrubbed. */
  text(whole: string): string {
    if (this.patterns.length === 0) return whole;
    return rendered(whole, coverage(whole, this.patterns), whole.length);
  }

  /** Every string (and key) of a JSON value, scrubbed: a tool call's arguments. */
  json(value: Record<string, unknown>): Record<string, unknown> {
    if (this.patterns.length === 0) return value;
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') return this.text(v);
      if (Array.isArray(v)) return v.map(walk);
      if (v !== null && typeof v === 'object') {
        const out: Record<string, unknown> = {};
        for (const [k, child] of Object.entries(v)) Object.defineProperty(out, this.text(k), { value: walk(child), enumerable: true, writable: true, configurable: true });
        return out;
      }
      return v;
    };
    return walk(value) as Record<string, unknown>;
  }

  private take(all: boolean): string {
    const text = this.pending;
    const covered = coverage(text, this.patterns);
    // Held back: the shortest tail that begins a piece of the key (what the next delta may complete).
    // Every other match is wholly in the text already, so found now; `cut` never falls inside one.
    let cut = text.length;
    for (let from = Math.max(0, text.length - this.hold); !all && from < text.length; from++) {
      const tail = text.slice(from);
      if (this.patterns.some((p) => p.startsWith(tail))) {
        cut = from;
        break;
      }
    }
    while (cut > 0 && cut < text.length && covered[cut - 1] && covered[cut]) cut--;
    this.pending = text.slice(cut);
    return rendered(text, covered, cut);
  }
}

/** The text a scrubber still holds, as the last text event of an answer (also of one that failed: what the server said up to there). */
export function* heldText(scrubber: AnswerScrubber): Generator<ModelStreamEvent> {
  const rest = scrubber.end();
  if (rest) yield { type: 'text', text: rest };
}
