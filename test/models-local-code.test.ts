// The code the local model writes never carries a value as code (issue 33, section 4): each place
// that writes code (local/code.ts) is given hostile values (quotes, backticks, `${}`, `*/`,
// newlines, U+2028/U+2029, bidirectional and zero-width characters, controls, backslashes); the
// code must parse, hold no raw line separator or invisible character, keep every value out of its
// comments, and carry each value exactly as data: run with a recording `platform` here, and the
// writes' bodies also through the real sandbox. Then the same from a person's message, end to end.
import assert from 'node:assert/strict';
import { Script } from 'node:vm';
import { after, before, describe, test } from 'node:test';
import { createLocalModelProvider } from '../src/drivers/models/local.js';
import {
  catalogCode, createInstallCode, createSecretCode, createSnippetCode, installCode, jsonString, listCode, operationCode,
} from '../src/drivers/models/local/code.js';
import { createSandbox, type JsonValue, type PlatformRequest, type Sandbox, type SandboxBridge } from '../src/sandbox/index.js';
import { cannedApi, converse, workspace } from './models-local-fixtures.js';

const HOSTILE = [
  `HOSTILE quotes ' " and ''' """`,
  'HOSTILE backtick ` and ${globalThis.pwned = 1} and `${1}`',
  'HOSTILE */ ends a comment /* opens one // and a line comment',
  'HOSTILE new\nline, carriage\rreturn, CRLF\r\n, tab\t.',
  'HOSTILE line\u2028separator and paragraph\u2029separator',
  'HOSTILE bidi \u202eevil\u202c \u2066isolate\u2069 \u200e\u200f\u061c zero\u200bwidth\u200c\u200d bom\ufeff',
  'HOSTILE backslash \\ \\n \\u2028 \\\' \\" and a trailing backslash \\',
  'HOSTILE controls \u0000 \u0007 \u001b[31m \u007f \u0085 \u009b </script> <!-- -->',
  'HOSTILE astral 😀 and a tag \u{e0041}',
];
/** Raw in code they would end a line (older JavaScript) or hide from a reader. */
// eslint-disable-next-line no-control-regex, no-misleading-character-class
const UNSAFE_RAW = /[\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200f\u061c\ufeff\x7f-\x9f\u{e0000}-\u{e007f}]/u;

/** The code parses as the body of an async function (how the sandbox runs it). */
function assertParses(code: string): void {
  assert.doesNotThrow(() => new Script(`(async function (platform) {\n${code}\n})`), code);
}

/** The comments of generated code: a small scanner that skips string and template literals (the code has no regular expressions). */
function commentsOf(code: string): string[] {
  const comments: string[] = [];
  for (let i = 0; i < code.length; i++) {
    const ch = code[i]!;
    if (ch === '"' || ch === "'" || ch === '`') {
      for (i++; i < code.length && code[i] !== ch; i++) if (code[i] === '\\') i++;
    } else if (code.startsWith('//', i)) {
      const end = code.indexOf('\n', i);
      comments.push(code.slice(i, end === -1 ? code.length : end));
      i = end === -1 ? code.length : end;
    } else if (code.startsWith('/*', i)) {
      const end = code.indexOf('*/', i + 2);
      comments.push(code.slice(i, end === -1 ? code.length : end + 2));
      i = end === -1 ? code.length : end + 1;
    }
  }
  return comments;
}

/** No comment of the code carries a value (each hostile value holds the word HOSTILE). */
function assertNoValueInComments(code: string): void {
  for (const comment of commentsOf(code)) assert.doesNotMatch(comment, /HOSTILE/, `a value in a comment: ${comment}`);
}

function assertSafe(code: string): void {
  assertParses(code);
  assert.doesNotMatch(code, UNSAFE_RAW, 'a raw line separator or invisible character in the code');
  assert.doesNotMatch(code, /\r/, 'a raw carriage return in the code');
  assertNoValueInComments(code);
}

type Answer = { status: number; body: JsonValue };
/** Runs the code in this process with a `platform` that records each request and answers with `serve`. */
async function runHere(code: string, serve: (r: PlatformRequest) => Answer = () => ({ status: 404, body: { error: { code: 'NOT_FOUND', message: 'no' } } })) {
  const seen: PlatformRequest[] = [];
  const platform = {
    request: async (r: { method?: string; path: string; query?: Record<string, string | number>; body?: JsonValue }) => {
      const request: PlatformRequest = { method: (r.method ?? 'GET') as PlatformRequest['method'], path: r.path, query: Object.fromEntries(Object.entries(r.query ?? {}).map(([k, v]) => [k, String(v)])), headers: {}, ...(r.body !== undefined ? { body: r.body } : {}) };
      seen.push(request);
      const answer = serve(request);
      return { status: answer.status, headers: {}, body: answer.body };
    },
  };
  const run = new Script(`(async function (platform) {\n${code}\n})`).runInThisContext() as (p: typeof platform) => Promise<unknown>;
  let output: unknown;
  let error: unknown;
  try {
    output = await run(platform);
  } catch (err) {
    error = err;
  }
  assert.equal((globalThis as { pwned?: number }).pwned, undefined, 'a value ran as code');
  return { seen, output, error };
}

const list = (data: JsonValue[]): Answer => ({ status: 200, body: { data, has_more: false, next_cursor: null } });

describe('the local model\'s code carries hostile values as data', () => {
  test('jsonString is a JSON literal that evaluates to the exact value, with no raw separator or invisible character', () => {
    for (const value of [...HOSTILE, 'lone \ud800 surrogate \udc00']) {
      const literal = jsonString(value);
      assert.equal(JSON.parse(literal), value);
      assert.equal(new Script(literal).runInThisContext(), value);
      assert.doesNotMatch(literal, UNSAFE_RAW);
    }
    assert.equal(jsonString('a\u2028b\u202ec'), '"a\\u2028b\\u202ec"');
  });

  for (const value of HOSTILE) {
    const label = JSON.stringify(value.slice(0, 30));
    test(`a secret's name and value ${label}`, async () => {
      const code = createSecretCode(value, value);
      assertSafe(code);
      const { seen, output } = await runHere(code, (r) => ({ status: 201, body: { id: 'sec_1', name: (r.body as { name: string }).name } }));
      assert.deepEqual(seen.map((r) => [r.method, r.path, r.body]), [['POST', '/v1/secrets', { name: value, value }]]);
      assert.deepEqual(output, { id: 'sec_1', name: value });
    });

    test(`a snippet named, described and filtering by ${label}`, async () => {
      const snippetCode = listCode('installs', { state: null, cluster: value, workspaceId: 'ws_1', mode: 'table' });
      assertSafe(snippetCode);
      const code = createSnippetCode(value, snippetCode, 'table', value);
      assertSafe(code);
      const { seen } = await runHere(code, () => ({ status: 201, body: { id: 'snp_1', name: 'x', html_url: 'u' } }));
      assert.deepEqual(seen[0]!.body, { name: value, description: value, display_type: 'table', code: snippetCode });
      // the snippet's own code: no cluster of that name, said with the exact name
      const ran = await runHere(snippetCode, (r) => list(r.path === '/v1/clusters' ? [{ id: 'clu_1', name: 'dev' }] : []));
      assert.equal((ran.error as Error).message, `there is no cluster named ${value}`);
    });

    test(`an install of package and cluster ${label}`, async () => {
      const code = createInstallCode({ packageId: value, packageName: value, clusterId: value, clusterName: value, version: value });
      assertSafe(code);
      const { seen } = await runHere(code, () => ({ status: 202, body: { id: 'op_1', owner_id: 'inst_1', state: 'RUNNING', html_url: 'u' } }));
      assert.deepEqual(seen[0]!.body, { package_id: value, package_version_pin: { kind: 'pinned', version: value }, cluster_id: value });
    });

    test(`reads naming ${label}: a list on a cluster, members of a workspace, an operation, an install, the catalog`, async () => {
      const onCluster = listCode('installs', { state: value, cluster: value, workspaceId: value, mode: 'answer' });
      assertSafe(onCluster);
      const missing = await runHere(onCluster, (r) => list(r.path === '/v1/clusters' ? [{ id: 'clu_1', name: 'dev' }] : []));
      assert.deepEqual(missing.output, { no_cluster: value, clusters: ['dev'] });
      const found = await runHere(onCluster, (r) => list(r.path === '/v1/clusters' ? [{ id: 'clu_1', name: value }]
        : r.path === '/v1/installs' ? [{ id: 'inst_1', cluster_id: 'clu_1', package_id: 'pkg_1', semver: '1.0.0', state: value }] : []));
      assert.deepEqual(found.seen.find((r) => r.path === '/v1/installs')!.query, { state: value, limit: '100' });
      assert.equal((found.output as { count: number }).count, 1);

      const members = listCode('members', { state: null, cluster: null, workspaceId: value, mode: 'count' });
      assertSafe(members);
      assert.equal((await runHere(members, () => list([]))).seen[0]!.path, `/v1/workspaces/${value}/members`);

      for (const code of [operationCode(value, { ownerType: null, ownerId: null }), installCode(value, [])]) {
        assertSafe(code);
        const path = (await runHere(code)).seen.at(-1)!.path;
        assert.ok(path.endsWith(`/${value}`), path);
      }
      const newest = operationCode(null, { ownerType: value, ownerId: value });
      assertSafe(newest);
      assert.equal((await runHere(newest, () => list([]))).seen[0]!.query.owner_id, value);

      const words = installCode(null, [value.toLowerCase(), 'other']);
      assertSafe(words);
      const named = await runHere(words, (r) => list(r.path === '/v1/packages' ? [{ id: 'pkg_1', name: value }, { id: 'pkg_2', name: 'plain' }]
        : r.path === '/v1/installs' ? [{ id: 'inst_1', package_id: 'pkg_1', cluster_id: 'c', urls: [] }, { id: 'inst_2', package_id: 'pkg_2', cluster_id: 'c', urls: [] }] : []));
      assert.deepEqual((named.output as { installs: { id: string }[] }).installs.map((i) => i.id), ['inst_1']);

      const catalog = catalogCode(value, value);
      assertSafe(catalog);
      const many = Array.from({ length: 101 }, (_, i) => ({ id: `x_${i}`, name: i === 100 ? value : `n${i}`, latest_version: null, state: 'active' }));
      const out = (await runHere(catalog, () => list(many))).output as { packages: { name: string }[]; clusters: { name: string }[] };
      assert.equal(out.packages.at(-1)!.name, value, 'the package asked for, past the first 100');
      assert.equal(out.clusters.at(-1)!.name, value);
    });
  }
});

describe('the writes\' hostile values through the real sandbox', () => {
  let sandbox: Sandbox;
  before(async () => {
    sandbox = createSandbox({ workers: 1 });
    await sandbox.ready();
  });
  after(() => sandbox.close());

  test('each body arrives with exactly the values, and a snippet\'s code exactly as written', async () => {
    const bodies: JsonValue[] = [];
    const bridge: SandboxBridge = {
      request(r) {
        bodies.push(r.body ?? null);
        return Promise.resolve({ status: r.path === '/v1/installs' ? 202 : 201, headers: {}, body: { id: 'x_1', name: 'x', state: 'RUNNING' } });
      },
    };
    for (const value of HOSTILE) {
      bodies.length = 0;
      const snippetCode = listCode('secrets', { state: null, cluster: null, workspaceId: 'ws_1', mode: 'stat' });
      for (const code of [
        createSecretCode(value, value), createSnippetCode(value, snippetCode, 'stat', value),
        createInstallCode({ packageId: value, packageName: value, clusterId: value, clusterName: value, version: null }),
      ]) {
        const run = await sandbox.run({ code, tenant: 'ws_test', bridge });
        assert.ok(run.ok, JSON.stringify(run));
      }
      assert.deepEqual(bodies, [
        { name: value, value },
        { name: value, description: value, display_type: 'stat', code: snippetCode },
        { package_id: value, package_version_pin: { kind: 'latest' }, cluster_id: value },
      ]);
    }
  });

  test('from a person\'s message: a quoted name and value reach POST /v1/secrets exactly, the code shows no raw invisible character', async () => {
    const model = createLocalModelProvider({ testHooks: false });
    const sandbox2 = sandbox;
    // the name in backticks, the value in double quotes (each may hold any other character)
    for (const [name, value] of [
      ['HOSTILE\'"*/${x}\u202e', 'a`b${c}\u2028d\u2029e\\f*/'],
      ['HOSTILE\u200b\u2066y', '\u202e\ufeff\'`\r\n//'],
    ]) {
      const api = cannedApi(workspace());
      const message = `create a secret named \`${name}\` with value "${value}"`;
      const conv = await converse(model, message, async (call) => {
        const run = await sandbox2.run({ code: String(call.arguments.code), tenant: 'ws_test', bridge: api.bridge });
        return run.ok ? { ok: true, output: run.output, logs: [] } : { ok: false, error: run.error, logs: [] };
      });
      const code = String(conv.calls[0]!.call.arguments.code);
      assertSafe(code);
      assert.deepEqual(api.seen.filter((r) => r.method === 'POST').map((r) => r.body), [{ name, value }]);
    }
  });
});
