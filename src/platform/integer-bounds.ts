// Every integer (and number) a request carries is bounded to what the database stores (issue 33
// section 5): without a maximum, `expires_at: 1e20` passed validation and PostgreSQL refused it
// (a 500), or a Unix time past year 275760 broke date formatting. Routes give fields their own
// bounds; any request field without one gets the default here, at route registration, so the
// validator and the OpenAPI document both carry it, and a new route cannot forget.
import type { FastifyInstance, RouteOptions } from 'fastify';
import { Type } from 'typebox';

/** PostgreSQL `integer` (int4), the smallest integer column the schema uses: the default bound of an integer input. */
export const MAX_INT32 = 2_147_483_647;
/** 9999-12-31T23:59:59Z: the latest Unix time (seconds) an input may name; every timestamp column is a bigint. */
export const MAX_UNIX_SECONDS = 253_402_300_799;
/** The largest integer a JSON number carries exactly; no input may name more (a bigint column holds it). */
export const MAX_EXACT_INTEGER = Number.MAX_SAFE_INTEGER;

/** A Unix time (seconds) a request names: from 1970 to the end of year 9999. */
export const UnixSecondsInput = (description: string) =>
  Type.Integer({ minimum: 0, maximum: MAX_UNIX_SECONDS, description: `${description} (Unix seconds, at most ${MAX_UNIX_SECONDS}: 9999-12-31)` });

type Node = Record<string, unknown>;

const isNumeric = (node: Node) => {
  const type = node.type;
  return type === 'integer' || type === 'number' || (Array.isArray(type) && (type.includes('integer') || type.includes('number')));
};

/**
 * Sets the default bounds (plus or minus MAX_INT32 for an integer, MAX_EXACT_INTEGER for a number) on every numeric node of a request schema that has none,
 * following `$ref`s to named schemas (resolved by `named`). Idempotent; each node is visited once.
 */
export function boundIntegers(schema: unknown, named: (id: string) => unknown, seen = new Set<unknown>()): void {
  if (schema === null || typeof schema !== 'object' || seen.has(schema)) return;
  seen.add(schema);
  if (Array.isArray(schema)) {
    for (const item of schema) boundIntegers(item, named, seen);
    return;
  }
  const node = schema as Node;
  if (isNumeric(node)) {
    // An integer may be stored in an int4 column; a fractional number never is (it lives in JSON).
    const bound = node.type === 'integer' ? MAX_INT32 : MAX_EXACT_INTEGER;
    if (node.maximum === undefined && node.exclusiveMaximum === undefined) node.maximum = bound;
    if (node.minimum === undefined && node.exclusiveMinimum === undefined) node.minimum = -bound;
  }
  if (typeof node.$ref === 'string') boundIntegers(named(node.$ref.replace(/#.*$/, '')), named, seen);
  for (const key of ['properties', 'patternProperties', 'definitions', '$defs']) {
    const children = node[key];
    if (children && typeof children === 'object') for (const child of Object.values(children)) boundIntegers(child, named, seen);
  }
  for (const key of ['items', 'additionalProperties', 'anyOf', 'oneOf', 'allOf', 'not', 'prefixItems']) boundIntegers(node[key], named, seen);
}

/** The onRoute hook: bounds the body, query, path and header schemas of every route registered after it. */
export function registerIntegerBounds(app: FastifyInstance): void {
  const named = (id: string) => app.getSchema(id);
  app.addHook('onRoute', (route: RouteOptions) => {
    const schema = route.schema as Record<string, unknown> | undefined;
    if (!schema) return;
    for (const part of ['body', 'querystring', 'params', 'headers']) boundIntegers(schema[part], named, new Set());
  });
}
