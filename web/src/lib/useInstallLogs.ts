// An install's logs, live: GET /v1/installs/{id}/logs?follow=true read with fetch and a stream
// reader, as the chat follows agent events (useChat.ts; an EventSource could not send svc-context).
// The stream starts with each container's last lines, then the new ones. A connection that drops
// (or a 429/5xx answer) is tried again with growing waits (sse.ts reconnectDelay), asking from the
// second of the last line shown and skipping the lines of that second already shown, which also
// picks up pods started meanwhile; `event: end` stops it (the page offers Follow again), as does an
// answer that retrying will not change (404, 400, 403); Follow again resumes from the last line
// too. Choosing a container starts over with `container=`.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { client, ok, type ApiError } from './api.ts';
import { toApiError } from './useApi.ts';
import { reconnectDelay, SseParser } from './sse.ts';
import { advance, append, EMPTY_BUFFER, pause, restart, resume, unseen, withContainers, type LogBuffer, type LogItem, type ResumePoint } from './install-logs.ts';

/** connecting: before the first answer; live: reading; reconnecting: waiting to try again; ended: the server ended it; failed: an answer retrying will not change. */
export type LogLink = 'connecting' | 'live' | 'reconnecting' | 'ended' | 'failed';

export interface InstallLogs {
  buffer: LogBuffer;
  /** the containers seen since the page opened (for the filter; kept when filtering) */
  containers: string[];
  link: LogLink;
  /** the last error: shown while reconnecting after a 429/5xx, and when failed */
  error: ApiError | undefined;
  /** the end reason of `event: end` */
  endReason: string | undefined;
  /** the server's `event: notice` message (containers left out) */
  notice: string | undefined;
  pause: () => void;
  resume: () => void;
  /** follows again after the stream ended or failed, from the last line shown */
  again: () => void;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}

export function useInstallLogs(installId: string, container: string): InstallLogs {
  const [buffer, setBuffer] = useState<LogBuffer>(EMPTY_BUFFER);
  // The buffer as lines arrive (state updates land later than the stream reads).
  const current = useRef<LogBuffer>(EMPTY_BUFFER);
  const [containers, setContainers] = useState<string[]>([]);
  const [link, setLink] = useState<LogLink>('connecting');
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [endReason, setEndReason] = useState<string | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [attempt, setAttempt] = useState(0);
  // Where the stream resumes (kept by Follow again; another container starts over), and for what.
  const point = useRef<ResumePoint | undefined>(undefined);
  const following = useRef('');

  const update = useCallback((change: (b: LogBuffer) => LogBuffer) => {
    current.current = change(current.current);
    setBuffer(current.current);
  }, []);

  useEffect(() => {
    const key = `${installId}/${container}`;
    if (following.current !== key) {
      following.current = key;
      point.current = undefined;
      update(restart);
    }
    setLink('connecting');
    setError(undefined);
    setEndReason(undefined);
    setNotice(undefined);
    const abort = new AbortController();
    const signal = abort.signal;
    const deliver = (items: LogItem[]) => {
      update((b) => append(b, items));
      setContainers((c) => withContainers(c, items));
    };
    follow(installId, container, point, { deliver, setLink, setError, setEndReason, setNotice }, signal).catch((err) => {
      if (signal.aborted) return;
      setError(toApiError(err));
      setLink('failed');
    });
    return () => abort.abort();
  }, [installId, container, attempt, update]);

  return {
    buffer,
    containers,
    link,
    error,
    endReason,
    notice,
    pause: useCallback(() => update(pause), [update]),
    resume: useCallback(() => update(resume), [update]),
    again: useCallback(() => setAttempt((n) => n + 1), []),
  };
}

interface Sinks {
  deliver: (items: LogItem[]) => void;
  setLink: (l: LogLink) => void;
  setError: (e: ApiError | undefined) => void;
  setEndReason: (r: string) => void;
  setNotice: (m: string) => void;
}

/** Follows until the signal aborts or the server ends the stream; throws on an answer that retrying will not change. */
async function follow(installId: string, container: string, point: { current: ResumePoint | undefined }, to: Sinks, signal: AbortSignal): Promise<void> {
  let failures = 0;
  let retryMs: number | undefined;
  while (!signal.aborted) {
    const parser = new SseParser();
    try {
      const answer = await client.GET('/v1/installs/{id}/logs', {
        params: { path: { id: installId }, query: { follow: true, container: container || undefined, since: point.current?.since } },
        parseAs: 'stream',
        signal,
      });
      const status = answer.response.status;
      if (!answer.response.ok) {
        // 429 (too many streams open) and 5xx (the cluster unreachable) may pass: say so, and try again.
        const err = await ok(Promise.resolve(answer)).then(
          () => undefined,
          (e: unknown) => toApiError(e),
        );
        if (status >= 400 && status < 500 && status !== 429) throw err;
        to.setError(err);
        failures++;
      } else if (!(answer.response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        throw new Error(`the log stream answered ${answer.response.headers.get('content-type') ?? 'without a content type'}, not an event stream`);
      } else {
        to.setLink('live');
        to.setError(undefined);
        failures = 0;
        const reader = (answer.data as ReadableStream<Uint8Array>).getReader();
        const decoder = new TextDecoder();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          const fresh: LogItem[] = [];
          for (const m of parser.feed(decoder.decode(value, { stream: true }))) {
            if (m.event === 'line') fresh.push(JSON.parse(m.data) as LogItem);
            else if (m.event === 'notice') to.setNotice((JSON.parse(m.data) as { message: string }).message);
            else if (m.event === 'end') {
              deliverNew(fresh);
              await reader.cancel().catch(() => {});
              to.setEndReason((JSON.parse(m.data) as { reason?: string }).reason ?? '');
              to.setLink('ended');
              return;
            }
          }
          retryMs = parser.retryMs ?? retryMs;
          deliverNew(fresh);
        }
        // The connection ended without `end` (a proxy's timeout, a network change): resume.
        failures++;
      }
    } catch (err) {
      if (signal.aborted) return;
      // fetch and a stream's reads fail with a TypeError when the network does: try again. Anything
      // else is an error answer that retrying will not change, or a stream that is not one: stop.
      if (!(err instanceof TypeError)) throw err;
      failures++;
    }
    if (signal.aborted) return;
    to.setLink('reconnecting');
    await sleep(reconnectDelay(retryMs, failures), signal);
  }

  function deliverNew(items: LogItem[]): void {
    const fresh = unseen(point.current, items);
    point.current = advance(point.current, fresh);
    if (fresh.length) to.deliver(fresh);
  }
}
