// The values an offer fixes for its package's input schema, and how a customer's configuration is
// merged with them (API.md 8.7). Both the offer's routes and the order drafts' :submitConfiguration
// go through here, so the bounds, the schema check and "locked ones win" mean one thing.
//
// Bounds come first and cost linear time (key count, depth, serialized size); only then does the
// schema validator (packages/input-schema.ts, Ajv on RE2) see the values.
import type { PackageVersionsTable } from '../../db/schema.js';
import type { Json } from '../../jobs/workflows.js';
import { ApiError, type FieldViolation, type Reason } from '../../platform/errors.js';
import { VALUES_MAX_DEPTH, validateValues } from '../packages/input-schema.js';
import { nestsDeeperThan } from '../packages/package-manifest.js';
import { canonicalJson } from '../packages/render.js';
import { findSecretRefs } from '../secrets/secret-refs.js';
import { MAX_FIELD_VALUE_BYTES, MAX_FIELD_VALUES, MAX_FIELD_VALUES_BYTES } from './offers.schemas.js';

/** An offer's stored field_values: each key's value and whether the customer may change it. */
export type OfferFieldValuesMap = Record<string, { value: Json; locked: boolean }>;

/** The version fields the checks read. */
export type SchemaVersion = Pick<PackageVersionsTable, 'id' | 'input_schema'>;

const MAX_KEY_LENGTH = 128;

function tooLarge(field: string, message: string, description: string, reason: Reason = 'VALUES_TOO_LARGE'): ApiError {
  return new ApiError('INVALID_ARGUMENT', `${field} ${message}`, { reason, fieldViolations: [{ field, description }] });
}

/**
 * The bounds of a set of field values (plain key -> value), in linear time: at most
 * MAX_FIELD_VALUES keys of at most 128 characters, nesting at most VALUES_MAX_DEPTH, each value at
 * most MAX_FIELD_VALUE_BYTES as JSON and all together MAX_FIELD_VALUES_BYTES. 400 naming `field`.
 */
export function checkFieldValuesBounds(values: Record<string, unknown>, field: string): void {
  const keys = Object.keys(values);
  if (keys.length > MAX_FIELD_VALUES) throw tooLarge(field, `has ${keys.length} keys`, `at most ${MAX_FIELD_VALUES} keys`);
  const longKey = keys.find((k) => k.length > MAX_KEY_LENGTH || k.length === 0);
  if (longKey !== undefined) throw tooLarge(field, 'has a key that is empty or too long', `keys are 1-${MAX_KEY_LENGTH} characters`, 'VALUES_INVALID');
  // Depth before size: serializing a hostile nesting would overflow the stack.
  if (nestsDeeperThan(values, VALUES_MAX_DEPTH)) {
    throw tooLarge(field, `nests deeper than ${VALUES_MAX_DEPTH} levels`, `nests objects and arrays at most ${VALUES_MAX_DEPTH} levels deep`, 'VALUES_INVALID');
  }
  let total = 0;
  for (const key of keys) {
    const bytes = Buffer.byteLength(JSON.stringify(values[key]) ?? '');
    if (bytes > MAX_FIELD_VALUE_BYTES) throw tooLarge(`${field}.${key}`, `is ${bytes} bytes as JSON`, `at most ${MAX_FIELD_VALUE_BYTES} bytes as JSON`);
    total += bytes;
  }
  if (total > MAX_FIELD_VALUES_BYTES) throw tooLarge(field, `is ${total} bytes as JSON`, `at most ${MAX_FIELD_VALUES_BYTES} bytes as JSON together`);
}

/**
 * Secret references (`{"$secret": ...}`) are refused in offer values and configurations: the
 * install is made in the customer's workspace, where a seller's secret does not exist and the
 * customer's must not be reachable through a seller's offer.
 */
function refuseSecretRefs(values: Record<string, Json>, field: string): void {
  const refs = findSecretRefs(values, field);
  if (refs.length === 0) return;
  const violations: FieldViolation[] = refs.map((r) => ({ field: [field, ...r.path].join('.'), description: 'secret references are not accepted in an order\'s values' }));
  throw new ApiError('INVALID_ARGUMENT', `${violations[0]!.field}: secret references are not accepted here`, { reason: 'SECRET_REF_NOT_ALLOWED', fieldViolations: violations });
}

const plainValues = (offer: OfferFieldValuesMap): Record<string, Json> => Object.fromEntries(Object.entries(offer).map(([k, v]) => [k, v.value]));

export const lockedKeysOf = (offer: OfferFieldValuesMap): string[] => Object.keys(offer).filter((k) => offer[k]!.locked).sort();

/** The input schema without its root `required`: an offer gives some values, the customer the rest. */
function partialSchemaJson(inputSchemaJson: string): string {
  const schema = JSON.parse(inputSchemaJson) as Record<string, unknown>;
  delete schema.required;
  return JSON.stringify(schema);
}

/**
 * Checks an offer's field_values (locked or not) against the version's input schema: bounds
 * first, no secret references, then every given value must match the schema (keys the customer
 * will fill in may be missing). 400 INVALID_ARGUMENT with field violations under `field`.
 */
export function checkOfferFieldValues(version: SchemaVersion, offer: OfferFieldValuesMap, field = 'body.field_values'): void {
  const values = plainValues(offer);
  checkFieldValuesBounds(values, field);
  refuseSecretRefs(values, field);
  // Cached apart from the full schema's validator: a derived schema of an immutable version.
  validateValues(`${version.id}#offer`, partialSchemaJson(version.input_schema), values, field);
}

/**
 * The configuration an order installs: the offer's unlocked values as pre-fills, the customer's
 * values over them, the offer's locked values over everything. A locked key the customer sends
 * with another value is 400 (reason VALUE_LOCKED); the same value is accepted. The result must
 * match the whole input schema (required keys included) and is returned with its defaults
 * applied. 400 INVALID_ARGUMENT with field violations under `field`.
 */
export function mergeFieldValues(
  version: SchemaVersion, offer: OfferFieldValuesMap, customer: Record<string, Json>, field = 'body.field_values',
): Record<string, Json> {
  checkFieldValuesBounds(customer, field);
  const violations: FieldViolation[] = [];
  for (const key of Object.keys(customer)) {
    const fixed = offer[key];
    if (fixed?.locked && canonicalJson(customer[key]) !== canonicalJson(fixed.value)) {
      violations.push({ field: `${field}.${key}`, description: 'is locked by the offer: leave it out' });
    }
  }
  if (violations.length > 0) {
    throw new ApiError('INVALID_ARGUMENT', `${violations[0]!.field} is locked by the offer`, { reason: 'VALUE_LOCKED', fieldViolations: violations });
  }
  const merged: Record<string, Json> = {};
  for (const [key, v] of Object.entries(offer)) if (!v.locked) merged[key] = v.value;
  Object.assign(merged, customer);
  for (const [key, v] of Object.entries(offer)) if (v.locked) merged[key] = v.value;
  checkFieldValuesBounds(merged, field);
  refuseSecretRefs(merged, field);
  return validateValues(version.id, version.input_schema, merged, field);
}

/**
 * The input schema as a customer sees it: the offer's locked keys dropped from `properties` and
 * `required`; an unlocked value becomes its property's `default` (the pre-fill a form shows).
 */
export function schemaWithoutLocked(inputSchemaJson: string, offer: OfferFieldValuesMap): Record<string, unknown> {
  const schema = JSON.parse(inputSchemaJson) as Record<string, unknown>;
  const locked = new Set(lockedKeysOf(offer));
  const properties = schema.properties;
  if (properties && typeof properties === 'object' && !Array.isArray(properties)) {
    const shown: Record<string, unknown> = {};
    for (const [key, sub] of Object.entries(properties as Record<string, unknown>)) {
      if (locked.has(key)) continue;
      const prefill = offer[key];
      shown[key] = prefill && sub && typeof sub === 'object' && !Array.isArray(sub) ? { ...sub, default: prefill.value } : sub;
    }
    schema.properties = shown;
  }
  if (Array.isArray(schema.required)) schema.required = schema.required.filter((k) => !locked.has(k as string));
  return schema;
}
