// The screen of `svc chat`: the model's text on stdout as it is written, without a newline until its
// message ends; tool lines, prompts and outcomes on stderr. Both usually share one terminal, so
// whatever is written next first ends the line left open on the other stream.
import { truncate, visibleWidth, type Output } from './output.js';

/**
 * Where the terminal's cursor is: the model's text is written without a newline until its message
 * ends, and a tool's line waits for its ✓; whatever comes next first ends the open line.
 */
export function transcript(o: Output) {
  let open: 'out' | 'err' | null = null;
  let width = 0;
  const close = () => {
    if (open) o[open].write('\n');
    open = null;
  };
  return {
    text(s: string) {
      if (!s) return;
      if (open === 'err') close();
      o.out.write(s);
      open = s.endsWith('\n') ? null : 'out';
    },
    endText: () => void (open === 'out' && close()),
    line(s: string) {
      close();
      o.err.write(`${s}\n`);
    },
    /** a line that a later `finish` completes */
    start(s: string) {
      close();
      o.err.write(s);
      open = 'err';
      width = visibleWidth(s);
    },
    finish(s: string) {
      const room = o.errTty ? Math.max(12, o.errWidth() - 2 - (open === 'err' ? width : 2)) : 80;
      if (open === 'err') o.err.write(` ${truncate(s, room)}\n`);
      else o.err.write(`  ${truncate(s, room)}\n`);
      open = null;
    },
  };
}

/** The model's text for a terminal: newlines and tabs kept, other control characters (escape sequences) not. */
export const shownText = (o: Output, s: string) => (o.tty ? s.replace(/\r/g, '').replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, '?') : s);

export type Transcript = ReturnType<typeof transcript>;
