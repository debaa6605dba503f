// Text a person decides on (an approval card's code and summary, a tool call's code), with every
// invisible character shown as a marker (`⟨U+202E⟩`, styled apart), so what they read is exactly
// what runs. The rule is the CLI's own (src/cli/reveal-invisible.ts, a file with no imports).
import { revealPieces } from '../../../src/cli/reveal-invisible.ts';

export function RevealedText(props: { text: string }) {
  return (
    <>
      {revealPieces(props.text).map((p) =>
        p.invisible ? (
          <span class="invisible-char" title={p.name}>
            {p.text}
          </span>
        ) : (
          p.text
        ),
      )}
    </>
  );
}
