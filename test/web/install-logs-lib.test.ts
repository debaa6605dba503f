// The install page's log view without a DOM (web/src/lib/install-logs.ts): the bounded buffer and
// its pause, the containers for the filter, what a reconnection skips, the short pod names, what
// Copy copies, and the words for the stream's end.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { advance, append, copyText, EMPTY_BUFFER, endWords, lines, pause, restart, resume, shortPod, sourceLabel, timeOfDay, unseen, withContainers, type LogItem } from '../../web/src/lib/install-logs.js';

function item(n: number, over: Partial<LogItem> = {}): LogItem {
  return { time: 1_765_151_900 + n, timestamp: new Date((1_765_151_900 + n) * 1000).toISOString(), pod: 'hello-5d8f7c9b6d-x2k4q', container: 'hello', line: `line ${n}`, ...over };
}
const texts = (items: LogItem[]) => items.map((i) => i.line);

describe('install logs: the buffer', () => {
  test('lines are shown as they arrive, oldest first', () => {
    const b = append(append(EMPTY_BUFFER, [item(1), item(2)]), [item(3)]);
    assert.deepEqual(texts(b.shown), ['line 1', 'line 2', 'line 3']);
    assert.deepEqual(b.waiting, []);
    assert.equal(b.dropped, 0);
  });

  test('paused, lines wait (counted) and Resume shows them after the others', () => {
    let b = append(EMPTY_BUFFER, [item(1)]);
    b = pause(b);
    b = append(b, [item(2), item(3)]);
    assert.deepEqual(texts(b.shown), ['line 1'], 'nothing new on screen while paused');
    assert.equal(b.waiting.length, 2);
    b = resume(b);
    assert.deepEqual(texts(b.shown), ['line 1', 'line 2', 'line 3']);
    assert.deepEqual(b.waiting, []);
    assert.equal(b.paused, false);
    assert.deepEqual(texts(append(b, [item(4)]).shown).at(-1), 'line 4', 'appends again after Resume');
  });

  test('over the limit the oldest lines go first, counted, shown ones before waiting ones', () => {
    let b = append(EMPTY_BUFFER, [item(1), item(2), item(3)], 4);
    b = append(b, [item(4), item(5)], 4);
    assert.deepEqual(texts(b.shown), ['line 2', 'line 3', 'line 4', 'line 5']);
    assert.equal(b.dropped, 1);
    assert.equal(b.offset, 1, 'line 2 keeps its key: offset 1 + index 0, as index 1 before');
    b = append(pause(b), [item(6), item(7), item(8), item(9), item(10)], 4);
    assert.deepEqual(texts(b.shown), [], 'every shown line was older than the waiting ones');
    assert.deepEqual(texts(b.waiting), ['line 7', 'line 8', 'line 9', 'line 10']);
    assert.equal(b.dropped, 6);
    assert.equal(b.offset, 5, 'the waiting lines that went were never shown');
  });

  test('an empty arrival changes nothing; restarting empties the view and keeps the pause', () => {
    const b = pause(append(EMPTY_BUFFER, [item(1)]));
    assert.equal(append(b, []), b);
    assert.deepEqual(restart(b), { shown: [], waiting: [], dropped: 0, offset: 0, paused: true });
    assert.equal(resume(EMPTY_BUFFER), EMPTY_BUFFER);
  });
});

describe('install logs: containers, resuming, words', () => {
  test('the containers seen, sorted, the same array when none is new', () => {
    const seen = withContainers([], [item(1, { container: 'web' }), item(2, { container: 'driver' }), item(3, { container: 'web' })]);
    assert.deepEqual(seen, ['driver', 'web']);
    assert.equal(withContainers(seen, [item(4, { container: 'web' })]), seen);
  });

  test('a resumed stream repeats the last second: the lines already seen in it are skipped, new ones kept', () => {
    const first = [item(1), item(2, { line: 'a' }), item(2, { line: 'b' })];
    const point = advance(undefined, first)!;
    assert.equal(point.since, first[2]!.time);
    const again = [item(2, { line: 'a' }), item(2, { line: 'b' }), item(2, { line: 'c' }), item(3)];
    assert.deepEqual(texts(unseen(point, again)), ['c', 'line 3']);
    assert.deepEqual(texts(unseen(undefined, again)), ['a', 'b', 'c', 'line 3'], 'nothing seen yet: everything is new');
    const later = advance(point, again.slice(2))!;
    assert.equal(later.since, again[3]!.time);
    assert.equal(point.seen.size, 2, 'advance leaves the point it was given as it was');
  });

  test("a Deployment's pod reads as its Deployment and its suffix; other long names keep both ends", () => {
    assert.equal(shortPod('hello-5d8f7c9b6d-x2k4q'), 'hello…x2k4q');
    assert.equal(shortPod('svc-local-cluster'), 'svc-local-cluster');
    assert.equal(shortPod('a-very-long-statefulset-name-with-words-0'), 'a-very-long-…ith-words-0');
    assert.equal(shortPod('payments-api-gateway-internal-7f9c8d6b5-abcde'), 'payments-api-gat…abcde');
    assert.equal(sourceLabel(item(1)), 'hello…x2k4q', 'the container is the Deployment: said once');
    assert.equal(sourceLabel(item(1, { container: 'sidecar' })), 'hello…x2k4q/sidecar');
    assert.equal(sourceLabel(item(1, { pod: 'svc-local-cluster', container: 'driver' })), 'svc-local-cluster/driver');
  });

  test('Copy: timestamp, full pod/container and the line; the line alone when all come from one container', () => {
    const a = item(1);
    const b = item(2, { pod: 'svc-local-cluster', container: 'driver' });
    assert.equal(copyText([a, b]), `${a.timestamp} hello-5d8f7c9b6d-x2k4q/hello | line 1\n${b.timestamp} svc-local-cluster/driver | line 2`);
    assert.equal(copyText([a, item(3)]), `${a.timestamp} line 1\n${item(3).timestamp} line 3`);
    assert.equal(copyText([]), '');
  });

  test('the time of day of a line, nothing for a timestamp that does not parse', () => {
    assert.match(timeOfDay('2026-12-07T23:59:01.123456789Z', 'en-GB'), /^\d\d:\d\d:01$/);
    assert.equal(timeOfDay('not a time'), '');
  });

  test('the end of the stream in words, for each reason and an unknown one', () => {
    assert.match(endWords('install_deleted'), /deleted/);
    assert.match(endWords('streams_closed'), /Follow again/);
    assert.match(endWords('max_duration'), /an hour/);
    assert.match(endWords('shutdown'), /restarted/);
    assert.match(endWords('something new'), /ended/);
    assert.equal(lines(1, 'new'), '1 new line');
    assert.equal(lines(2000), '2,000 lines');
  });
});
