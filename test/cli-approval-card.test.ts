// An approval card on a terminal and in a pipe (svc chat, svc approval-requests get): line and
// paragraph separators, bidirectional controls, zero-width characters, the byte order mark and
// controls other than newline and tab are shown as `⟨U+XXXX⟩` markers (highlighted on a colour
// terminal), in the code and in the summary, so a person approves exactly what runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { codeBlock, renderApproval, revealedText } from '../src/cli/agent-view.js';
import { createOutput } from '../src/cli/output.js';

const HIDDEN: [string, string][] = [
  ['\u2028', 'U+2028'], ['\u2029', 'U+2029'], ['\u202a', 'U+202A'], ['\u202b', 'U+202B'], ['\u202c', 'U+202C'], ['\u202d', 'U+202D'], ['\u202e', 'U+202E'],
  ['\u2066', 'U+2066'], ['\u2067', 'U+2067'], ['\u2068', 'U+2068'], ['\u2069', 'U+2069'], ['\u200e', 'U+200E'], ['\u200f', 'U+200F'], ['\u061c', 'U+061C'],
  ['\u200b', 'U+200B'], ['\u200c', 'U+200C'], ['\u200d', 'U+200D'], ['\ufeff', 'U+FEFF'], ['\u0000', 'U+0000'], ['\u001b', 'U+001B'], ['\r', 'U+000D'],
  ['\u007f', 'U+007F'], ['\u0085', 'U+0085'], ['\u009b', 'U+009B'], ['\u{e0041}', 'U+E0041'],
];

function fake(tty: boolean) {
  let text = '';
  return { stream: { write: (t: string) => (text += t), isTTY: tty, columns: tty ? 120 : undefined }, text: () => text };
}

test('every invisible character of the code and summary is a marker, on a terminal and in a pipe; newline and tab stay', () => {
  for (const tty of [true, false]) {
    for (const [char, name] of HIDDEN) {
      const code = `const a = "x${char}y";\n\treturn a;`;
      const out = fake(tty);
      const o = createOutput({ NO_COLOR: '1' }, { out: out.stream, err: fake(false).stream });
      renderApproval({ body: { id: 'apr_1', state: 'PENDING', summary: `Create the secret a${char}b`, code }, o, extra: {} });
      const text = out.text();
      assert.ok(text.includes(`x⟨${name}⟩y`), `${name} in the code (tty ${tty}): ${JSON.stringify(text)}`);
      assert.ok(text.includes(`a⟨${name}⟩b`), `${name} in the summary (tty ${tty}): ${JSON.stringify(text)}`);
      assert.ok(!text.includes(char), `${name} raw in the card`);
      assert.match(text, /│ [\t ]return a;/, 'the tab and the line break are kept (a tab reads as a space on a terminal)');
    }
  }
});

test('on a colour terminal a marker is highlighted, so it cannot pass for text typed to look like one', () => {
  const colors = createOutput({}, { out: { write: () => true, isTTY: true } }).color;
  const line = revealedText(colors, true, 'a\u202eb ⟨U+202E⟩ typed');
  assert.equal(line, `a${colors.inverse('⟨U+202E⟩')}b ⟨U+202E⟩ typed`);
  assert.notEqual(colors.inverse('x'), 'x', 'colours are on');
  assert.equal(codeBlock(colors, true, 'one\u2028two\nthree'), `  ${colors.dim('│')} one${colors.inverse('⟨U+2028⟩')}two\n  ${colors.dim('│')} three`);
});
