// Server-Sent Events for the client: the text/event-stream format (WHATWG HTML, "Server-sent
// events", the parsing rules EventSource follows), read from a fetch Response's body. About forty
// lines of parsing do not justify a dependency; the reconnecting follower is agent-events.ts.

export interface SseMessage {
  /** the last event id seen on the stream (the `id:` field persists across messages, as in EventSource) */
  id: string | null;
  /** `event:`, default "message" */
  event: string;
  /** the `data:` lines joined with \n */
  data: string;
}

/** No bytes at all (not even a `: keepalive` comment) for this long means the connection is dead. */
export class SseIdle extends Error {
  constructor(ms: number) {
    super(`no data from the event stream for ${Math.round(ms / 1000)} s`);
  }
}

/**
 * The messages of an event stream, in order. `idleMs` bounds each wait for bytes while the consumer
 * is reading (a consumer busy between messages, e.g. at a prompt, is not idleness). The stream is
 * released when the consumer stops early.
 */
export async function* sseMessages(body: ReadableStream<Uint8Array>, idleMs = 0): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  let lastId: string | null = null;
  let event = '';
  let data: string[] = [];
  let first = true;
  try {
    for (;;) {
      const chunk = await readWithin(reader, idleMs);
      if (chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      // A BOM may open the stream; a lone \r at the end may be the first half of \r\n.
      if (first && buffer.length) {
        buffer = buffer.replace(/^\uFEFF/, '');
        first = false;
      }
      const end = buffer.endsWith('\r') ? buffer.length - 1 : buffer.length;
      const lines = buffer.slice(0, end).split(/\r\n|\r|\n/);
      buffer = lines.pop()! + buffer.slice(end);
      for (const line of lines) {
        if (line === '') {
          if (data.length) yield { id: lastId, event: event || 'message', data: data.join('\n') };
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
        else if (field === 'id' && !value.includes('\0')) lastId = value;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

function readWithin(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number): Promise<ReadableStreamReadResult<Uint8Array>> {
  if (ms <= 0) return reader.read();
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SseIdle(ms)), ms);
  });
  return Promise.race([reader.read(), idle]).finally(() => clearTimeout(timer));
}
