// The captured console of one run: at most maxLines lines and maxBytes UTF-8 bytes, then one
// marker line saying how much was dropped (so a log-flooding snippet costs bounded memory).
import type { LogLevel, LogLine } from './types.js';

/** The longest prefix of `text` that fits in `bytes` UTF-8 bytes, never splitting a character. */
export function cutUtf8(text: string, bytes: number): string {
  if (Buffer.byteLength(text) <= bytes) return text;
  const buf = Buffer.from(text).subarray(0, bytes);
  // Drop a trailing partial sequence: back up over continuation bytes to a lead byte.
  let end = buf.length;
  let i = end - 1;
  while (i >= 0 && (buf[i]! & 0xc0) === 0x80) i--;
  if (i >= 0) {
    const lead = buf[i]!;
    const size = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (i + size > end) end = i;
  }
  return buf.subarray(0, end).toString();
}

export class LogBuffer {
  readonly lines: LogLine[] = [];
  private bytes = 0;
  private dropped = 0;
  private full = false;

  constructor(
    private readonly maxLines: number,
    private readonly maxBytes: number,
  ) {}

  get accepting(): boolean {
    return !this.full;
  }

  add(level: LogLevel, message: string, atMs: number): void {
    if (this.full) {
      this.dropped++;
      return;
    }
    if (this.lines.length >= this.maxLines) {
      this.full = true;
      this.dropped++;
      return;
    }
    const size = Buffer.byteLength(message);
    if (this.bytes + size > this.maxBytes) {
      // The line that crosses the byte limit keeps what fits; everything after it is dropped.
      this.full = true;
      const kept = cutUtf8(message, this.maxBytes - this.bytes);
      if (kept.length > 0) this.push(level, kept, atMs, Buffer.byteLength(kept));
      this.dropped++;
      return;
    }
    this.push(level, message, atMs, size);
  }

  /** A line the sandbox asked for after the buffer was full: counted, never formatted. */
  drop(): void {
    this.dropped++;
  }

  /** The lines, with the marker appended when anything was cut or dropped. */
  finish(atMs: number): LogLine[] {
    if (this.full) {
      this.lines.push({
        level: 'warn',
        message: `[sandbox] console output truncated at ${this.maxLines} lines or ${this.maxBytes} bytes: ${this.dropped} line(s) cut or dropped`,
        at_ms: atMs,
      });
      this.full = false;
    }
    return this.lines;
  }

  private push(level: LogLevel, message: string, atMs: number, size: number): void {
    this.lines.push({ level, message, at_ms: atMs });
    this.bytes += size;
  }
}
