// Reading a Server-Sent Events body (the WHATWG event-stream format) piece by piece as fetch hands
// it over. The chat follows GET /v1/agent_events:stream with fetch rather than EventSource: an
// EventSource cannot send the svc-context header that names the workspace of a cookie session, and
// the app resumes the same way EventSource would (the Last-Event-ID header). Free of the DOM for
// unit tests (test/web/agents-lib.test.ts).

export interface SseMessage {
  /** the `event:` field ("message" when absent) */
  event: string;
  /** the `data:` lines joined with newlines */
  data: string;
  /** the last `id:` seen so far on the stream (what to resume after) */
  lastEventId: string;
}

export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private event = '';
  /** the id to resume after: kept across messages, as an EventSource keeps it */
  lastEventId = '';
  /** the reconnection delay the server asked for (`retry:`), if any */
  retryMs: number | undefined;

  /** Feeds a decoded piece of the body; returns the messages it completed, in order. */
  feed(text: string): SseMessage[] {
    this.buffer += text;
    const out: SseMessage[] = [];
    for (;;) {
      const end = this.buffer.search(/\r\n|\r|\n/);
      if (end < 0) break;
      // A CR at the very end may be the first half of a CRLF split across pieces: wait for more.
      if (this.buffer[end] === '\r' && end === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + (this.buffer.startsWith('\r\n', end) ? 2 : 1));
      const message = this.line(line);
      if (message) out.push(message);
    }
    return out;
  }

  private line(line: string): SseMessage | undefined {
    if (line === '') return this.dispatch();
    // A comment (`: keepalive`): nothing to read.
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.lastEventId = value;
    else if (field === 'retry' && /^[0-9]+$/.test(value)) this.retryMs = Number(value);
    return undefined;
  }

  private dispatch(): SseMessage | undefined {
    const data = this.data;
    const event = this.event;
    this.data = [];
    this.event = '';
    if (data.length === 0) return undefined;
    return { event: event || 'message', data: data.join('\n'), lastEventId: this.lastEventId };
  }
}

/** How long to wait before the next reconnection: the server's `retry`, doubled per failure in a row, at most 15 s. */
export function reconnectDelay(retryMs: number | undefined, failuresInARow: number): number {
  const base = retryMs ?? 1000;
  return Math.min(15_000, base * 2 ** Math.max(0, failuresInARow - 1));
}
