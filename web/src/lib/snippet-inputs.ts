// A snippet's declared inputs (API.md 8.3: [{key, label, kind, ...}]) as the JSON Schema the app's
// forms are made from (lib/schema-form.ts, components/SchemaForm), so a snippet's run form is one
// more schema form; and the declarations as the JSON text a person edits when writing a snippet.
import type { components } from '../../../src/cli/generated/api.ts';
import type { JsonSchema } from './schema-form.ts';

/** One declared input, as the API has it: {key, label, kind, description?, required?, default?, ...}. */
export type InputDeclaration = components['schemas']['Snippet']['inputs'][number];

const ID_PREFIX: Record<string, string> = {
  install: 'inst_',
  cluster: 'clu_',
  package: 'pkg_',
  snippet: 'snp_',
  operation: 'op_',
  preview_hostname: 'phn_',
  api_token: 'tok_',
};

function kindSchema(d: InputDeclaration): JsonSchema {
  switch (d.kind) {
    case 'number':
      return { type: 'number', minimum: d.min, maximum: d.max };
    case 'boolean':
      return { type: 'boolean' };
    case 'enum':
      return { type: 'string', enum: d.options ?? [] };
    case 'time_range':
      return { type: 'object', description: 'JSON: {"start": <Unix seconds>, "end": <Unix seconds>}, start no later than end' };
    case 'resource': {
      const prefix = ID_PREFIX[d.resource_type ?? ''];
      return { type: 'string', description: `The id of a ${(d.resource_type ?? 'resource').replace(/_/g, ' ')}${prefix ? ` (${prefix}...)` : ''}` };
    }
    default:
      return { type: 'string', maxLength: 10_000 };
  }
}

/** Where a number input's bounds go in its hint, when the declaration gives no description. */
function rangeHint(d: InputDeclaration): string | undefined {
  if (d.kind !== 'number' || (d.min === undefined && d.max === undefined)) return undefined;
  if (d.min !== undefined && d.max !== undefined) return `A number from ${d.min} to ${d.max}`;
  return d.min !== undefined ? `A number, at least ${d.min}` : `A number, at most ${d.max}`;
}

/**
 * The object schema of a run's inputs: one property per declaration, in order, titled by its label.
 * An input is required on the form only when a run must give it (required and without a default:
 * the API fills defaults in).
 */
export function inputsSchema(declarations: InputDeclaration[]): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const d of declarations) {
    const base = kindSchema(d);
    properties[d.key] = { ...base, title: d.label, description: d.description ?? rangeHint(d) ?? base.description, default: d.default };
    if (d.required && d.default === undefined) required.push(d.key);
  }
  return { type: 'object', properties, required };
}

/** The declarations as the text of the "Inputs" field of the snippet form ("[]" when none). */
export function declarationsText(declarations: InputDeclaration[]): string {
  return declarations.length ? JSON.stringify(declarations, null, 2) : '[]';
}

/** The "Inputs" field's text as declarations, or what is wrong with it (the API checks the rest). */
export function parseDeclarations(text: string): { ok: true; value: InputDeclaration[] } | { ok: false; error: string } {
  if (text.trim() === '') return { ok: true, value: [] };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `not valid JSON: ${(err as Error).message}` };
  }
  if (!Array.isArray(value)) return { ok: false, error: 'must be a JSON array of inputs: [{"key": "limit", "label": "How many", "kind": "number"}]' };
  const bad = value.findIndex((d) => typeof d !== 'object' || d === null || Array.isArray(d) || typeof d.key !== 'string' || typeof d.label !== 'string' || typeof d.kind !== 'string');
  if (bad >= 0) return { ok: false, error: `input ${bad + 1} needs at least "key", "label" and "kind"` };
  return { ok: true, value: value as InputDeclaration[] };
}

/**
 * The API's violations of the declarations (`body.inputs.0.kind` from the schema check,
 * `body.inputs[0].options` from the service) as one message for the "Inputs" field, naming each
 * input by its position from 1.
 */
export function declarationsViolation(violations: Map<string, string>): string | undefined {
  const parts: string[] = [];
  for (const [field, description] of violations) {
    if (field !== 'body.inputs' && !/^body\.inputs[.[]/.test(field)) continue;
    const m = /^body\.inputs(?:\.(\d+)|\[(\d+)\])?\.?(.*)$/.exec(field);
    const index = m?.[1] ?? m?.[2];
    const where = [index !== undefined ? `input ${Number(index) + 1}` : '', m?.[3] ?? ''].filter(Boolean).join(', ');
    parts.push(where ? `${where}: ${description}` : description);
  }
  return parts.length ? parts.join('; ') : undefined;
}
