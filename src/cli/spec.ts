// The command tree, derived from the OpenAPI document the server serves, so every operation a
// server module adds becomes a command without client code. `npm run generate:client` derives it
// (buildCommandTree) into src/cli/generated/commands.json, which the client reads at each run: a
// command line reads some 200 KB instead of parsing the 1.3 MB document and deriving every command
// again (80 ms of each invocation's ~300). THE RULE:
//
//   every operation under /v1/ is the command `svc <resource> <action>`, where
//   - resource = its first tag in kebab case ("api tokens" -> api-tokens);
//   - action   = its operationId without the tag's noun (singular or plural, case-insensitive,
//                first occurrence), in kebab case: createWorkspace -> create,
//                listWorkspaceMembers -> list-members, bindFloatingPreviewHostname -> bind-floating;
//                if that collides with another action of the resource, the whole operationId in kebab case;
//   - path parameters are positional arguments, in path order;
//   - query parameters, headers and the JSON body's fields are flags named after the fields in kebab
//     case; fields of nested objects are dotted flags (--package-version-pin.kind); anything deeper
//     (arrays of objects) goes through --input FILE|- (a whole JSON body, which flags then override);
//   - a free-form map field (labels, inputs, values) is a repeatable `--<singular> key=value` flag
//     (--label env=prod, --input days=7); values are typed by the map's value schema (strings stay
//     strings, integers and numbers are parsed, anything else reads as JSON when it parses as JSON:
//     7, true, null, {"a":1}; else as the string). Where the singular is `input`, the one --input
//     flag takes both: `key=value` is an entry, anything else the body file;
//   - a long text field (over 4 KiB: a secret value, a kubeconfig, snippet code) also has
//     `--<flag>-file FILE|-`, read exactly as UTF-8 (no trailing newline stripped), so values need not
//     appear in shell history or in `ps`;
//   - a command whose success response is an Operation accepts --wait; a GET answering
//     {data, next_cursor} is a list (--all follows the cursors); DELETE commands are destructive
//     (confirmation on a terminal, --yes elsewhere);
//   - a write that needs if-match reads the current etag first when --if-match is left out (the GET of
//     its path, or for a custom method `…:verb` the GET of the resource it acts on).
// Paths outside /v1 (probes, metrics, the OAuth protocol endpoints that `svc login` drives) are not commands,
// nor are operations marked `x-svc-cli: false` (the machine agent's calls, made by `svc machine join`).
import { readFileSync } from 'node:fs';

export type JsonSchema = {
  type?: string | string[];
  $ref?: string;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  description?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  additionalProperties?: boolean | JsonSchema;
  [key: string]: unknown;
};

interface RawParameter { name: string; in: string; required?: boolean; description?: string; schema?: JsonSchema }
interface RawOperation {
  tags?: string[];
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: RawParameter[];
  requestBody?: { required?: boolean; description?: string; content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: JsonSchema }> }>;
  'x-svc-auth'?: string;
  /** more names of the same command, `<resource> <action>` (e.g. `secrets access` for `secret-versions access`) */
  'x-svc-cli-aliases'?: string[];
  /** false: not a command (the machine agent's calls, which `svc machine join` makes) */
  'x-svc-cli'?: boolean;
}
export interface OpenApiDocument {
  info?: { title?: string; description?: string };
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, RawOperation>>;
  components?: { schemas?: Record<string, JsonSchema> };
}

/** A scalar input of a command: a query parameter, a header or a (possibly nested) body field. */
export interface Flag {
  /** the flag without dashes: `package-id`, `package-version-pin.kind`, `if-match` */
  flag: string;
  in: 'query' | 'header' | 'body';
  /** the query/header name, or the body path */
  key: string[];
  /** `map`: repeatable key=value; `file`: the path of a file (or -) whose text is the value of `key` */
  type: 'string' | 'integer' | 'number' | 'boolean' | 'array' | 'map' | 'file';
  /** map flags: how each entry's value is typed */
  mapValues?: 'string' | 'integer' | 'number' | 'json';
  choices: string[] | null;
  required: boolean;
  /** the first sentence of the field's description (the rest belongs to the API reference) */
  description: string;
  /** integer and number flags: the schema's bounds, checked when the command line is parsed */
  minimum?: number;
  maximum?: number;
}

export interface CommandSpec {
  resource: string;
  action: string;
  operationId: string;
  method: string;
  path: string;
  summary: string;
  description: string;
  /** x-svc-auth: none | user | any | workspace | workspace-path */
  auth: string;
  args: { name: string; description: string; type: Flag['type']; minimum?: number; maximum?: number }[];
  flags: Flag[];
  /** request body examples of the document (`example`, or each of `examples`), for --help */
  bodyExamples: unknown[];
  body: { required: boolean; description: string; requiredFields: string[]; inputOnly: string[] } | null;
  returnsOperation: boolean;
  isList: boolean;
  destructive: boolean;
  /** the GET of the same path, read first when --if-match is left out */
  etagSource: string | null;
}

export interface ResourceSpec {
  name: string;
  description: string;
  commands: CommandSpec[];
}

/** Flags every command may have; a field with one of these names is reachable through --input only. */
export const RESERVED_FLAGS = new Set(['json', 'field', 'yes', 'wait', 'input', 'all', 'help']);


export function kebab(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1-$2')
    .replace(/[\s_]+/g, '-')
    .toLowerCase();
}

export function deriveAction(operationId: string, tag: string): string {
  const noun = tag.replace(/\s+/g, '').replace(/s$/i, '');
  const stripped = operationId.replace(new RegExp(`${noun}s?`, 'i'), '');
  return kebab(stripped || operationId).replace(/^-+|-+$/g, '');
}

export function resolve(doc: OpenApiDocument, schema: JsonSchema | undefined): JsonSchema {
  let s = schema ?? {};
  for (let i = 0; s.$ref && i < 10; i++) s = doc.components?.schemas?.[s.$ref.replace(/^#\/components\/schemas\//, '').replace(/#$/, '')] ?? {};
  // `X | null` reads as X (the flag is optional anyway).
  if (s.anyOf) {
    const nonNull = s.anyOf.filter((a) => a.type !== 'null');
    if (nonNull.length === 1) return { ...resolve(doc, nonNull[0]), description: s.description ?? nonNull[0]!.description };
  }
  return s;
}

function scalarType(s: JsonSchema): Flag['type'] | null {
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
  if (t === 'string' || t === 'integer' || t === 'number' || t === 'boolean') return t;
  if (s.enum || s.const !== undefined) return 'string';
  return null;
}

function describe(s: JsonSchema): string {
  return withoutApiProse(firstSentence((s.description ?? '').replace(/\s+/g, ' ').trim()));
}

/** A status code (`is 409`, `(204)`, `else 400`) or a reason code (ALREADY_EXISTS; not SVC_ settings). */
const API_PROSE = /(?:\b(?:is|are|else|with|returns?)\s+|[(:]\s*|^)[1-5]\d\d\b|\b(?!SVC_)[A-Z]{2,}(?:_[A-Z]+)+\b/;
export const isApiProse = (text: string) => API_PROSE.test(text);

/**
 * A description without what the API reference says about status and reason codes: parentheses and
 * `;` clauses that name them are dropped (`unique in the workspace (a taken name is 409
 * ALREADY_EXISTS)` -> `unique in the workspace`). The terminal's help is about what to type.
 */
export function withoutApiProse(text: string): string {
  const kept = text.replace(/\s*\([^()]*\)/g, (group) => (isApiProse(group) ? '' : group))
    .split(/;\s+/).filter((clause, i) => i === 0 || !isApiProse(clause)).join('; ')
    .replace(/,\s+else\s[^;]*$/, (c) => (isApiProse(c) ? '' : c));
  return text.endsWith('.') && !kept.endsWith('.') ? `${kept}.` : kept;
}

/**
 * The first sentence of a description: up to the first `. ` that is outside parentheses and
 * backticks and does not end an abbreviation or an ellipsis (`ws_...`, `e.g.`).
 */
export function firstSentence(text: string): string {
  let depth = 0;
  let code = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '`') code = !code;
    else if (code) continue;
    else if (ch === '(' || ch === '[' || ch === '{') depth++;
    else if ((ch === ')' || ch === ']' || ch === '}') && depth > 0) depth--;
    else if (ch === '.' && depth === 0 && (i + 1 === text.length || /\s/.test(text[i + 1]!))) {
      if (text[i - 1] === '.' || /\b(e\.g|i\.e|etc|vs)$/.test(text.slice(0, i))) continue;
      return text.slice(0, i + 1);
    }
  }
  return text;
}

/** The bounds of an integer or number schema, for the flags that check them at parse time. */
function bounds(s: JsonSchema): { minimum?: number; maximum?: number } {
  return {
    ...(typeof s.minimum === 'number' ? { minimum: s.minimum } : {}),
    ...(typeof s.maximum === 'number' ? { maximum: s.maximum } : {}),
  };
}

/** A text field long enough to come from a file (secret values, kubeconfigs, code). */
const FILE_FIELD_MIN = 4096;

/** `labels` -> label, `inputs` -> input, `version_aliases` -> version-alias. */
export function singular(flag: string): string {
  if (/(ss|[sxz]|ch|sh)es$/.test(flag)) return flag.slice(0, -2);
  return flag.replace(/([^s])s$/, '$1');
}

function mapValues(s: JsonSchema): Flag['mapValues'] {
  const v = typeof s.additionalProperties === 'object' ? scalarType(s.additionalProperties) : null;
  return v === 'string' || v === 'integer' || v === 'number' ? v : 'json';
}

/** Body fields as flags (nested objects dotted, two levels deep); the rest is --input only. */
function bodyFlags(doc: OpenApiDocument, schema: JsonSchema, prefix: string[], required: Set<string>, out: Flag[], inputOnly: string[]): void {
  for (const [name, raw] of Object.entries(schema.properties ?? {})) {
    const s = resolve(doc, raw);
    const key = [...prefix, name];
    const flag = key.map(kebab).join('.');
    const type = scalarType(s);
    const isRequired = prefix.length === 0 && required.has(name);
    if (prefix.length === 0 && RESERVED_FLAGS.has(flag)) inputOnly.push(flag);
    else if (type) {
      const choices = s.enum ? s.enum.map(String) : s.const !== undefined ? [String(s.const)] : null;
      out.push({ flag, in: 'body', key, type, choices, required: isRequired, description: describe(s), ...bounds(s) });
      if (type === 'string' && !choices && typeof s.maxLength === 'number' && s.maxLength > FILE_FIELD_MIN) {
        out.push({ flag: `${flag}-file`, in: 'body', key, type: 'file', choices: null, required: false, description: `read ${key.join('.')} from a file, or - for stdin, exactly (a trailing newline is kept); instead of --${flag}, so the value is not in shell history or ps` });
      }
    } else if (s.type === 'array' && s.items && scalarType(resolve(doc, s.items))) {
      out.push({ flag, in: 'body', key, type: 'array', choices: null, required: isRequired, description: `${describe(s)} (repeat the flag for several)` });
    } else if (s.properties && Object.keys(s.properties).length && prefix.length < 2) {
      bodyFlags(doc, s, key, new Set(), out, inputOnly);
    } else if (s.type === 'object' && s.additionalProperties) {
      const one = [...key.slice(0, -1).map(kebab), singular(kebab(name))].join('.');
      const taken = one !== 'input' && (RESERVED_FLAGS.has(one) || out.some((f) => f.flag === one) || Object.keys(schema.properties ?? {}).some((k) => kebab(k) === one));
      out.push({ flag: taken ? flag : one, in: 'body', key, type: 'map', mapValues: mapValues(s), choices: null, required: isRequired, description: `${describe(s)} (key=value; repeat the flag for several)` });
    } else inputOnly.push(flag);
  }
}

/** The GET that reads the etag a write needs: its own path's, or for a custom method (`…/{vid}:disable`) its resource's. */
function etagPath(doc: OpenApiDocument, path: string): string | null {
  const resource = path.replace(/:[A-Za-z]+$/, '');
  return doc.paths[path]?.get ? path : doc.paths[resource]?.get ? resource : null;
}

function successResponse(op: RawOperation): { status: number; schema: JsonSchema | undefined } {
  const status = Object.keys(op.responses ?? {}).map(Number).filter((n) => n >= 200 && n < 300).sort()[0] ?? 200;
  return { status, schema: op.responses?.[String(status)]?.content?.['application/json']?.schema };
}

function buildCommand(doc: OpenApiDocument, method: string, path: string, op: RawOperation, resource: string, action: string): CommandSpec {
  const params = op.parameters ?? [];
  const args = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => {
    const p = params.find((x) => x.in === 'path' && x.name === m[1]);
    const s = resolve(doc, p?.schema);
    return { name: m[1]!, description: describe({ description: p?.description ?? '' }), type: scalarType(s) ?? 'string', ...bounds(s) };
  });
  const flags: Flag[] = [];
  for (const p of params) {
    if (p.in !== 'query' && p.in !== 'header') continue;
    const s = resolve(doc, p.schema);
    flags.push({
      flag: kebab(p.name),
      in: p.in,
      key: [p.name],
      type: scalarType(s) ?? 'string',
      choices: s.enum ? s.enum.map(String) : null,
      required: Boolean(p.required) && p.name !== 'if-match',
      description: describe({ description: p.description ?? s.description }),
      ...bounds(s),
    });
  }
  let body: CommandSpec['body'] = null;
  const content = op.requestBody?.content?.['application/json'] as { schema?: JsonSchema; example?: unknown; examples?: Record<string, { value?: unknown }> } | undefined;
  const bodySchema = content?.schema;
  const bodyExamples = content?.example !== undefined ? [content.example] : Object.values(content?.examples ?? {}).map((e) => e.value).filter((v) => v !== undefined);
  if (bodySchema) {
    const s = resolve(doc, bodySchema);
    const inputOnly: string[] = [];
    bodyFlags(doc, s, [], new Set(s.required ?? []), flags, inputOnly);
    body = { required: Boolean(op.requestBody?.required), description: describe(s), requiredFields: s.required ?? [], inputOnly };
  }
  const success = successResponse(op);
  const resolved = resolve(doc, success.schema);
  const props = resolved.properties ?? {};
  // An operation may also be one of several answers (:changeTier answers a plan checkout or an Operation): --wait applies when it is.
  const accepted = resolve(doc, op.responses?.['202']?.content?.['application/json']?.schema).properties ?? {};
  const isOperation = (p: Record<string, unknown>) => 'done' in p && 'state' in p && 'steps' in p;
  const hasIfMatch = params.some((p) => p.in === 'header' && p.name === 'if-match');
  return {
    resource,
    action,
    operationId: op.operationId ?? `${method}${path}`,
    method: method.toUpperCase(),
    path,
    summary: (op.summary ?? '').trim(),
    description: (op.description ?? '').trim(),
    auth: op['x-svc-auth'] ?? 'any',
    args,
    flags,
    bodyExamples,
    body,
    returnsOperation: isOperation(props) || isOperation(accepted),
    isList: method === 'get' && 'data' in props && 'next_cursor' in props,
    destructive: method === 'delete',
    etagSource: hasIfMatch ? etagPath(doc, path) : null,
  };
}

let tree: ResourceSpec[] | null = null;

/**
 * Every resource with its commands, as `npm run generate:client` derived them (memoized). The file
 * sits at the same depth below the package root in src/cli/ and dist/cli/, so one relative URL
 * serves the built executable and the sources (package.json "files" ships it).
 */
export function commandTree(): ResourceSpec[] {
  tree ??= JSON.parse(readFileSync(new URL('../../src/cli/generated/commands.json', import.meta.url), 'utf8')) as ResourceSpec[];
  return tree;
}

/** Every resource of the document with its commands, by the rule above (the generator's; commandTree reads its result). */
export function buildCommandTree(doc: OpenApiDocument): ResourceSpec[] {
  const byName = new Map<string, ResourceSpec>();
  for (const [path, ops] of Object.entries(doc.paths)) {
    if (!path.startsWith('/v1/')) continue;
    for (const [method, op] of Object.entries(ops)) {
      if (!op || typeof op !== 'object' || !op.operationId || op['x-svc-cli'] === false) continue;
      const tag = op.tags?.[0] ?? 'other';
      const name = kebab(tag);
      let res = byName.get(name);
      if (!res) {
        res = { name, description: doc.tags?.find((t) => t.name === tag)?.description ?? '', commands: [] };
        byName.set(name, res);
      }
      let action = deriveAction(op.operationId, tag);
      if (res.commands.some((c) => c.action === action)) action = kebab(op.operationId);
      res.commands.push(buildCommand(doc, method, path, op, name, action));
      // An alias is the same command under another resource, where users look for it first.
      for (const alias of op['x-svc-cli-aliases'] ?? []) {
        const [aliasResource, aliasAction] = alias.split(' ') as [string, string];
        const target = byName.get(aliasResource) ?? { name: aliasResource, description: '', commands: [] };
        byName.set(aliasResource, target);
        target.commands.push(buildCommand(doc, method, path, op, aliasResource, aliasAction));
      }
    }
  }
  // A resource first met through an alias takes its description from its own tag.
  for (const res of byName.values()) res.description ||= doc.tags?.find((t) => kebab(t.name) === res.name)?.description ?? '';
  return [...byName.values()];
}
