// The JavaScript the local model writes for the sandbox: small, readable programs (people read them
// in tool lines and approve them in approval cards) that call the API through platform.request and
// return compact JSON the answer writer reads (replies.ts). An API refusal is returned as
// `{failed: {status, code, message}}`, never thrown, so the answer can say what happened.
//
// No value is ever code: every value from a message or a record (a name, an id, a secret's value,
// words of the request) enters the code only through `lit`, as a JSON literal in which line and
// paragraph separators (line breaks to older JavaScript, which JSON.stringify leaves raw) and the
// characters an approval card could not show (bidirectional controls, zero-width characters...)
// are \u escapes; comments are fixed text and never carry a value.
import { RESOURCES, type ResourceKey } from './resources.js';

/** Pages a list read follows at most (100 items each), so a turn's reads stay bounded. */
export const MAX_PAGES = 10;
/** Items a list result carries for the answer (the count covers all that were read). */
export const SHOWN_ITEMS = 50;

/**
 * Characters JSON.stringify leaves raw that must not be raw in code: U+2028 and U+2029 (line
 * terminators in JavaScript before ES2019 and in many tools), and the invisible ones: controls,
 * soft hyphen, bidirectional marks, embeddings, overrides and isolates, zero-width characters, the
 * byte order mark, interlinear annotations, tag characters (the same set an approval card marks; reveal-invisible.ts).
 */
// eslint-disable-next-line no-control-regex, no-misleading-character-class
const ESCAPED = /[\x7f-\x9f\xad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\uffa0\ufeff\ufff9-\ufffb\u{e0000}-\u{e007f}\u{e0100}-\u{e01ef}]/gu;
/** `\u202e`; an astral character as its two UTF-16 halves (`split('')` splits into code units). */
const escaped = (c: string): string => c.split('').map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');

/** A string as a JSON literal with U+2028, U+2029 and the invisible characters as \u escapes: valid JSON and JavaScript, one line, all visible. */
export function jsonString(value: string): string {
  return JSON.stringify(value).replace(ESCAPED, escaped);
}

/** A JavaScript literal of a JSON value: strings as jsonString, bare identifier keys (others as strings). */
export function lit(value: unknown): string {
  if (typeof value === 'string') return jsonString(value);
  if (Array.isArray(value)) return `[${value.map(lit).join(', ')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).map(([k, v]) => `${/^[A-Za-z_$][\w$]*$/.test(k) ? k : jsonString(k)}: ${lit(v)}`);
    return entries.length ? `{ ${entries.join(', ')} }` : '{}';
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return JSON.stringify(value) ?? 'null';
  return 'null';
}

const FAILURE =
  'const failure = (res) => ({ failed: { status: res.status, code: res.body?.error?.code ?? null, message: res.body?.error?.message ?? null } });';

const ALL = [
  `// Every page of a list, 100 items a page, at most ${MAX_PAGES} pages.`,
  'async function all(path, query = {}) {',
  '  const items = [];',
  '  let cursor = null;',
  `  for (let page = 0; page < ${MAX_PAGES}; page++) {`,
  "    const res = await platform.request({ method: 'GET', path, query: cursor ? { ...query, limit: 100, cursor } : { ...query, limit: 100 } });",
  '    if (res.status !== 200) return { items, more: false, ...failure(res) };',
  '    items.push(...res.body.data);',
  '    cursor = res.body.next_cursor;',
  '    if (!cursor) break;',
  '  }',
  '  return { items, more: Boolean(cursor) };',
  '}',
].join('\n');

const NAMES = [
  "const packages = await all('/v1/packages');",
  "const clusters = await all('/v1/clusters');",
  'const packageName = (id) => packages.items.find((p) => p.id === id)?.name ?? id;',
  'const clusterName = (id) => clusters.items.find((c) => c.id === id)?.name ?? id;',
].join('\n');

export interface ListOptions {
  state: string | null;
  cluster: string | null;
  workspaceId: string;
  /** answer: {count, more, shown} for the model; table: the rows; stat: the count (snippets) */
  mode: 'answer' | 'count' | 'table' | 'stat';
}

/** Reads a resource's list (every page up to the cap), filtered by state and cluster. */
export function listCode(resource: ResourceKey, o: ListOptions): string {
  const kind = RESOURCES[resource];
  const serverQuery = o.state && kind.serverStateFilter ? { state: o.state } : {};
  const counting = o.mode === 'count' || o.mode === 'stat';
  // a snippet's run fails with the API's refusal; the model's own reads return it for the answer
  const snippet = o.mode === 'table' || o.mode === 'stat';
  const needsNames = kind.byCluster && (!counting || o.cluster !== null);
  const lines = [
    FAILURE,
    ALL,
    `const list = await all(${lit(kind.path(o.workspaceId))}, ${lit(serverQuery)});`,
    snippet ? "if (list.failed) throw new Error('the API answered ' + list.failed.status + ': ' + list.failed.message);" : 'if (list.failed) return { failed: list.failed };',
    'let items = list.items;',
  ];
  if (needsNames) lines.push(NAMES);
  if (o.cluster !== null) {
    lines.push(
      `const cluster = clusters.items.find((c) => c.name === ${lit(o.cluster)});`,
      snippet ? `if (!cluster) throw new Error(${lit(`there is no cluster named ${o.cluster}`)});`
        : `if (!cluster) return { no_cluster: ${lit(o.cluster)}, clusters: clusters.items.map((c) => c.name) };`,
      'items = items.filter((x) => x.cluster_id === cluster.id);',
    );
  }
  if (o.state && !kind.serverStateFilter) lines.push(`items = items.filter((x) => x.state === ${lit(o.state)});`);
  if (!counting) lines.push(`const pick = ${kind.pick};`);
  lines.push(
    o.mode === 'answer' ? `return { count: items.length, more: list.more, shown: items.slice(0, ${SHOWN_ITEMS}).map(pick) };`
      : o.mode === 'count' ? 'return { count: items.length, more: list.more };'
        : o.mode === 'table' ? 'return items.map(pick);' : 'return items.length;',
  );
  return lines.join('\n');
}

const OPERATION_SUMMARY = [
  'const op = res.body;',
  "const failedStep = (op.steps ?? []).find((s) => s.status === 'failed') ?? null;",
  'return {',
  '  found: true, id: op.id, type: op.metadata?.type ?? null, owner_type: op.owner_type, owner_id: op.owner_id, state: op.state,',
  '  error: op.error?.message ?? null, last_error: op.last_error, html_url: op.html_url,',
  '  failed_step: failedStep && { name: failedStep.name, attempts: failedStep.attempts, error_message: failedStep.error_message ?? null },',
  '};',
].join('\n');

/** Reads one operation with its steps: the one named, or the newest FAILED one (of an owner type or resource). */
export function operationCode(operationId: string | null, filter: { ownerType: string | null; ownerId: string | null }): string {
  const lines = [FAILURE];
  if (operationId) {
    lines.push(`const res = await platform.request({ method: 'GET', path: ${lit(`/v1/operations/${operationId}`)} });`);
  } else {
    const query: Record<string, unknown> = { state: 'FAILED', limit: 1 };
    if (filter.ownerId) query.owner_id = filter.ownerId;
    else if (filter.ownerType) query.owner_type = filter.ownerType;
    lines.push(
      '// The newest failed operation (lists are newest first), then the operation itself with its steps.',
      `const page = await platform.request({ method: 'GET', path: '/v1/operations', query: ${lit(query)} });`,
      'if (page.status !== 200) return failure(page);',
      'if (page.body.data.length === 0) return { found: false };',
      "const res = await platform.request({ method: 'GET', path: '/v1/operations/' + page.body.data[0].id });",
    );
  }
  lines.push('if (res.status !== 200) return failure(res);', OPERATION_SUMMARY);
  return lines.join('\n');
}

const INSTALL_VIEW =
  'const view = (x) => ({ id: x.id, package: packageName(x.package_id), semver: x.semver, cluster: clusterName(x.cluster_id), state: x.state, ' +
  'reconciling: x.reconciling, urls: x.urls.map((u) => ({ route_key: u.route_key, url: u.url, error: u.error })) });';

/** Reads an install (by id), or the installs whose package or cluster the message names (else all), with their URLs. */
export function installCode(installId: string | null, words: string[]): string {
  const lines = [FAILURE, ALL, NAMES, INSTALL_VIEW];
  if (installId) {
    lines.push(
      `const res = await platform.request({ method: 'GET', path: ${lit(`/v1/installs/${installId}`)} });`,
      'if (res.status !== 200) return failure(res);',
      'return { count: 1, more: false, installs: [view(res.body)] };',
    );
  } else {
    lines.push(
      "const list = await all('/v1/installs');",
      'if (list.failed) return { failed: list.failed };',
      '// the installs of a package or cluster the request names, else all of them',
      `const words = ${lit([...new Set(words)])};`,
      'const named = list.items.filter((x) => words.includes(packageName(x.package_id).toLowerCase()) || words.includes(clusterName(x.cluster_id)));',
      'const items = named.length ? named : list.items;',
      'return { count: items.length, more: list.more, installs: items.slice(0, 20).map(view) };',
    );
  }
  return lines.join('\n');
}

/** Packages and clusters for a deploy: the first 100 of each, plus any whose name is the one asked for. */
export function catalogCode(packageName: string | null, clusterName: string | null): string {
  return [
    FAILURE,
    ALL,
    "const packages = await all('/v1/packages');",
    'if (packages.failed) return { failed: packages.failed };',
    "const clusters = await all('/v1/clusters');",
    'if (clusters.failed) return { failed: clusters.failed };',
    `const asked = (name, wanted) => wanted !== null && name.toLowerCase() === wanted;`,
    'return {',
    `  packages: packages.items.filter((p, i) => i < 100 || asked(p.name, ${lit(packageName?.toLowerCase() ?? null)}))`,
    '    .map((p) => ({ id: p.id, name: p.name, latest_version: p.latest_version })),',
    `  clusters: clusters.items.filter((c, i) => i < 100 || asked(c.name, ${lit(clusterName?.toLowerCase() ?? null)}))`,
    '    .map((c) => ({ id: c.id, name: c.name, state: c.state })),',
    '};',
  ].join('\n');
}

/**
 * POSTs one resource; `comment` is fixed text (never a value), `before` lines declared first,
 * `expect` the status of success, `keep` the response fields returned.
 */
function createCode(comment: string, before: string[], path: string, body: string, expect: number, keep: string): string {
  return [
    `// ${comment}`,
    ...before,
    FAILURE,
    `const res = await platform.request({ method: 'POST', path: ${lit(path)}, body: ${body} });`,
    `if (res.status !== ${expect}) return failure(res);`,
    `return ${keep};`,
  ].join('\n');
}

export function createSecretCode(name: string, value: string): string {
  return createCode(
    'Creates the secret; its value is stored encrypted and never shown again.', [],
    '/v1/secrets', `{ name: ${lit(name)}, value: ${lit(value)} }`, 201, '{ id: res.body.id, name: res.body.name }',
  );
}

export function createSnippetCode(name: string, snippetCode: string, displayType: 'table' | 'stat', description: string): string {
  // In a template literal when nothing in it would be read as one (the usual case: easier to read
  // in an approval card): no backtick, backslash or `${`, and (its values being JSON literals) no
  // raw line separator or carriage return; else as lines of JSON literals. The template's first
  // and last line breaks are for reading, and sliced off.
  const code = /[`\\\r\u2028\u2029]|\$\{/.test(snippetCode) ? `[\n${snippetCode.split('\n').map((l) => `  ${lit(l)},`).join('\n')}\n].join('\\n')`
    : `\`\n${snippetCode}\n\`.slice(1, -1)`;
  return [
    '// The code the snippet runs:',
    `const code = ${code};`,
    createCode(
      'Saves it as a snippet.', [], '/v1/snippets',
      `{ name: ${lit(name)}, description: ${lit(description)}, display_type: ${lit(displayType)}, code }`, 201,
      '{ id: res.body.id, name: res.body.name, html_url: res.body.html_url }',
    ),
  ].join('\n');
}

export function createInstallCode(p: { packageId: string; packageName: string; clusterId: string; clusterName: string; version: string | null }): string {
  const pin = p.version ? { kind: 'pinned', version: p.version } : { kind: 'latest' };
  return createCode(
    'Installs a package on a cluster: an install.create operation does the work.',
    [`const named = ${lit({ package: p.packageName, version: p.version ?? 'latest', cluster: p.clusterName })}; // the names of the ids below, for the reader`],
    '/v1/installs', `{ package_id: ${lit(p.packageId)}, package_version_pin: ${lit(pin)}, cluster_id: ${lit(p.clusterId)} }`, 202,
    '{ operation_id: res.body.id, install_id: res.body.metadata?.install_id ?? res.body.owner_id, state: res.body.state, html_url: res.body.html_url }',
  );
}

/** The test triggers' code: a cheap read for [loop], a run that never ends by itself for [sleep-tool]. */
export const LOOP_CODE = "// [loop] test trigger: one more cheap read, every round\nreturn (await platform.request({ method: 'GET', path: '/v1/operations', query: { limit: 1 } })).status;";
export const SLEEP_CODE = '// [sleep-tool] test trigger: busy until cancelled or stopped by the run\'s time limit\nfor (;;) {}';
