// The approval card's text in the web app (web/src/components/RevealedText.tsx): the pieces it
// renders from revealPieces, the one function the CLI uses too (src/cli/reveal-invisible.ts).
// Each invisible character is a piece of its own, marked `invisible` (styled apart) with a name for
// its tooltip; visible text, newlines and tabs are kept as they are; joined, the pieces read as
// revealInvisible's text.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { revealInvisible, revealPieces } from '../../src/cli/reveal-invisible.js';

test('line and paragraph separators, bidirectional controls, zero-width and control characters become marked pieces', () => {
  const text = 'if (user === "admin\u202e\u2066") {\u2028 grant(); }\n\t// ok\u200b\ufeff\u0000\u061c\u200e\u200f\u009b😀';
  const pieces = revealPieces(text);
  assert.deepEqual(pieces.filter((p) => p.invisible).map((p) => p.text), [
    '⟨U+202E⟩', '⟨U+2066⟩', '⟨U+2028⟩', '⟨U+200B⟩', '⟨U+FEFF⟩', '⟨U+0000⟩', '⟨U+061C⟩', '⟨U+200E⟩', '⟨U+200F⟩', '⟨U+009B⟩',
  ]);
  assert.equal(pieces.find((p) => p.text === '⟨U+202E⟩')!.name, 'U+202E right-to-left override');
  assert.equal(pieces.find((p) => p.text === '⟨U+2028⟩')!.name, 'U+2028 line separator');
  assert.equal(pieces.map((p) => p.text).join(''), revealInvisible(text));
  assert.equal(revealInvisible(text), 'if (user === "admin⟨U+202E⟩⟨U+2066⟩") {⟨U+2028⟩ grant(); }\n\t// ok⟨U+200B⟩⟨U+FEFF⟩⟨U+0000⟩⟨U+061C⟩⟨U+200E⟩⟨U+200F⟩⟨U+009B⟩😀');
  for (const p of pieces.filter((x) => !x.invisible)) assert.doesNotMatch(p.text, /[\u2028\u202e\u2066\u200b\ufeff\0]/);
  assert.deepEqual(revealPieces('plain\ttext\n'), [{ text: 'plain\ttext\n', invisible: false }]);
  assert.deepEqual(revealPieces(''), []);
});

test('the approval card and the tool code render through RevealedText, which uses that function', () => {
  const component = readFileSync(new URL('../../web/src/components/RevealedText.tsx', import.meta.url), 'utf8');
  assert.match(component, /from '..\/..\/..\/src\/cli\/reveal-invisible\.ts'/);
  const card = readFileSync(new URL('../../web/src/pages/agents/Decisions.tsx', import.meta.url), 'utf8');
  assert.match(card, /<RevealedText text=\{code \?\? ''\} \/>/);
  assert.match(card, /<RevealedText text=\{a\.summary\} \/>/);
});
