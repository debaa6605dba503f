// Reading our own OpenAPI document in tests: resolve component refs and build a value that the
// schema accepts, so suites that sweep every route (bad input, cross-tenant) need no per-route data.

// The document is plain JSON; tests index into it freely.
export type Schema = Record<string, any>;

export function resolveSchema(schema: Schema | undefined, doc: Schema): Schema | undefined {
  return schema?.$ref ? resolveSchema(doc.components?.schemas?.[String(schema.$ref).split('/').pop()!], doc) : schema;
}

/** A value valid against `schema` (enough of JSON Schema for our routes). */
export function sampleValue(raw: Schema | undefined, doc: Schema, depth = 0): unknown {
  const schema = resolveSchema(raw, doc);
  if (!schema || depth > 8) return 'sample';
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  for (const k of ['anyOf', 'oneOf', 'allOf']) if (Array.isArray(schema[k])) return sampleValue(schema[k][0], doc, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type.find((x: string) => x !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const props: Record<string, Schema> = schema.properties ?? {};
      for (const key of schema.required ?? []) out[key] = sampleValue(props[key], doc, depth + 1);
      for (const key of Object.keys(props)) {
        if (Object.keys(out).length >= (schema.minProperties ?? 0)) break;
        out[key] ??= sampleValue(props[key], doc, depth + 1);
      }
      return out;
    }
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => sampleValue(schema.items, doc, depth + 1));
    case 'integer':
    case 'number':
      return schema.default ?? schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
    case 'boolean':
      return schema.default ?? false;
    case 'null':
      return null;
    default: {
      if (schema.default !== undefined) return schema.default;
      if (schema.format === 'email') return 'someone@example.test';
      if (schema.format === 'uri') return 'https://example.test/cb';
      if (schema.format === 'date-time') return new Date().toISOString();
      const min = schema.minLength ?? 1;
      const max = schema.maxLength ?? 64;
      const re = schema.pattern ? new RegExp(schema.pattern) : null;
      return ['sample', 'sample-value', 'abc', 'a1'].find((c) => c.length >= min && c.length <= max && (!re || re.test(c))) ?? 'x'.repeat(min);
    }
  }
}
