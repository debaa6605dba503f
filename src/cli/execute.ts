// Running one command derived from the OpenAPI document (spec.ts): arguments and flags become the
// request, the answer becomes a table, a record or the API's exact JSON.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import { CliError, EXIT, type Api, type ApiResult } from './http.js';
import { pick, printField, printJson, type Output } from './output.js';
import { defaultColumns, lookupNames, presenterFor, RECORD_TABLES } from './presenters.js';
import { printRecord, printTable } from './table.js';
import type { CommandSpec, Flag } from './spec.js';
import { followOperation, type OperationBody, type WaitResult } from './wait.js';

export interface CommonFlags {
  json?: boolean;
  /** --field PATH: one field of what --json would print */
  field?: string;
  yes?: boolean;
  wait?: boolean;
  all?: boolean;
  input?: string;
}

export interface Invocation {
  spec: CommandSpec;
  positional: string[];
  /** flag values by Flag (typed by the option parsers; map flags: the raw `key=value` strings) */
  values: Map<Flag, unknown>;
  common: CommonFlags;
  /** options a presenter adds to the command (presenters.ts), by attribute name */
  extra?: Record<string, unknown>;
  /** types one map entry's value (a presenter's prepare may know better, e.g. a snippet's declared inputs) */
  coerce?: (flag: Flag, key: string, raw: string) => unknown;
}

export function usage(message: string): CliError {
  return new CliError(message, EXIT.USAGE);
}

/**
 * The text of FILE (or stdin for `-`), exactly: no trailing newline is stripped (what `> file` wrote
 * is what is sent). Not valid UTF-8 is a usage error rather than silently replaced characters.
 */
export function readText(flag: string, source: string): string {
  let bytes: Buffer;
  // typed at a terminal: the text ends with Ctrl-D (a newline typed before it is part of it)
  if (source === '-' && process.stdin.isTTY) process.stderr.write(`${flag}: reading stdin until Ctrl-D\n`);
  try {
    bytes = readFileSync(source === '-' ? 0 : source);
  } catch (err) {
    throw usage(`${flag} ${source}: ${(err as Error).message}`);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw usage(`${flag} ${source} is not valid UTF-8 text`);
  }
}

/** `key=value` -> [key, value]: the value typed by the map's value schema (spec.ts). */
export function mapEntry(flag: Flag, raw: string, coerce?: Invocation['coerce']): [string, unknown] {
  const eq = raw.indexOf('=');
  if (eq <= 0) throw usage(`--${flag.flag} ${raw}: expected key=value`);
  const key = raw.slice(0, eq);
  const text = raw.slice(eq + 1);
  if (coerce) return [key, coerce(flag, key, text)];
  if (flag.mapValues === 'string') return [key, text];
  if (flag.mapValues === 'integer' || flag.mapValues === 'number') {
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n) || (flag.mapValues === 'integer' && !Number.isInteger(n))) throw usage(`--${flag.flag} ${raw}: ${key} must be ${flag.mapValues === 'integer' ? 'an integer' : 'a number'}`);
    return [key, n];
  }
  return [key, jsonish(text)];
}

/** 7, 2.5, true, null, "quoted", [1], {"a":1} as JSON; anything else as the string itself. */
export function jsonish(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function readInput(source: string): Record<string, unknown> {
  const text = readText('--input', source);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw usage(`--input ${source} is not valid JSON: ${(err as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw usage(`--input ${source} must hold a JSON object (the request body)`);
  return parsed as Record<string, unknown>;
}

function setPath(obj: Record<string, unknown>, key: string[], value: unknown): void {
  let cur = obj;
  for (const k of key.slice(0, -1)) {
    const next = cur[k];
    cur = (cur[k] = next && typeof next === 'object' && !Array.isArray(next) ? next : {}) as Record<string, unknown>;
  }
  cur[key[key.length - 1]!] = value;
}

/** The request of an invocation: path params from the arguments, the rest from flags and --input. */
export function buildRequest(inv: Invocation) {
  const { spec } = inv;
  const path = Object.fromEntries(spec.args.map((a, i) => [a.name, inv.positional[i]!]));
  const query: Record<string, unknown> = {};
  const header: Record<string, string> = {};
  const fromStdin = [...(inv.common.input === '-' ? ['--input'] : []), ...[...inv.values].filter(([f, v]) => f.type === 'file' && v === '-').map(([f]) => `--${f.flag}`)];
  if (fromStdin.length > 1) throw usage(`${fromStdin.join(' and ')} cannot both read stdin (-)`);
  let body: Record<string, unknown> | undefined = inv.common.input !== undefined ? readInput(inv.common.input) : undefined;
  for (const [flag, value] of inv.values) {
    if (value === undefined) continue;
    if (flag.in === 'query') query[flag.key[0]!] = value;
    else if (flag.in === 'header') header[flag.key[0]!] = String(value);
    else if (flag.type === 'map') setPath((body ??= {}), flag.key, Object.fromEntries((value as string[]).map((raw) => mapEntry(flag, raw, inv.coerce))));
    else if (flag.type === 'file') {
      const inline = spec.flags.find((f) => f.type !== 'file' && f.key.join('.') === flag.key.join('.'));
      if (inline && inv.values.get(inline) !== undefined) throw usage(`--${inline.flag} and --${flag.flag} exclude each other`);
      setPath((body ??= {}), flag.key, readText(`--${flag.flag}`, String(value)));
    } else setPath((body ??= {}), flag.key, value);
  }
  if (spec.body) {
    if (spec.body.required) body ??= {};
    const missing = spec.body.requiredFields.filter((f) => body?.[f] === undefined);
    if (missing.length) {
      const named = missing.map((f) => {
        const flag = `--${f.replace(/_/g, '-')}`;
        const nested = spec.flags.filter((x) => x.in === 'body' && x.key.length > 1 && x.key[0] === f).map((x) => `--${x.flag}`);
        return nested.length ? `${flag} (${nested.join(', ')})` : flag;
      });
      throw usage(`missing required ${named.join(', ')}, or a body through --input FILE|-`);
    }
  }
  return { path, query, header, body };
}

async function confirm(o: Output, question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${question} [y/N] `);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/** The current etag of the resource at `path` (for writes whose --if-match was left out). */
async function currentEtag(api: Api, spec: CommandSpec, path: Record<string, string>, header: Record<string, string>): Promise<string> {
  const res = await api.call('GET', spec.etagSource!, { path, auth: spec.auth, header: contextOf(header) });
  const etag = res.headers.get('etag') ?? (pick(res.body, 'etag') as string | undefined);
  if (!etag) throw new CliError(`${spec.path} has no etag to send as if-match; pass --if-match`, EXIT.ERROR);
  return etag;
}

/** What --json prints (`text`: the API's JSON), or with --field the one field of it. */
function printJsonOrField(o: Output, inv: Invocation, text: string): void {
  if (inv.common.field !== undefined) printField(o, text, inv.common.field);
  else printJson(o, text);
}

/** An answer that is an Operation (a command may answer one or another resource: :changeTier's plan checkout). */
const isOperationBody = (body: unknown): boolean => typeof body === 'object' && body !== null && 'done' in body && 'state' in body;

const wantsJson = (inv: Invocation) => Boolean(inv.common.json) || inv.common.field !== undefined;

async function printResult(api: Api, o: Output, inv: Invocation, res: ApiResult, prepared: unknown, header: Record<string, string>): Promise<number> {
  const { spec } = inv;
  if (wantsJson(inv)) {
    printJsonOrField(o, inv, res.text);
    return EXIT.OK;
  }
  if (res.status === 204 || !res.text) {
    o.err.write(`${o.errColor.green('✓')} ${spec.action} ${spec.resource}${inv.positional.length ? ` ${inv.positional.join(' ')}` : ''}\n`);
    return EXIT.OK;
  }
  if (res.body === undefined) {
    o.out.write(res.text);
    return EXIT.OK;
  }
  const presenter = presenterFor(spec.resource, spec.action);
  if (presenter.render) return presenter.render({ body: res.body, o, prepared, extra: inv.extra ?? {} }) ?? EXIT.OK;
  if (spec.isList) {
    await printList(api, o, inv, (pick(res.body, 'data') as unknown[]) ?? [], header);
    const next = pick(res.body, 'next_cursor');
    if (next && !inv.common.all) o.err.write(`${o.errColor.dim(`more results: --cursor ${String(next)} (or --all)`)}\n`);
    return EXIT.OK;
  }
  printRecord(o, res.body, RECORD_TABLES);
  const note = presenter.note?.(res.body);
  if (note) o.err.write(`${o.errColor.yellow('→')} ${note}\n`);
  if (spec.returnsOperation && !inv.common.wait && isOperationBody(res.body) && !(res.body as OperationBody).done) {
    o.err.write(`${o.errColor.dim(`follow it with: svc operations wait ${(res.body as OperationBody).id}`)}\n`);
  }
  return EXIT.OK;
}

/** A list as a table; on a terminal with the names of what the rows refer to (piped output has the ids only, and costs no lookups). */
async function printList(api: Api, o: Output, inv: Invocation, items: unknown[], header: Record<string, string>): Promise<void> {
  const presenter = presenterFor(inv.spec.resource, inv.spec.action);
  const names = o.tty && presenter.names && items.length ? await lookupNames(api, presenter.names, items, contextOf(header)) : {};
  printTable(o, presenter.columns ?? defaultColumns(items), items, { ...presenter.cells, ...names }, presenter);
}

/** The svc-context a command was given (--svc-context), for the requests it makes besides its own. */
const contextOf = (header: Record<string, string>): Record<string, string> => (header['svc-context'] ? { 'svc-context': header['svc-context'] } : {});

/** --all: every page; with --json one JSON array of the items (--field reads that array: `0.id`). */
async function listAll(api: Api, o: Output, inv: Invocation, req: ReturnType<typeof buildRequest>): Promise<void> {
  const items: unknown[] = [];
  let cursor: string | null = null;
  // a list read oldest first from a position (agent events) takes the next page `after` its last item
  const param = inv.spec.flags.some((f) => f.in === 'query' && f.flag === 'cursor') ? 'cursor' : 'after';
  do {
    const res = await api.call(inv.spec.method, inv.spec.path, { ...req, query: { ...req.query, ...(cursor ? { [param]: cursor } : {}) }, auth: inv.spec.auth });
    items.push(...((pick(res.body, 'data') as unknown[]) ?? []));
    cursor = pick(res.body, 'has_more') === false ? null : ((pick(res.body, 'next_cursor') as string | null) ?? null);
  } while (cursor);
  const presenter = presenterFor(inv.spec.resource, inv.spec.action);
  if (wantsJson(inv)) printJsonOrField(o, inv, JSON.stringify(items));
  else if (presenter.render) presenter.render({ body: { data: items, next_cursor: null }, o, extra: inv.extra ?? {} });
  else await printList(api, o, inv, items, req.header);
}

function printWaited(o: Output, inv: Invocation, done: WaitResult): void {
  if (wantsJson(inv)) printJsonOrField(o, inv, done.last.text);
  else printRecord(o, (done.op as unknown as { response?: unknown }).response ?? done.op, RECORD_TABLES);
}

/** A secret the API shows only in this response: say so on stderr (whatever stdout gets: record, --json or --field). */
function noteShownOnce(o: Output, inv: Invocation, body: unknown): void {
  const field = presenterFor(inv.spec.resource, inv.spec.action).once;
  if (!field || typeof pick(body, field) !== 'string') return;
  o.err.write(`${o.errColor.yellow('!')} ${field} is shown only this once: store it now, it cannot be read again\n`);
}

export async function executeCommand(api: Api, o: Output, inv: Invocation): Promise<number> {
  const { spec } = inv;
  const presenter = presenterFor(spec.resource, spec.action);
  const prepared = presenter.prepare ? await presenter.prepare({ api, inv, path: Object.fromEntries(spec.args.map((a, i) => [a.name, inv.positional[i]!])) }) : undefined;
  const req = buildRequest(inv);
  if (presenter.follow) return presenter.follow({ api, o, inv, req });
  if (spec.operationId === 'waitOperation') return waitFor(api, o, inv, req.path.id!, undefined, req.header['svc-context']);
  if (spec.destructive && !inv.common.yes) {
    const what = `${spec.action} ${spec.resource} ${inv.positional.join(' ')}`.trim();
    if (!process.stdin.isTTY || !process.stderr.isTTY) throw usage(`refusing to ${what} without --yes (not a terminal, so no confirmation can be asked)`);
    if (!(await confirm(o, `${what}?`))) throw new CliError('cancelled', EXIT.ERROR);
  }
  if (spec.etagSource && req.header['if-match'] === undefined) req.header['if-match'] = await currentEtag(api, spec, req.path, req.header);
  if (spec.isList && inv.common.all) {
    await listAll(api, o, inv, req);
    return EXIT.OK;
  }
  let res: ApiResult;
  try {
    res = await api.call(spec.method, spec.path, { ...req, auth: spec.auth });
  } catch (err) {
    // A refusal the presenter can answer (a sign-in that asks for its two-factor code): once more.
    if (!(err instanceof CliError) || !presenter.retry || !(await presenter.retry({ err, inv }))) throw err;
    res = await api.call(spec.method, spec.path, { ...buildRequest(inv), auth: spec.auth });
  }
  if (spec.returnsOperation && inv.common.wait && isOperationBody(res.body)) return waitFor(api, o, inv, (res.body as OperationBody).id, res);
  const code = await printResult(api, o, inv, res, prepared, req.header);
  noteShownOnce(o, inv, res.body);
  const failure = presenter.failure?.(res.body);
  if (failure) throw failure;
  return code;
}

/** `--wait`, and `svc operations wait ID`: with --json the final operation is printed, also when it failed. */
async function waitFor(api: Api, o: Output, inv: Invocation, id: string, first?: ApiResult, context?: string): Promise<number> {
  try {
    printWaited(o, inv, await followOperation(api, o, id, first, context));
  } catch (err) {
    const result = (err as { result?: WaitResult }).result;
    if (result && wantsJson(inv)) {
      try {
        printWaited(o, inv, result);
      } catch (missing) {
        // a --field the failed operation lacks (its response): the failure below says what happened
        if (!(missing instanceof CliError)) throw missing;
      }
    }
    throw err;
  }
  return EXIT.OK;
}
