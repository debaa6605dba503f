// Characters a reader of an approval card cannot see, made visible: line and paragraph separators
// (line breaks to older JavaScript, nothing on most screens), bidirectional controls (they reorder
// what is shown, so code can read differently from how it runs), zero-width and other invisible
// characters, and control characters other than newline and tab. Each becomes a marker naming its
// code point, `⟨U+202E⟩`, so a person approves exactly what runs.
//
// Shared by the CLI (agent-view.ts, chat-turn.ts) and the web app (web/src/pages/agents): the web
// app imports this file, so it imports nothing and uses nothing of Node.

/**
 * C0 controls but tab and newline, DEL and C1 controls, soft hyphen, Arabic letter mark, Hangul
 * fillers, Mongolian vowel separator, zero-width space/non-joiner/joiner, left-to-right and
 * right-to-left marks, line and paragraph separators, bidirectional embeddings, overrides
 * (U+202A-U+202E) and isolates (U+2066-U+2069), word joiner and invisible operators, deprecated
 * format characters, byte order mark / zero-width no-break space, interlinear annotations, tag
 * characters and variation selectors of the supplement (both used to hide text), lone surrogates.
 */
const INVISIBLE =
  // eslint-disable-next-line no-control-regex, no-misleading-character-class
  /[\0-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\uffa0\ufeff\ufff9-\ufffb\u{e0000}-\u{e007f}\u{e0100}-\u{e01ef}\ud800-\udfff]/gu;

export interface TextPiece {
  text: string;
  /** true: the marker of one invisible character (the web app styles it apart) */
  invisible: boolean;
  /** an invisible character's description, e.g. "U+202E right-to-left override" (the web app's tooltip) */
  name?: string;
}

const NAMES: Record<number, string> = {
  0x2028: 'line separator', 0x2029: 'paragraph separator', 0x202a: 'left-to-right embedding', 0x202b: 'right-to-left embedding',
  0x202c: 'pop directional formatting', 0x202d: 'left-to-right override', 0x202e: 'right-to-left override',
  0x2066: 'left-to-right isolate', 0x2067: 'right-to-left isolate', 0x2068: 'first strong isolate', 0x2069: 'pop directional isolate',
  0x200e: 'left-to-right mark', 0x200f: 'right-to-left mark', 0x061c: 'Arabic letter mark', 0x200b: 'zero-width space',
  0x200c: 'zero-width non-joiner', 0x200d: 'zero-width joiner', 0x2060: 'word joiner', 0xfeff: 'zero-width no-break space (byte order mark)',
  0x00ad: 'soft hyphen', 0x000d: 'carriage return',
};

/** "U+202E right-to-left override": what an invisible character is. */
export function invisibleName(char: string): string {
  const cp = char.codePointAt(0)!;
  const kind = NAMES[cp] ?? (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ? 'control character' : 'invisible character');
  return `${invisibleMarker(char).slice(1, -1)} ${kind}`;
}

/** `⟨U+202E⟩`: the marker shown in place of an invisible character. */
export function invisibleMarker(char: string): string {
  return `⟨U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`;
}

/** The text as pieces: runs of visible text as they are, each invisible character as its marker. */
export function revealPieces(text: string): TextPiece[] {
  const pieces: TextPiece[] = [];
  let from = 0;
  for (const m of text.matchAll(INVISIBLE)) {
    if (m.index > from) pieces.push({ text: text.slice(from, m.index), invisible: false });
    pieces.push({ text: invisibleMarker(m[0]), invisible: true, name: invisibleName(m[0]) });
    from = m.index + m[0].length;
  }
  if (from < text.length) pieces.push({ text: text.slice(from), invisible: false });
  return pieces;
}

/** The text with each invisible character replaced by its marker. */
export function revealInvisible(text: string): string {
  return text.replace(INVISIBLE, invisibleMarker);
}
