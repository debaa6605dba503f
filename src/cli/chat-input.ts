// What `svc chat` reads: lines of stdin, a terminal or a pipe alike, through one reader for the
// whole command (each message of the conversation, each answer to a prompt), so lines that
// arrive before they are asked for are kept in order, not lost. On a terminal readline edits the
// line, and takes Ctrl-C itself (the terminal is in raw mode): it is passed on as an interrupt.
import { createInterface, type Interface } from 'node:readline';
import type { Output } from './output.js';

export interface LineInput {
  /** the next line (prompt shown first, on stderr), or null once input has ended (Ctrl-D, end of the pipe) */
  next(prompt: string, signal?: AbortSignal): Promise<string | null>;
  /** stdin has ended and every line was read */
  ended(): boolean;
  close(): void;
}

export function lineInput(o: Output, onInterrupt: () => void): LineInput {
  let rl: Interface | null = null;
  const lines: string[] = [];
  let done = false;
  let waiter: ((line: string | null) => void) | null = null;
  const terminal = Boolean(process.stdin.isTTY && process.stderr.isTTY);

  // Opened at the first question: until then a terminal keeps its usual Ctrl-C (a signal) and
  // nothing is read from a pipe that a single-message chat never needs.
  const open = () => {
    if (rl) return;
    rl = createInterface({ input: process.stdin, output: process.stderr, terminal, historySize: terminal ? 100 : 0 });
    rl.on('line', (line) => {
      if (waiter) {
        const w = waiter;
        waiter = null;
        w(line);
      } else lines.push(line);
    });
    rl.on('close', () => {
      // Ctrl-D at the prompt: the shell's prompt then starts on a line of its own
      if (terminal && waiter) o.err.write('\n');
      done = true;
      waiter?.(null);
      waiter = null;
    });
    rl.on('SIGINT', onInterrupt);
  };

  return {
    async next(prompt, signal) {
      open();
      if (terminal) {
        rl!.setPrompt(prompt);
        rl!.prompt();
      }
      let line: string | null;
      if (lines.length) line = lines.shift()!;
      else if (done) line = null;
      else {
        line = await new Promise<string | null>((resolve, reject) => {
          waiter = resolve;
          signal?.addEventListener('abort', () => {
            waiter = null;
            // the shell's prompt then starts on a line of its own
            if (terminal) o.err.write('\n');
            reject(signal.reason);
          }, { once: true });
        });
      }
      // read from a pipe, the line is echoed after its prompt, so the log reads as a dialogue
      if (!terminal && line !== null) o.err.write(`${prompt}${line}\n`);
      return line;
    },
    ended: () => done && lines.length === 0,
    close() {
      rl?.close();
      // a pipe still open would keep the process alive
      if (!terminal) process.stdin.destroy();
    },
  };
}
