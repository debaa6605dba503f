// The logic of forms made from a JSON Schema (an install's inputs, a snippet's inputs): which
// control each property gets, the text it starts with, and the value a text becomes. Kept apart
// from the component so it is unit-tested without a browser.

export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  enum?: unknown[];
  default?: unknown;
  format?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  writeOnly?: boolean;
  examples?: unknown[];
}

export type Control = 'text' | 'secret' | 'number' | 'integer' | 'boolean' | 'select' | 'json';

export interface FormField {
  name: string;
  label: string;
  control: Control;
  required: boolean;
  description?: string;
  options?: string[];
  schema: JsonSchema;
}

function typeOf(s: JsonSchema): string | undefined {
  if (Array.isArray(s.type)) return s.type.find((t) => t !== 'null');
  return s.type;
}

function controlOf(s: JsonSchema): Control {
  if (s.enum && s.enum.every((v) => typeof v === 'string')) return 'select';
  const t = typeOf(s);
  if (t === 'string') return s.writeOnly || s.format === 'password' ? 'secret' : 'text';
  if (t === 'integer') return 'integer';
  if (t === 'number') return 'number';
  if (t === 'boolean') return 'boolean';
  return 'json';
}

/** One field per property of an object schema, in the schema's order; anything else is one JSON field. */
export function fieldsOf(schema: JsonSchema | null | undefined): FormField[] {
  if (!schema || typeOf(schema) !== 'object' || !schema.properties) return [];
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, s]) => ({
    name,
    label: s.title ?? name,
    control: controlOf(s),
    required: required.has(name),
    description: s.description,
    options: s.enum as string[] | undefined,
    schema: s,
  }));
}

/** The text a field starts with: its default (or the value given), as the control shows it. */
export function initialText(field: FormField, given?: unknown): string {
  const v = given !== undefined ? given : field.schema.default;
  if (v === undefined || v === null) return field.control === 'select' && field.required ? String(field.options?.[0] ?? '') : '';
  if (field.control === 'json') return JSON.stringify(v, null, 2);
  return String(v);
}

export type Parsed = { ok: true; value: unknown; present: boolean } | { ok: false; error: string };

/** The value a field's text stands for; empty optional fields are left out of the object. */
export function parseField(field: FormField, text: string): Parsed {
  if (field.control === 'boolean') return { ok: true, value: text === 'true', present: true };
  if (text.trim() === '') {
    return field.required ? { ok: false, error: 'required' } : { ok: true, value: undefined, present: false };
  }
  switch (field.control) {
    case 'integer':
    case 'number': {
      const n = Number(text);
      if (!Number.isFinite(n)) return { ok: false, error: 'must be a number' };
      if (field.control === 'integer' && !Number.isInteger(n)) return { ok: false, error: 'must be a whole number' };
      return { ok: true, value: n, present: true };
    }
    case 'json':
      try {
        return { ok: true, value: JSON.parse(text), present: true };
      } catch (err) {
        return { ok: false, error: `not valid JSON: ${(err as Error).message}` };
      }
    default:
      return { ok: true, value: text, present: true };
  }
}

/** The object the texts stand for, or the errors by field name. */
export function collect(fields: FormField[], texts: Record<string, string>): { value: Record<string, unknown>; errors: Record<string, string> } {
  const value: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const f of fields) {
    const p = parseField(f, texts[f.name] ?? '');
    if (!p.ok) errors[f.name] = p.error;
    else if (p.present) value[f.name] = p.value;
  }
  return { value, errors };
}

/**
 * The API's violations under a prefix (`body.inputs`), by the form field they name: `body.inputs.port`
 * and `body.inputs/port` both go to `port`; the rest stay for the form's error notice.
 */
export function violationsUnder(violations: Map<string, string>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, description] of violations) {
    if (!field.startsWith(prefix)) continue;
    const name = field.slice(prefix.length).replace(/^[./]/, '').split(/[./[]/)[0];
    if (name) out[name] = description;
  }
  return out;
}

/** A JSON text parsed, or where it breaks, for JSON fields (manifest, schema) in forms. */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, error: `not valid JSON: ${(err as Error).message}` };
  }
}
