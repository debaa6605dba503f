// The input schema of a package version: a JSON Schema (2020-12) that install values must match.
// Schemas come from users, so they are treated as untrusted: a size and depth limit, no remote
// `$ref` (Ajv is given no loadSchema), Ajv's strict mode, a fresh Ajv instance per schema (so a
// schema can never `$ref` another workspace's schema by its `$id`). Validation against a tenant's
// values is bounded so that one install request cannot stall the process for every tenant:
//   - regular expressions run on RE2 (re2js), whose matching is linear in the input; what RE2
//     cannot express (lookaround, backreferences) is refused at publish;
//   - `uniqueItems` compares canonical JSON in a hash set (linear) instead of Ajv's pairwise
//     deep-equal (quadratic);
//   - values are at most VALUES_MAX_BYTES as JSON and VALUES_MAX_DEPTH deep, and a schema holds at
//     most INPUT_SCHEMA_MAX_PATTERNS regular expressions, so the work of one validation is bounded.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import type { Json } from '../../jobs/workflows.js';
import { ApiError, type FieldViolation } from '../../platform/errors.js';
import { nestsDeeperThan } from './package-manifest.js';
import { RE2JS } from 're2js';
import { canonicalJson } from './render.js';

export const INPUT_SCHEMA_MAX_BYTES = 64 * 1024;
/** nesting of objects and arrays in the schema document */
export const INPUT_SCHEMA_MAX_DEPTH = 32;
/** nesting of objects and arrays in install values */
export const VALUES_MAX_DEPTH = 64;
/** install values as JSON, bytes: values are configuration, not data */
export const VALUES_MAX_BYTES = 64 * 1024;
/** `pattern` and `patternProperties` keys in one schema (each may run over every string of the values) */
export const INPUT_SCHEMA_MAX_PATTERNS = 16;
const MAX_VIOLATIONS = 20;
const CACHE_SIZE = 500;

// ajv-formats is CommonJS with a default export; under NodeNext the function is either the module or its `default`.
type AddFormats = (ajv: Ajv2020) => unknown;
const addFormats: AddFormats =
  (addFormatsPlugin as unknown as { default?: AddFormats }).default ?? (addFormatsPlugin as unknown as AddFormats);

function schemaError(description: string, field = 'body.input_schema'): ApiError {
  return new ApiError('INVALID_ARGUMENT', `input_schema is not usable: ${description}`, {
    reason: 'INPUT_SCHEMA_INVALID',
    fieldViolations: [{ field, description }],
  });
}

const SINGLE = ['additionalProperties', 'propertyNames', 'items', 'contains', 'if', 'then', 'else', 'not', 'unevaluatedItems', 'unevaluatedProperties', 'contentSchema'];
const MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];

/** Counts the regular expressions of the schema (`pattern` and `patternProperties` keys). */
function countPatterns(schema: unknown): number {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return 0;
  const s = schema as Record<string, unknown>;
  let n = typeof s.pattern === 'string' ? 1 : 0;
  if (s.patternProperties && typeof s.patternProperties === 'object') n += Object.keys(s.patternProperties).length;
  for (const k of SINGLE) n += countPatterns(s[k]);
  for (const k of MAPS) {
    const map = s[k];
    if (map && typeof map === 'object' && !Array.isArray(map)) for (const sub of Object.values(map)) n += countPatterns(sub);
  }
  for (const k of LISTS) {
    const list = s[k];
    if (Array.isArray(list)) for (const sub of list) n += countPatterns(sub);
  }
  return n;
}

/** Thrown by the RE2 engine for syntax it does not support; Ajv's compile passes it on. */
class UnsupportedPattern extends Error {}

/**
 * Ajv's RegExp engine for tenant schemas: RE2, linear-time. Ajv asks for `(pattern, "u")` and
 * calls `.test(string)`; RE2 matches Unicode code points always, so the flag needs no mapping.
 * Differences from ECMAScript that remain: `\s` is ASCII whitespace only, and `.` matches `\r`.
 */
function re2(pattern: string): { test(input: string): boolean; toString(): string } {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern);
  } catch (err) {
    throw new UnsupportedPattern(`pattern ${JSON.stringify(pattern.slice(0, 100))} is not supported by the linear-time (RE2) engine: ${String((err as Error).message).slice(0, 200)}`);
  }
  // Ajv caches compiled patterns by toString(): it must differ between patterns.
  return { test: (input: string) => compiled.matcher(input).find(), toString: () => `re2:${pattern}` };
}
re2.code = 're2';

/** `uniqueItems` in linear time: canonical JSON (sorted keys) of each item in a set. */
function uniqueItems(schema: boolean, data: unknown[]): boolean {
  if (!schema || data.length < 2) return true;
  const seen = new Set<string>();
  for (const item of data) {
    const key = typeof item === 'string' ? `s${item}` : canonicalJson(item);
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
}

function newAjv(options: { validateSchema: boolean }): Ajv2020 {
  const ajv = new Ajv2020({
    strict: true,
    // `type: ["string", "null"]` is ordinary JSON Schema; strict mode would refuse it.
    allowUnionTypes: true,
    allErrors: true,
    useDefaults: true,
    // No loadSchema: a `$ref` to anything outside the schema is a compile error.
    validateFormats: true,
    validateSchema: options.validateSchema,
    code: { regExp: re2 as never },
  });
  addFormats(ajv);
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({
    keyword: 'uniqueItems',
    type: 'array',
    schemaType: 'boolean',
    errors: false,
    validate: uniqueItems,
  });
  return ajv;
}

/**
 * Checks schemas against the 2020-12 meta-schema. Shared, because compiling the meta-schema takes
 * ~100 ms; it never compiles a user's schema, so no `$id` of one can reach another.
 */
let metaSchemaChecker: Ajv2020 | null = null;
/** Built on first use: a process that never publishes a version does not pay its time or memory. */
function metaChecker(): Ajv2020 {
  return (metaSchemaChecker ??= newAjv({ validateSchema: true }));
}

/**
 * Compiles an input schema after its guards; throws 400 INVALID_ARGUMENT (reason
 * INPUT_SCHEMA_INVALID, field `body.input_schema`) when it is unusable.
 */
export function compileInputSchema(schema: unknown): ValidateFunction {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) throw schemaError('must be a JSON Schema object');
  // Depth first: serialising a hostile nesting would overflow the stack.
  if (nestsDeeperThan(schema, INPUT_SCHEMA_MAX_DEPTH)) throw schemaError(`nests deeper than ${INPUT_SCHEMA_MAX_DEPTH} levels`);
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > INPUT_SCHEMA_MAX_BYTES) throw schemaError(`is ${bytes} bytes as JSON; at most ${INPUT_SCHEMA_MAX_BYTES} are accepted`);
  const patterns = countPatterns(schema);
  if (patterns > INPUT_SCHEMA_MAX_PATTERNS) throw schemaError(`has ${patterns} regular expressions (pattern, patternProperties); at most ${INPUT_SCHEMA_MAX_PATTERNS} are accepted`);
  if ((schema as Record<string, unknown>).type !== 'object') throw schemaError('the root must have `type: "object"` (install values are an object)', 'body.input_schema.type');
  const checker = metaChecker();
  let valid: boolean;
  try {
    // Throws (rather than returning false) for a `$schema` it does not know, such as draft-07's.
    valid = checker.validateSchema(schema) as boolean;
  } catch (err) {
    throw schemaError(`${String((err as Error).message ?? err).slice(0, 1000)}; only draft 2020-12 is accepted`);
  }
  if (!valid) {
    throw schemaError(checker.errorsText(checker.errors, { dataVar: 'input_schema', separator: '; ' }).slice(0, 1000));
  }
  // A fresh instance per schema: `$id`s and anchors of one schema are never visible to another.
  const ajv = newAjv({ validateSchema: false });
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (err) {
    if (err instanceof UnsupportedPattern) throw schemaError(err.message);
    throw schemaError(String((err as Error).message ?? err).slice(0, 1000));
  }
  // An async validator answers with a promise, which would read as "valid".
  if ((validate as { $async?: boolean }).$async) throw schemaError('`$async` schemas are not accepted', 'body.input_schema.$async');
  return validate;
}

/** Compiled validators by version id: versions are immutable, so an entry never goes stale. */
const validators = new Map<string, ValidateFunction>();

function validatorFor(versionId: string, inputSchemaJson: string): ValidateFunction {
  const cached = validators.get(versionId);
  if (cached) {
    // Least recently used goes first: re-insert on use.
    validators.delete(versionId);
    validators.set(versionId, cached);
    return cached;
  }
  let validate: ValidateFunction;
  try {
    validate = compileInputSchema(JSON.parse(inputSchemaJson));
  } catch {
    // It compiled when it was published; only a change of validator could make it unusable now.
    throw new ApiError('FAILED_PRECONDITION', `the input schema of package version ${versionId} can no longer be compiled; publish a new version`, {
      reason: 'INPUT_SCHEMA_UNUSABLE',
    });
  }
  validators.set(versionId, validate);
  if (validators.size > CACHE_SIZE) validators.delete(validators.keys().next().value!);
  return validate;
}

function violationOf(error: ErrorObject, field: string): FieldViolation {
  const segments = error.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  let path = [field, ...segments].join('.');
  let description = error.message ?? 'is invalid';
  if (error.keyword === 'required' && typeof error.params.missingProperty === 'string') {
    path = `${path}.${error.params.missingProperty}`;
    description = 'is required';
  } else if (error.keyword === 'additionalProperties' && typeof error.params.additionalProperty === 'string') {
    path = `${path}.${error.params.additionalProperty}`;
    description = 'is not allowed by the input schema';
  }
  return { field: path, description };
}

/** Keywords about a string's content: a secret reference's value is unknown here, so they are not checked on one. */
const CONTENT_KEYWORDS = new Set(['minLength', 'maxLength', 'pattern', 'format', 'enum', 'const', 'contentEncoding', 'contentMediaType']);
/** What stands in for a secret reference while the values are validated: a string, as the value will be. */
const SECRET_STAND_IN = '(secret)';

const pointerOf = (path: string[]) => path.map((p) => `/${p.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

function setAt(root: Record<string, Json>, path: string[], value: Json): void {
  let node: Record<string, Json> = root;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, Json>;
  node[path[path.length - 1]!] = value;
}

function getAt(root: Record<string, Json>, path: string[]): Json {
  let node: Json = root;
  for (const key of path) node = (node as Record<string, Json>)[key]!;
  return node;
}

/**
 * The bounds of install values (depth, then size as JSON), checked before any other work walks
 * them (secret references, the schema): 400 VALUES_INVALID / VALUES_TOO_LARGE naming `field`.
 */
export function checkValuesBounds(values: Record<string, Json>, field: string): void {
  if (nestsDeeperThan(values, VALUES_MAX_DEPTH)) {
    throw new ApiError('INVALID_ARGUMENT', `${field} nests deeper than ${VALUES_MAX_DEPTH} levels`, {
      reason: 'VALUES_INVALID',
      fieldViolations: [{ field, description: `nests objects and arrays deeper than ${VALUES_MAX_DEPTH} levels` }],
    });
  }
  const bytes = Buffer.byteLength(JSON.stringify(values));
  if (bytes > VALUES_MAX_BYTES) {
    throw new ApiError('INVALID_ARGUMENT', `${field} is ${bytes} bytes as JSON; at most ${VALUES_MAX_BYTES} are accepted`, {
      reason: 'VALUES_TOO_LARGE',
      fieldViolations: [{ field, description: `at most ${VALUES_MAX_BYTES} bytes as JSON` }],
    });
  }
}

/**
 * Validates install values (within checkValuesBounds: the caller checks those first) against a version's input schema and returns them with the schema's
 * defaults applied (a copy: the argument is not changed). Throws 400 INVALID_ARGUMENT (reason
 * VALUES_INVALID) whose field violations name each bad value under `field`, e.g.
 * `{field: 'body.initial_values.replicas', description: 'must be <= 10'}`.
 *
 * `secretPaths` are where the values hold secret references (`{"$secret": ...}`): each stands
 * for a string, so it is valid where the schema expects a string; the string's content rules
 * (pattern, length, format, enum) cannot be checked against a value the request does not carry.
 */
export function validateValues(
  versionId: string,
  inputSchemaJson: string,
  values: Record<string, Json>,
  field = 'body.initial_values',
  secretPaths: string[][] = [],
): Record<string, Json> {
  const validate = validatorFor(versionId, inputSchemaJson);
  const copy = structuredClone(values);
  for (const path of secretPaths) setAt(copy, path, SECRET_STAND_IN);
  const restore = () => {
    for (const path of secretPaths) setAt(copy, path, structuredClone(getAt(values, path)));
    return copy;
  };
  if (validate(copy)) return restore();
  const opaque = new Set(secretPaths.map(pointerOf));
  const errors = (validate.errors ?? []).filter((e) => !(opaque.has(e.instancePath) && CONTENT_KEYWORDS.has(e.keyword)));
  if (errors.length === 0) return restore();
  const violations = errors.slice(0, MAX_VIOLATIONS).map((e) => {
    const v = violationOf(e, field);
    return opaque.has(e.instancePath) && e.keyword === 'type' ? { ...v, description: `a secret reference stands for a string, but the input schema wants ${v.description.replace(/^must be /, '')} here` } : v;
  });
  const first = violations[0];
  throw new ApiError('INVALID_ARGUMENT', first ? `${first.field} ${first.description}` : 'values do not match the input schema', {
    reason: 'VALUES_INVALID',
    fieldViolations: violations,
  });
}
