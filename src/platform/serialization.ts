import { SerializerSelector as selectSerializer } from '@fastify/fast-json-stringify-compiler';
import { Ajv } from 'ajv';
import addFormatsPlugin from 'ajv-formats';
import type { FastifyServerOptions } from 'fastify';

/**
 * The response serializer of every route (app.ts passes it as the schema controller's
 * `buildSerializer`): from a response schema it compiles a copy that keeps exactly the declared
 * properties (so no undeclared field is ever written, as with fast-json-stringify) into fresh
 * objects, then writes them with the native JSON.stringify: one flat string and native escaping,
 * where fast-json-stringify's concatenated output and its string escaping loop were a third of the
 * CPU of a list request.
 *
 * The copy only takes values that are exactly what the schema declares (a string for `string`, an
 * integer for `integer`, a plain object for `object`, every required property present...). Anything
 * else (a value fast-json-stringify would coerce, default, or refuse with an error) is handed to
 * fast-json-stringify, compiled for the same schema, so every such case behaves as it always did.
 * A schema using a keyword this compiler does not understand (allOf, if, const, tuples, local
 * `$ref`s...) is compiled by fast-json-stringify alone.
 */

type RouteSchema = { schema: unknown; method?: string; url?: string; httpStatus?: string };
type RouteCompiler = (route: RouteSchema) => (data: unknown) => string;
const SerializerSelector = selectSerializer as unknown as () => (external: unknown, options: unknown) => RouteCompiler;
// ajv-formats is CommonJS with a default export: the function is either the module or its `default`.
type AddFormats = (ajv: Ajv) => unknown;
const addFormats = (addFormatsPlugin as unknown as { default?: AddFormats }).default ?? (addFormatsPlugin as unknown as AddFormats);

type Schema = Record<string, unknown>;
type SerializerFactory = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer']>;
type SerializerCompiler = ReturnType<SerializerFactory>;
/** The value the copy returns when the data is not exactly as declared. */
const MISMATCH: unique symbol = Symbol('mismatch');
type Copy = (value: unknown) => unknown;

class Unsupported extends Error {}

/** Keywords that change nothing fast-json-stringify writes for a value of the declared type. */
const IGNORED = new Set([
  'description', 'title', 'examples', 'example', '$comment', 'deprecated', 'readOnly', 'writeOnly', 'headers', '$id', '$schema',
  'minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
  'enum', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties', 'propertyNames',
]);
const UNDERSTOOD = new Set([...IGNORED, 'type', 'nullable', 'format', 'properties', 'required', 'additionalProperties', 'patternProperties', 'items', 'default', '$ref', 'anyOf']);
/** String formats fast-json-stringify writes as the plain string when given a string. */
const PLAIN_FORMATS = new Set([undefined, 'date-time', 'date', 'time', 'uri', 'email', 'uuid', 'hostname', 'ipv4', 'ipv6', 'uri-reference', 'byte', 'regex']);

/** The type tests, as JavaScript on a variable: exactly the values written as they are. */
const TYPE_TESTS: Record<string, (v: string) => string> = {
  string: (v) => `typeof ${v} === 'string'`,
  integer: (v) => `Number.isInteger(${v})`,
  number: (v) => `(typeof ${v} === 'number' && Number.isFinite(${v}))`,
  boolean: (v) => `typeof ${v} === 'boolean'`,
  null: (v) => `${v} === null`,
  object: (v) => `(typeof ${v} === 'object' && ${v} !== null && !Array.isArray(${v}) && typeof ${v}.toJSON !== 'function')`,
  array: (v) => `Array.isArray(${v})`,
};
const CONSTRAINTS = new Set(['minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'enum']);

/**
 * Generates one function per named schema (and per route schema): straight-line code that reads
 * each declared property and builds the copy as one object literal (stable shapes, which
 * JSON.stringify walks fast). Any value not exactly as declared makes the function return MISMATCH.
 */
class Compiler {
  /** per `$id`: the index of its function in `functions`; null: left to fast-json-stringify */
  private readonly refs = new Map<string, number | null>();
  private readonly functions: Copy[] = [];
  /** branch tests and property-name patterns the generated code calls */
  private readonly helpers: unknown[] = [];
  private names = 0;
  private ajv: { compile(schema: unknown): (value: unknown) => boolean } | undefined;

  constructor(private readonly external: Record<string, Schema>) {}

  compile(schema: unknown): Copy {
    return this.functions[this.define(schema)]!;
  }

  private define(schema: unknown): number {
    const index = this.functions.length;
    this.functions.push(() => MISMATCH);
    const body = `let r;\n${this.gen(schema, 'v', 'r')}\nreturn r;`;
    // eslint-disable-next-line no-new-func
    this.functions[index] = new Function('M', 'H', 'F', `return function copy(v) {\n${body}\n}`)(MISMATCH, this.helpers, this.functions) as Copy;
    return index;
  }

  private name(): string {
    return `x${this.names++}`;
  }

  private helper(value: unknown): string {
    this.helpers.push(value);
    return `H[${this.helpers.length - 1}]`;
  }

  /** Statements that set `dst` to the copy of `src`, or return M. */
  private gen(schema: unknown, src: string, dst: string): string {
    if (schema === true) return `${dst} = ${src};`;
    if (typeof schema !== 'object' || schema === null) throw new Unsupported('boolean schema');
    const s = schema as Schema;
    for (const key of Object.keys(s)) if (!UNDERSTOOD.has(key) && !key.startsWith('x-')) throw new Unsupported(key);
    if (s.$ref !== undefined) return `${dst} = F[${this.reference(s)}](${src}); if (${dst} === M) return M;`;
    if (s.anyOf !== undefined) return this.anyOf(s, src, dst);
    const typed = this.typed(s, src, dst);
    return s.nullable === true ? `if (${src} === null) ${dst} = null; else {\n${typed}\n}` : typed;
  }

  /** `$ref: '<$id>#'` to a schema added with app.addSchema; the siblings may only annotate. */
  private reference(s: Schema): number {
    const ref = s.$ref;
    for (const key of Object.keys(s)) if (key !== '$ref' && !IGNORED.has(key)) throw new Unsupported(`$ref with ${key}`);
    if (typeof ref !== 'string' || !ref.endsWith('#') || ref.startsWith('#')) throw new Unsupported(`$ref ${String(ref)}`);
    const id = ref.slice(0, -1);
    const known = this.refs.get(id);
    if (known === null) throw new Unsupported(`$ref ${id}`);
    if (known !== undefined) return known;
    const target = this.external[id];
    if (!target) throw new Unsupported(`unknown $ref ${id}`);
    this.refs.set(id, this.functions.length); // a schema may refer to itself
    try {
      return this.define(target);
    } catch (error) {
      this.refs.set(id, null);
      throw error;
    }
  }

  /** Like fast-json-stringify: the first branch the value validates against serializes it. */
  private anyOf(s: Schema, src: string, dst: string): string {
    for (const key of Object.keys(s)) if (key !== 'anyOf' && !IGNORED.has(key)) throw new Unsupported(`anyOf with ${key}`);
    const branches = (s.anyOf as unknown[]).map((branch) => `if (${this.tester(branch, src)}) {\n${this.gen(branch, src, dst)}\n}`);
    return `${branches.join(' else ')} else return M;`;
  }

  /** A plain scalar branch is tested by its type; anything else by the validation fast-json-stringify runs. */
  private tester(branch: unknown, src: string): string {
    const b = branch as Schema;
    const plain = typeof b.type === 'string' && b.type !== 'object' && b.type !== 'array' && b.type in TYPE_TESTS && b.format === undefined &&
      Object.keys(b).every((key) => key === 'type' || (IGNORED.has(key) && !CONSTRAINTS.has(key)));
    if (plain) return TYPE_TESTS[b.type as string]!(src);
    return `${this.helper(this.validator().compile(branch))}(${src})`;
  }

  private validator() {
    if (!this.ajv) {
      const ajv = new Ajv({ strictSchema: false, validateSchema: false, allowUnionTypes: true });
      addFormats(ajv);
      for (const [id, schema] of Object.entries(this.external)) ajv.addSchema(schema, id);
      this.ajv = ajv;
    }
    return this.ajv;
  }

  private typed(s: Schema, src: string, dst: string): string {
    const type = s.type;
    if (type === undefined) {
      const keys = Object.keys(s).filter((key) => !IGNORED.has(key) || CONSTRAINTS.has(key));
      if (keys.length > 0) throw new Unsupported('untyped schema with keywords'); // fast-json-stringify infers a type
      return `${dst} = ${src};`; // any JSON: written as JSON.stringify writes it
    }
    if (Array.isArray(type)) {
      const options = type.map((t) => `if (${this.typeTest(t, s, src)}) {\n${this.typed({ ...s, type: t }, src, dst)}\n}`);
      return `${options.join(' else ')} else return M;`;
    }
    if (type === 'object') return this.object(s, src, dst);
    if (type === 'array') return this.array(s, src, dst);
    return `if (!(${this.typeTest(type, s, src)})) return M;\n${dst} = ${src};`;
  }

  private typeTest(type: unknown, s: Schema, src: string): string {
    if (type === 'string' && !PLAIN_FORMATS.has(s.format as string | undefined)) throw new Unsupported(`format ${String(s.format)}`);
    const test = TYPE_TESTS[type as string];
    if (!test) throw new Unsupported(`type ${String(type)}`);
    return test(src);
  }

  private array(s: Schema, src: string, dst: string): string {
    if (s.items === undefined || Array.isArray(s.items)) throw new Unsupported('array without one items schema');
    const [out, i, item] = [this.name(), this.name(), this.name()];
    return `if (!Array.isArray(${src})) return M;
const ${out} = new Array(${src}.length);
for (let ${i} = 0; ${i} < ${src}.length; ${i}++) {
  let ${item} = ${src}[${i}];
  if (${item} === undefined) return M;
  ${this.gen(s.items, item, item)}
  ${out}[${i}] = ${item};
}
${dst} = ${out};`;
  }

  private object(s: Schema, src: string, dst: string): string {
    const required = new Set((s.required as string[] | undefined) ?? []);
    // fast-json-stringify writes the required properties first; so does the copy.
    const names = Object.keys((s.properties as Record<string, unknown> | undefined) ?? {});
    names.sort((a, b) => Number(required.has(b)) - Number(required.has(a)));
    for (const name of required) if (!names.includes(name)) throw new Unsupported('required property without a schema');
    if (names.includes('__proto__')) throw new Unsupported('__proto__ property');
    let code = `if (!(${TYPE_TESTS.object!(src)})) return M;\n`;
    const fields: string[] = [];
    for (const name of names) {
      const schema = (s.properties as Record<string, Schema>)[name];
      const variable = this.name();
      const key = JSON.stringify(name);
      // A missing property that is required (an error) or has a default (written): fast-json-stringify's case.
      const missing = required.has(name) || (typeof schema === 'object' && schema.default !== undefined) ? 'return M;' : '';
      code += `let ${variable} = ${src}[${key}];\n`;
      code += missing ? `if (${variable} === undefined) return M;\n${this.gen(schema, variable, variable)}\n` : `if (${variable} !== undefined) {\n${this.gen(schema, variable, variable)}\n}\n`;
      fields.push(`${key}: ${variable}`);
    }
    const out = this.name();
    code += `const ${out} = {${fields.join(', ')}};\n`;
    const patterns = Object.entries((s.patternProperties as Record<string, unknown> | undefined) ?? {});
    const additional = s.additionalProperties === undefined || s.additionalProperties === false ? undefined : s.additionalProperties;
    if (patterns.length > 0 || additional !== undefined) {
      const [key, value] = [this.name(), this.name()];
      const declared = this.helper(new Set(names));
      code += `for (const ${key} of Object.keys(${src})) {
  let ${value} = ${src}[${key}];
  if (${declared}.has(${key}) || ${value} === undefined || typeof ${value} === 'function' || typeof ${value} === 'symbol') continue;
  if (${key} === '__proto__') return M;\n`;
      for (const [pattern, schema] of patterns) {
        code += `if (${this.helper(new RegExp(pattern))}.test(${key})) {\n${this.gen(schema, value, value)}\n${out}[${key}] = ${value};\ncontinue;\n}\n`;
      }
      if (additional !== undefined) code += `${this.gen(additional, value, value)}\n${out}[${key}] = ${value};\n`;
      code += '}\n';
    }
    return `${code}${dst} = ${out};`;
  }
}

/**
 * The schema controller's `buildSerializer`: called with the schemas added with app.addSchema
 * (each plugin context gets its own), it returns the compiler of each route's response schemas.
 */
export function nativeSerialization(): SerializerFactory {
  const defaults = SerializerSelector();
  return function buildSerializer(externalSchemas: unknown, options: unknown) {
    const external = (externalSchemas ?? {}) as Record<string, Schema>;
    const fallback = defaults(external, options);
    const compiler = new Compiler(external);
    // Both are compiled on a route's first response, never at start: fast-json-stringify alone
    // took about 5 s of CPU to compile every route's schemas eagerly, for a fallback that most
    // responses never reach (bench/start.js).
    const compile: RouteCompiler = (route) => {
      let slow: ((data: unknown) => string) | undefined;
      const slowly = (data: unknown) => (slow ??= fallback(route))(data);
      let copy: Copy | null | undefined;
      return (data) => {
        if (copy === undefined) {
          try {
            copy = compiler.compile(route.schema);
          } catch (error) {
            if (!(error instanceof Unsupported)) throw error;
            copy = null;
          }
        }
        if (copy === null) return slowly(data);
        const copied = copy(data);
        return copied === MISMATCH || copied === undefined ? slowly(data) : JSON.stringify(copied);
      };
    };
    return compile as unknown as SerializerCompiler;
  };
}
