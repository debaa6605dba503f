// The app's formatting and schema-form logic (web/src/lib), which no journey covers case by case.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatBytes, humanLabel, humanState, timeAgo } from '../../web/src/lib/format.js';
import { collect, fieldsOf, initialText, parseField, violationsUnder, type JsonSchema } from '../../web/src/lib/schema-form.js';

describe('web lib: format', () => {
  const now = Date.UTC(2026, 10, 24, 12, 0, 0);
  const at = (secondsAgo: number) => Math.round(now / 1000) - secondsAgo;
  test('times read as "ago" at the nearest unit, and the future as "in"', () => {
    assert.equal(timeAgo(at(10), now), 'just now');
    assert.equal(timeAgo(at(180), now), '3 minutes ago');
    assert.equal(timeAgo(at(2 * 3600), now), '2 hours ago');
    assert.equal(timeAgo(at(86400), now), 'yesterday');
    assert.equal(timeAgo(at(-3 * 86400), now), 'in 3 days');
  });
  test('field names become human labels; states read as words', () => {
    assert.equal(humanLabel('last_used_at'), 'Last used');
    assert.equal(humanLabel('workspace_id'), 'Workspace');
    assert.equal(humanLabel('max_installs'), 'Max installs');
    assert.equal(humanLabel('html_url'), 'Page');
    assert.equal(humanState('SUCCEEDED'), 'Succeeded');
    assert.equal(humanState('timed_out'), 'Timed out');
  });
  test('bytes', () => {
    assert.equal(formatBytes(512), '512 B');
    assert.equal(formatBytes(1536), '1.5 KB');
    assert.equal(formatBytes(50 * 1024 * 1024), '50 MB');
  });
});

describe('web lib: forms made from a JSON Schema', () => {
  const schema: JsonSchema = {
    type: 'object',
    required: ['greeting', 'replicas'],
    properties: {
      greeting: { type: 'string', default: 'hello', description: 'what it says' },
      replicas: { type: 'integer', minimum: 1 },
      tier: { type: 'string', enum: ['small', 'large'] },
      debug: { type: 'boolean', default: false },
      token: { type: 'string', writeOnly: true },
      labels: { type: 'object' },
      ratio: { type: ['number', 'null'] },
    },
  };
  const fields = fieldsOf(schema);

  test('each property gets the control its type says, in the schema order', () => {
    assert.deepEqual(
      fields.map((f) => [f.name, f.control, f.required]),
      [
        ['greeting', 'text', true],
        ['replicas', 'integer', true],
        ['tier', 'select', false],
        ['debug', 'boolean', false],
        ['token', 'secret', false],
        ['labels', 'json', false],
        ['ratio', 'number', false],
      ],
    );
    assert.deepEqual(fieldsOf({ type: 'string' }), [], 'a schema that is not an object has no fields');
  });

  test('defaults fill the texts; empty optional fields are left out; errors are per field', () => {
    const texts = Object.fromEntries(fields.map((f) => [f.name, initialText(f)]));
    assert.equal(texts.greeting, 'hello');
    assert.equal(texts.debug, 'false');
    const first = collect(fields, texts);
    assert.deepEqual(first.errors, { replicas: 'required' });
    const second = collect(fields, { ...texts, replicas: '2.5', labels: '{"a":' });
    assert.equal(second.errors.replicas, 'must be a whole number');
    assert.match(second.errors.labels!, /^not valid JSON/);
    const third = collect(fields, { ...texts, replicas: '3', labels: '{"team":"web"}', ratio: '0.5' });
    assert.deepEqual(third.errors, {});
    assert.deepEqual(third.value, { greeting: 'hello', replicas: 3, debug: false, labels: { team: 'web' }, ratio: 0.5 });
  });

  test('a number field refuses text that is not a number', () => {
    assert.deepEqual(parseField(fields[1]!, 'abc'), { ok: false, error: 'must be a number' });
  });

  test("the API's violations under a prefix go to the field they name", () => {
    const v = new Map([
      ['body.inputs.replicas', 'must be >= 1'],
      ['body.inputs/labels/team', 'must be a string'],
      ['body.name', 'taken'],
    ]);
    assert.deepEqual(violationsUnder(v, 'body.inputs'), { replicas: 'must be >= 1', labels: 'must be a string' });
  });
});
