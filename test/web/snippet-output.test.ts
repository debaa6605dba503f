// The shaping of a snippet run's output for the web app (web/src/lib/snippet-output.ts): which
// rendering each display_type gets, the rows and columns of a table, a stat's value and label, and
// the JSON fallback when the output does not have the shape its display_type asks for.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cellText, jsonText, logSummary, shapeOutput, statOf, tableOf } from '../../web/src/lib/snippet-output.js';
import { formatDuration } from '../../web/src/lib/format.js';

describe('snippet output: table', () => {
  test('an array of objects: one column per key in first-seen order, missing keys empty', () => {
    const table = tableOf([
      { name: 'dev', nodes: 3 },
      { name: 'prod', ready: true, nodes: 5 },
      { region: 'eu' },
    ]);
    assert.deepEqual(table, {
      columns: ['name', 'nodes', 'ready', 'region'],
      rows: [
        ['dev', '3', '', ''],
        ['prod', '5', 'true', ''],
        ['', '', '', 'eu'],
      ],
    });
  });

  test('nested values show as JSON, null as empty', () => {
    assert.deepEqual(tableOf([{ urls: ['https://a.example'], meta: { x: 1 }, gone: null }])?.rows, [['["https://a.example"]', '{"x":1}', '']]);
  });

  test('an array of plain values is one column named Value', () => {
    assert.deepEqual(tableOf(['a', 2, false, null]), { columns: ['Value'], rows: [['a'], ['2'], ['false'], ['']] });
  });

  test('an empty array is a table without rows; anything else is not a table', () => {
    assert.deepEqual(tableOf([]), { columns: [], rows: [] });
    assert.equal(tableOf({ rows: [] }), null);
    assert.equal(tableOf([{ a: 1 }, 'b']), null);
    assert.equal(tableOf([[1, 2]]), null);
    assert.equal(tableOf('text'), null);
  });

  test('cells: strings as they are, numbers and booleans in words', () => {
    assert.equal(cellText('  spaced '), '  spaced ');
    assert.equal(cellText(0), '0');
    assert.equal(cellText(undefined), '');
  });
});

describe('snippet output: stat', () => {
  test('a plain value is the stat; numbers are grouped by the locale', () => {
    assert.deepEqual(statOf(1234567, 'en-US'), { value: '1,234,567' });
    assert.deepEqual(statOf('healthy'), { value: 'healthy' });
    assert.deepEqual(statOf(true), { value: 'true' });
    assert.deepEqual(statOf(null), { value: '—' });
  });

  test('{value, label} shows the value with its label', () => {
    assert.deepEqual(statOf({ value: 42, label: 'Installs' }, 'en-US'), { value: '42', label: 'Installs' });
    assert.deepEqual(statOf({ value: 0.5 }, 'en-US'), { value: '0.5' });
  });

  test('an object without value, or with a nested value, is not a stat', () => {
    assert.equal(statOf({ count: 3 }), null);
    assert.equal(statOf({ value: { nested: 1 } }), null);
    assert.equal(statOf([1]), null);
  });
});

describe('snippet output: shape by display_type', () => {
  test('table, stat and json get their renderings', () => {
    assert.equal(shapeOutput('table', [{ a: 1 }]).kind, 'table');
    assert.deepEqual(shapeOutput('stat', { value: 7, label: 'Runs' }, [], 'en-US'), { kind: 'stat', stat: { value: '7', label: 'Runs' } });
    assert.deepEqual(shapeOutput('json', { a: [1] }), { kind: 'json', text: '{\n  "a": [\n    1\n  ]\n}' });
  });

  test('logs shows the console lines, whatever the output', () => {
    const lines = [{ level: 'info', message: 'hello', at_ms: 3 }];
    assert.deepEqual(shapeOutput('logs', { ignored: true }, lines), { kind: 'logs', lines });
    assert.deepEqual(shapeOutput('logs', null), { kind: 'logs', lines: [] });
  });

  test('output without the shape its display_type asks for falls back to JSON, saying why', () => {
    const table = shapeOutput('table', { count: 3 });
    assert.equal(table.kind, 'json');
    assert.match(table.kind === 'json' ? (table.mismatch ?? '') : '', /not a list of rows/);
    const stat = shapeOutput('stat', [1, 2]);
    assert.equal(stat.kind, 'json');
    assert.match(stat.kind === 'json' ? (stat.mismatch ?? '') : '', /not one value/);
  });

  test('code that returns nothing reads as null', () => {
    assert.equal(jsonText(undefined), 'null');
  });
});

describe('snippet output: console and durations', () => {
  test('the console summary counts lines, warnings and errors', () => {
    assert.equal(logSummary([]), '0 lines');
    const l = (level: string) => ({ level, message: '', at_ms: 0 });
    assert.equal(logSummary([l('log')]), '1 line');
    assert.equal(logSummary([l('log'), l('warn'), l('error'), l('error')]), '4 lines, 1 warning, 2 errors');
  });

  test('durations read as ms, seconds, then minutes', () => {
    assert.equal(formatDuration(0), '0 ms');
    assert.equal(formatDuration(999), '999 ms');
    assert.equal(formatDuration(1400), '1.4 s');
    assert.equal(formatDuration(9949), '9.9 s');
    assert.equal(formatDuration(42_000), '42 s');
    assert.equal(formatDuration(59_600), '1 min');
    assert.equal(formatDuration(125_000), '2 min 5 s');
  });
});
