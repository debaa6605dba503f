// The install page's live log view (GET /v1/installs/{id}/logs?follow=true, issue 36), the parts
// that are not the DOM: the bounded buffer of lines with its pause (lines keep arriving and wait,
// counted, until Resume), the containers seen for the filter, the lines a reconnection repeats
// (it asks again from the second of the last line, since `since` counts whole seconds), how a
// pod's generated name is shortened, what Copy puts on the clipboard, and what the stream's `end`
// reasons say to a person. Pure: unit-tested without a DOM (test/web/install-logs-lib.test.ts).

/** One log line as the API sends it (the same object in the JSON list and in each SSE `line` event). */
export interface LogItem {
  /** Unix seconds (the floor of timestamp) */
  time: number;
  /** RFC 3339 as the cluster gave it */
  timestamp: string;
  pod: string;
  container: string;
  line: string;
}

/** How many lines the page keeps (shown and waiting together): the oldest go first. */
export const LOG_LIMIT = 2000;

export interface LogBuffer {
  /** the lines on screen, oldest first */
  shown: LogItem[];
  /** lines that arrived while paused, shown on Resume */
  waiting: LogItem[];
  /** how many older lines were let go to stay within the limit, since the view (re)started */
  dropped: number;
  /** how many lines left the top of `shown`: `offset + i` names shown[i] for as long as it stays (a stable key) */
  offset: number;
  paused: boolean;
}

export const EMPTY_BUFFER: LogBuffer = { shown: [], waiting: [], dropped: 0, offset: 0, paused: false };

/** Keeps the last `limit` of shown then waiting, counting what it lets go (the oldest shown first). */
function bounded(b: LogBuffer, limit: number): LogBuffer {
  const over = b.shown.length + b.waiting.length - limit;
  if (over <= 0) return b;
  const fromShown = Math.min(over, b.shown.length);
  return {
    ...b,
    shown: b.shown.slice(fromShown),
    waiting: b.waiting.slice(over - fromShown),
    dropped: b.dropped + over,
    offset: b.offset + fromShown,
  };
}

/** Lines that arrived: on screen when following, waiting when paused. */
export function append(b: LogBuffer, items: LogItem[], limit = LOG_LIMIT): LogBuffer {
  if (items.length === 0) return b;
  const next = b.paused ? { ...b, waiting: b.waiting.concat(items) } : { ...b, shown: b.shown.concat(items) };
  return bounded(next, limit);
}

export function pause(b: LogBuffer): LogBuffer {
  return b.paused ? b : { ...b, paused: true };
}

/** Shows what waited, after what was shown, and appends again as lines arrive. */
export function resume(b: LogBuffer): LogBuffer {
  if (!b.paused) return b;
  return { ...b, shown: b.shown.concat(b.waiting), waiting: [], paused: false };
}

/** The view starting over (another container chosen): nothing shown, the pause kept. */
export function restart(b: LogBuffer): LogBuffer {
  return { ...EMPTY_BUFFER, paused: b.paused };
}

/** The containers seen so far plus those of `items`, sorted; the same array when nothing is new (no re-render). */
export function withContainers(seen: string[], items: LogItem[]): string[] {
  let next: Set<string> | undefined;
  for (const i of items) {
    if (seen.includes(i.container) || next?.has(i.container)) continue;
    next ??= new Set(seen);
    next.add(i.container);
  }
  return next ? [...next].sort() : seen;
}

/**
 * Where to resume after a dropped connection: `since` is whole seconds, so the stream is asked
 * again from the second of the last line, and the lines of that second already seen are skipped.
 */
export interface ResumePoint {
  since: number;
  /** keys (see itemKey) of the lines seen in that second */
  seen: Set<string>;
}

export function itemKey(i: LogItem): string {
  return `${i.timestamp}\u0000${i.pod}\u0000${i.container}\u0000${i.line}`;
}

/** The resume point after `items` arrived (the view keeps one across connections). */
export function advance(point: ResumePoint | undefined, items: LogItem[]): ResumePoint | undefined {
  let p = point && { since: point.since, seen: new Set(point.seen) };
  for (const i of items) {
    if (!p || i.time > p.since) p = { since: i.time, seen: new Set() };
    if (i.time === p.since) p.seen.add(itemKey(i));
  }
  return p;
}

/** The lines of a resumed stream that the view has not shown yet. */
export function unseen(point: ResumePoint | undefined, items: LogItem[]): LogItem[] {
  if (!point) return items;
  return items.filter((i) => i.time > point.since || (i.time === point.since && !point.seen.has(itemKey(i))));
}

/**
 * A pod's name, shortened where Kubernetes made it long: a Deployment's pod
 * (`hello-5d8f7c9b6d-x2k4q`) reads as its Deployment (its first 16 characters) and its own suffix
 * (`hello…x2k4q`); any other name over 24 characters keeps its start and end. The full name is on the line's title and
 * in what Copy copies.
 */
export function shortPod(pod: string): string {
  const m = /^(.+)-[a-z0-9]{6,10}-([a-z0-9]{5})$/.exec(pod);
  if (m) return `${m[1]!.slice(0, 16)}…${m[2]}`;
  if (pod.length <= 24) return pod;
  return `${pod.slice(0, 12)}…${pod.slice(-11)}`;
}

/** The source of a line as the view shows it: the short pod, and the container when it says more than the pod's name. */
export function sourceLabel(i: LogItem): string {
  const pod = shortPod(i.pod);
  return pod.startsWith(`${i.container}…`) || pod === i.container ? pod : `${pod}/${i.container}`;
}

/** The time of day of a line (local, "23:59:01"), or "" when its timestamp does not parse. */
export function timeOfDay(timestamp: string, locale?: string): string {
  const ms = Date.parse(timestamp);
  if (Number.isNaN(ms)) return '';
  return new Date(ms).toLocaleTimeString(locale, { hour12: false, hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/**
 * The shown lines as text for the clipboard, one a line, as `svc installs logs` prints them:
 * `pod/container | line`, or the line alone when every line comes from one container; each
 * starts with its timestamp, as the cluster gave it, for pasting into an issue.
 */
export function copyText(items: LogItem[]): string {
  const one = items.every((i) => i.pod === items[0]?.pod && i.container === items[0]?.container);
  return items.map((i) => `${i.timestamp} ${one ? '' : `${i.pod}/${i.container} | `}${i.line}`).join('\n');
}

/** What the view says when the server ends the stream (`event: end`), by its reason. */
export function endWords(reason: string | undefined): string {
  switch (reason) {
    case 'install_deleted':
      return 'The install was deleted: its logs have ended.';
    case 'access_revoked':
      return 'You may no longer read these logs (your access to the workspace changed, or you were signed out).';
    case 'streams_closed':
      return 'Every container stopped sending logs (its pods ended or were replaced). Follow again to pick up new pods.';
    case 'max_duration':
      return 'The log stream stops after an hour. Follow again to keep watching.';
    case 'shutdown':
      return 'The server restarted. Follow again to keep watching.';
    default:
      return 'The log stream ended. Follow again to keep watching.';
  }
}

/** A number of lines in words: "1 new line", "2,000 lines". */
export function lines(n: number, what = ''): string {
  return `${n.toLocaleString('en')} ${what ? `${what} ` : ''}line${n === 1 ? '' : 's'}`;
}
