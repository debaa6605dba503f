// A snippet's declared inputs in the web app (web/src/lib/snippet-inputs.ts): the JSON Schema its
// run form is made from (through lib/schema-form.ts, as install forms are), and the "Inputs" field
// of the snippet form (its parse errors, the API's violations of the declarations).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { declarationsText, declarationsViolation, inputsSchema, parseDeclarations, type InputDeclaration } from '../../web/src/lib/snippet-inputs.js';
import { collect, fieldsOf, initialText } from '../../web/src/lib/schema-form.js';

const DECLARED: InputDeclaration[] = [
  { key: 'limit', label: 'How many', kind: 'number', min: 1, max: 100, default: 20 },
  { key: 'name', label: 'Name', kind: 'text', required: true },
  { key: 'verbose', label: 'Verbose', kind: 'boolean' },
  { key: 'env', label: 'Environment', kind: 'enum', options: ['dev', 'prod'], required: true },
  { key: 'window', label: 'Window', kind: 'time_range' },
  { key: 'cluster', label: 'Cluster', kind: 'resource', resource_type: 'cluster', description: 'where to look' },
];

describe('snippet inputs as a form', () => {
  const fields = fieldsOf(inputsSchema(DECLARED));

  test('one field per declaration, in order, labelled and with the control its kind needs', () => {
    assert.deepEqual(
      fields.map((f) => [f.name, f.label, f.control]),
      [
        ['limit', 'How many', 'number'],
        ['name', 'Name', 'text'],
        ['verbose', 'Verbose', 'boolean'],
        ['env', 'Environment', 'select'],
        ['window', 'Window', 'json'],
        ['cluster', 'Cluster', 'text'],
      ],
    );
    assert.deepEqual(fields.find((f) => f.name === 'env')?.options, ['dev', 'prod']);
  });

  test('hints: the description, else the number range or what a time range or resource takes', () => {
    const hint = (name: string) => fields.find((f) => f.name === name)?.description;
    assert.equal(hint('limit'), 'A number from 1 to 100');
    assert.match(hint('window') ?? '', /"start".*"end"/);
    assert.equal(hint('cluster'), 'where to look');
    assert.match(fieldsOf(inputsSchema([{ key: 'i', label: 'I', kind: 'resource', resource_type: 'install' }]))[0]?.description ?? '', /install \(inst_\.\.\.\)/);
  });

  test('required on the form only when a run must give it: required and without a default', () => {
    assert.deepEqual(fields.filter((f) => f.required).map((f) => f.name), ['name', 'env']);
    const withDefault = fieldsOf(inputsSchema([{ key: 'n', label: 'N', kind: 'number', required: true, default: 3 }]));
    assert.equal(withDefault[0]?.required, false);
  });

  test('fields start at their defaults, and the texts become typed values', () => {
    const texts = Object.fromEntries(fields.map((f) => [f.name, initialText(f)]));
    assert.equal(texts.limit, '20');
    assert.equal(texts.env, 'dev');
    texts.name = 'web';
    texts.window = '{"start": 1, "end": 2}';
    assert.deepEqual(collect(fields, texts), { value: { limit: 20, name: 'web', verbose: false, env: 'dev', window: { start: 1, end: 2 } }, errors: {} });
  });

  test('a required input left empty is an error at its field', () => {
    const texts = Object.fromEntries(fields.map((f) => [f.name, initialText(f)]));
    assert.deepEqual(collect(fields, texts).errors, { name: 'required' });
  });

  test('no declarations: no fields', () => {
    assert.deepEqual(fieldsOf(inputsSchema([])), []);
  });
});

describe('the Inputs field of the snippet form', () => {
  test('declarations round-trip through their text; empty text is none', () => {
    assert.equal(declarationsText([]), '[]');
    assert.deepEqual(parseDeclarations(declarationsText(DECLARED)), { ok: true, value: DECLARED });
    assert.deepEqual(parseDeclarations('  '), { ok: true, value: [] });
  });

  test('text that is not JSON, not a list, or a list of non-inputs says what is wrong', () => {
    const bad = (text: string) => {
      const p = parseDeclarations(text);
      return p.ok ? '' : p.error;
    };
    assert.match(bad('[{"key": '), /^not valid JSON/);
    assert.match(bad('{"key": "a"}'), /must be a JSON array/);
    assert.match(bad('[{"key": "a", "label": "A", "kind": "text"}, 3]'), /input 2 needs/);
  });

  test("the API's violations of the declarations read as one message naming each input from 1", () => {
    const v = new Map([
      ['body.inputs.0.kind', 'must be equal to one of the allowed values'],
      ['body.inputs[1].options', 'options are required with kind enum'],
      ['body.name', 'is required'],
    ]);
    assert.equal(declarationsViolation(v), 'input 1, kind: must be equal to one of the allowed values; input 2, options: options are required with kind enum');
    assert.equal(declarationsViolation(new Map([['body.inputs', 'must NOT have more than 16 items']])), 'must NOT have more than 16 items');
    assert.equal(declarationsViolation(new Map([['body.inputsx', 'no']])), undefined);
  });
});
