// Refuses the regular expressions of untrusted input schemas that can backtrack exponentially
// (ReDoS). JavaScript's engine backtracks, and one install request with a crafted value could
// otherwise stall the process for every tenant. Exponential backtracking needs a loop whose body
// can match the same text in more than one way; this check accepts a loop (`*`, `+`, `{n,}`,
// `{n,m}` with m > 1) only when its body is unambiguous by construction:
//   - a body without any quantifier or alternation (`(ab)*`, `(\.com)?`), or
//   - an alternation of fixed literals starting with distinct characters (`(foo|bar)+`), or
//   - a flat sequence of single-character atoms that starts with a literal guard character no
//     other atom of the body can match, where a quantified atom never overlaps the atoms that
//     may follow it (`(-[a-z0-9]+)*`, `(\.[a-z]+)*`, `(,\s*[0-9]+)*`).
// Backreferences are refused. What remains possible is polynomial backtracking outside loops
// (`a*a*a*b`), bounded by the size of the values (the request body limit). Run it on patterns that
// already compiled (`new RegExp(p, 'u')`), so the syntax is known to be valid.

interface CharAtom { kind: 'char'; src: string; literal: string | null; min: number; max: number }
interface GroupAtom { kind: 'group'; alts: Item[][]; min: number; max: number; lookaround: boolean }
interface ZeroAtom { kind: 'zero'; min: number; max: number }
type Item = CharAtom | GroupAtom | ZeroAtom;

class Unsafe extends Error {}

const CLASS_ESCAPES = new Set(['d', 'D', 'w', 'W', 's', 'S']);
const ZERO_ESCAPES = new Set(['b', 'B']);
const CONTROL: Record<string, string> = { t: '\t', n: '\n', v: '\v', f: '\f', r: '\r', '0': '\0' };

function parse(pattern: string): Item[][] {
  const cs = Array.from(pattern);
  let i = 0;
  const alternatives = (): Item[][] => {
    const alts: Item[][] = [[]];
    while (i < cs.length && cs[i] !== ')') {
      if (cs[i] === '|') { i++; alts.push([]); continue; }
      alts[alts.length - 1]!.push(item());
    }
    return alts;
  };
  const escape = (): CharAtom | ZeroAtom => {
    const c = cs[i + 1] ?? '';
    const start = i;
    i += 2;
    if (/[1-9]/.test(c) || c === 'k') throw new Unsafe('backreferences are not allowed');
    if (ZERO_ESCAPES.has(c)) return { kind: 'zero', min: 1, max: 1 };
    if (CLASS_ESCAPES.has(c)) return { kind: 'char', src: `\\${c}`, literal: null, min: 1, max: 1 };
    if (c === 'p' || c === 'P') {
      while (i < cs.length && cs[i - 1] !== '}') i++;
      return { kind: 'char', src: cs.slice(start, i).join(''), literal: null, min: 1, max: 1 };
    }
    let literal: string;
    if (c === 'x') { literal = String.fromCodePoint(parseInt(cs.slice(i, i + 2).join(''), 16)); i += 2; }
    else if (c === 'u' && cs[i] === '{') { const end = cs.indexOf('}', i); literal = String.fromCodePoint(parseInt(cs.slice(i + 1, end).join(''), 16)); i = end + 1; }
    else if (c === 'u') { literal = String.fromCodePoint(parseInt(cs.slice(i, i + 4).join(''), 16)); i += 4; }
    else if (c === 'c') { literal = String.fromCodePoint((cs[i] ?? 'A').codePointAt(0)! % 32); i += 1; }
    else literal = CONTROL[c] ?? c;
    return { kind: 'char', src: cs.slice(start, i).join(''), literal, min: 1, max: 1 };
  };
  const atom = (): Item => {
    const c = cs[i]!;
    if (c === '(') {
      i++;
      let lookaround = false;
      if (cs[i] === '?') {
        const head = cs.slice(i, i + 3).join('');
        lookaround = /^\?(=|!|<=|<!)/.test(head);
        if (head.startsWith('?<') && !lookaround) { while (cs[i] !== '>') i++; i++; }
        else i += head.startsWith('?<') ? 3 : 2;
      }
      const alts = alternatives();
      i++; // ')'
      return { kind: 'group', alts, min: 1, max: 1, lookaround };
    }
    if (c === '[') {
      const start = i++;
      if (cs[i] === '^') i++;
      while (i < cs.length && cs[i] !== ']') i += cs[i] === '\\' ? 2 : 1;
      i++;
      return { kind: 'char', src: cs.slice(start, i).join(''), literal: null, min: 1, max: 1 };
    }
    if (c === '\\') return escape();
    i++;
    if (c === '^' || c === '$') return { kind: 'zero', min: 1, max: 1 };
    if (c === '.') return { kind: 'char', src: '.', literal: null, min: 1, max: 1 };
    return { kind: 'char', src: /[\\^$.*+?()[\]{}|/]/.test(c) ? `\\${c}` : c, literal: c, min: 1, max: 1 };
  };
  const item = (): Item => {
    const a = atom();
    const q = cs[i];
    let quantifier = false;
    if (q === '*' || q === '+' || q === '?') {
      i++;
      quantifier = true;
      a.min = q === '+' ? 1 : 0;
      a.max = q === '?' ? 1 : Infinity;
    } else if (q === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(cs.slice(i, i + 40).join(''));
      if (m) {
        i += m[0].length;
        quantifier = true;
        a.min = Number(m[1]);
        a.max = m[2] === undefined ? a.min : m[3] === '' ? Infinity : Number(m[3]);
      }
    }
    // A lazy quantifier (`+?`) backtracks the same way.
    if (quantifier && cs[i] === '?') i++;
    return a;
  };
  return alternatives();
}

const quantified = (x: Item) => x.min !== x.max;

function hasQuantifierOrAlternation(alts: Item[][]): boolean {
  if (alts.length > 1) return true;
  return alts.some((seq) => seq.some((x) => quantified(x) || (x.kind === 'group' && hasQuantifierOrAlternation(x.alts))));
}

/** Whether two single-character atoms can match a common character (checked over the BMP and a few astral samples). */
function makeOverlap() {
  const tests = new Map<string, RegExp>();
  const bits = new Map<string, Uint8Array>();
  const re = (src: string) => tests.get(src) ?? tests.set(src, new RegExp(`^${src}$`, 'u')).get(src)!;
  const samples = ['\u{1F600}', '\u{1D49C}', '\u{20000}'];
  const bitsOf = (src: string) => {
    let b = bits.get(src);
    if (b) return b;
    if (bits.size >= 64) throw new Unsafe('too many character classes in repeated groups to check');
    const r = re(src);
    b = new Uint8Array(0x10000 + samples.length);
    for (let c = 0; c < 0x10000; c++) b[c] = r.test(String.fromCharCode(c)) ? 1 : 0;
    samples.forEach((s, k) => { b![0x10000 + k] = r.test(s) ? 1 : 0; });
    bits.set(src, b);
    return b;
  };
  return (a: CharAtom, b: CharAtom): boolean => {
    if (a.literal !== null) return re(b.src).test(a.literal);
    if (b.literal !== null) return re(a.src).test(b.literal);
    const x = bitsOf(a.src);
    const y = bitsOf(b.src);
    return x.some((v, k) => v === 1 && y[k] === 1);
  };
}

function checkLoopBody(alts: Item[][], overlap: (a: CharAtom, b: CharAtom) => boolean): void {
  if (!hasQuantifierOrAlternation(alts)) return;
  const fail = () => { throw new Unsafe('a repeated group must not be able to match the same text in two ways (see the input_schema description)'); };
  if (alts.length > 1) {
    // Fixed literals starting with distinct characters.
    const firsts = new Set<string>();
    for (const seq of alts) {
      if (!seq.every((x): x is CharAtom => x.kind === 'char' && x.literal !== null && !quantified(x))) fail();
      const first = (seq[0] as CharAtom | undefined)?.literal;
      if (first === undefined || first === null || firsts.has(first)) fail();
      firsts.add(first!);
    }
    return;
  }
  const seq = alts[0]!;
  if (!seq.every((x): x is CharAtom => x.kind === 'char')) fail();
  const chars = seq as CharAtom[];
  const guard = chars[0];
  if (!guard || guard.literal === null || quantified(guard) || guard.min !== 1) fail();
  for (const x of chars.slice(1)) if (overlap(guard!, x)) fail();
  chars.forEach((x, k) => {
    if (!quantified(x)) return;
    for (const next of chars.slice(k + 1)) {
      if (overlap(x, next)) fail();
      if (next.min >= 1) break;
    }
  });
}

function walk(alts: Item[][], overlap: (a: CharAtom, b: CharAtom) => boolean): void {
  for (const seq of alts) {
    for (const x of seq) {
      if (x.kind !== 'group') continue;
      walk(x.alts, overlap);
      if (x.max > 1) checkLoopBody(x.alts, overlap);
    }
  }
}

/** Null when the pattern is accepted, else why it is refused. */
export function unsafePatternReason(pattern: string): string | null {
  try {
    walk(parse(pattern), makeOverlap());
    return null;
  } catch (err) {
    if (err instanceof Unsafe) return err.message;
    return 'the pattern could not be analysed';
  }
}
