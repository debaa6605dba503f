// What the command-line client prints (issue 21, CLI output) against a real `svc serve`: --field on
// every command (also with --wait and --all), tables fitted to the terminal's width with names where
// a person reads names (looked up once per distinct id, and only on a terminal), --json indented and
// coloured on a terminal but exact when piped, an operation's steps as a table, the note that a
// secret is shown only once, and the --wait progress line never filling the terminal's last column.
// Piped commands run as child processes; terminal output runs in-process with fake terminal streams
// of a chosen width given to createOutput.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../src/cli/program.js';
import { createOutput } from '../src/cli/output.js';
import { createTestDatabase, type TestDatabase } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';
import { cliSession } from './cli-session.js';
import { dbEnv, startSvc, type Finished, type LogLine, type RunningSvc } from './processes.js';

const OWNER_TOKEN = 'CliOutput0Token0For0Output0Tests'; // 32 characters of [A-Za-z0-9]
const EMAIL = 'owner@example.test';
const PASSWORD = 'owner password';
const VERSION = {
  semver: '1.0.0',
  input_schema: { type: 'object' },
  manifest: { routes: [{ route_key: 'web' }], resources: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { a: 'b' } }] },
};
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;
/** Columns a line of this test's output takes on a terminal (it holds no wide characters). */
const visibleWidth = (line: string) => [...line.replace(ANSI, '')].length;

/** A stream that keeps every write apart; a terminal `columns` wide when `columns` is given. */
function fakeStream(columns?: number) {
  const writes: string[] = [];
  const stream = { write: (t: string) => writes.push(t), isTTY: columns !== undefined, ...(columns !== undefined ? { columns } : {}) };
  return { stream, writes, text: () => writes.join('') };
}

describe('svc output: --field, fitted tables, --json on a terminal, records, secrets shown once, --wait redraw', () => {
  let db: TestDatabase;
  let server: RunningSvc;
  let dir: string;
  let ws: string;
  let cluster: string;
  let clusterName: string;
  const packages: { id: string; name: string }[] = [];
  const installs: string[] = [];

  const { cli, ok, json, api } = cliSession(() => ({ url: server.url, token: OWNER_TOKEN, ws, configHome: dir }));
  /** The command in this process: stdout a terminal of `columns`, stderr one of `errColumns` (else not a terminal); `env` as createOutput reads it. */
  const onTerminal = async (args: string[], columns: number, env: NodeJS.ProcessEnv = { NO_COLOR: '1' }, errColumns?: number) => {
    const out = fakeStream(columns);
    const err = fakeStream(errColumns);
    const code = await runCli(args, createOutput(env, { out: out.stream, err: err.stream }));
    return { code, stdout: out.text(), stderr: err.text(), errWrites: err.writes };
  };
  /** The position in the server's log of a request made now: every request completed before it is logged before it. */
  let marks = 0;
  const mark = async (): Promise<number> => {
    // a path of its own (query values are redacted in the log): a 404, logged like any request
    const path = `/v1/log-mark-${++marks}`;
    await api('GET', path);
    return server.logs.indexOf(await server.waitForLog((l) => (l.req as { url?: string } | undefined)?.url === path));
  };
  /** The GET requests the server completed while `run` ran. */
  const requestsDuring = async (run: () => Promise<unknown>): Promise<string[]> => {
    const from = await mark();
    await run();
    const to = await mark();
    return server.logs.slice(from + 1, to)
      .filter((l: LogLine) => l.msg === 'request completed' && (l.req as { method?: string }).method === 'GET')
      .map((l) => (l.req as { url: string }).url);
  };

  before(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'svc-cli-output-'));
    server = await startSvc(dbEnv(db, { SVC_BOOTSTRAP_EMAIL: EMAIL, SVC_BOOTSTRAP_PASSWORD: PASSWORD, SVC_BOOTSTRAP_TOKEN: OWNER_TOKEN, ...roomyPlans() }));
    const created = await fetch(`${server.url}/v1/workspaces`, {
      method: 'POST', headers: { authorization: `Bearer ${OWNER_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'CLI output' }),
    });
    ws = ((await created.json()) as { id: string }).id;
    // the in-process runs (onTerminal) read these
    Object.assign(process.env, { SVC_API_URL: server.url, SVC_TOKEN: OWNER_TOKEN, SVC_CONTEXT: ws, XDG_CONFIG_HOME: dir });
    clusterName = 'production-eu-west';
    // (set up through --json, so that each test below fails on its own when its behaviour is missing)
    cluster = json(await cli(['clusters', 'create', '--name', clusterName, '--wait', '--json'])).response.cluster_id;
    for (const name of ['analytics-pipeline', 'web-frontend']) {
      const id = json(await cli(['packages', 'create', '--name', name, '--json'])).id;
      ok(await cli(['packages', 'create-version', id, '--input', '-'], JSON.stringify(VERSION)));
      packages.push({ id, name });
    }
    // three installs, two of the same package: names are looked up per distinct id
    for (const pkg of [packages[0]!, packages[0]!, packages[1]!]) {
      installs.push(json(await cli(['installs', 'create', '--package-id', pkg.id, '--cluster-id', cluster, '--package-version-pin.kind', 'latest', '--wait', '--json'])).response.install_id);
    }
  });
  after(async () => {
    await server?.stop();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('--field prints one field of what --json prints: strings bare, the rest as JSON; missing is exit 1', async () => {
    const waited = ok(await cli(['clusters', 'create', '--name', 'another', '--wait', '--field', 'response.cluster_id']));
    assert.match(waited.stdout, /^clu_\w+\n$/);
    const [id, tier, created, obj, first, missing, proto, length] = await Promise.all([
      cli(['workspaces', 'get', ws, '--field', 'id']),
      cli(['workspaces', 'get', ws, '--field', 'plan.tier']),
      cli(['workspaces', 'get', ws, '--field', 'created_at']),
      cli(['workspaces', 'get', ws, '--field', 'plan']),
      cli(['packages', 'list', '--field', 'data.0.name']),
      cli(['workspaces', 'get', ws, '--field', 'plan.nope']),
      cli(['workspaces', 'get', ws, '--field', 'constructor']),
      cli(['packages', 'list', '--field', 'data.length']),
    ]);
    const workspace = JSON.parse((await api('GET', `/v1/workspaces/${ws}`)).text);
    assert.equal(ok(id).stdout, `${ws}\n`);
    assert.equal(ok(tier).stdout, `${workspace.plan.tier}\n`);
    assert.equal(ok(created).stdout, `${workspace.created_at}\n`);
    assert.equal(ok(obj).stdout, `${JSON.stringify(workspace.plan)}\n`);
    assert.equal(ok(first).stdout, `${JSON.parse((await api('GET', '/v1/packages')).text).data[0].name}\n`);
    for (const r of [missing, proto, length]) {
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stdout, '');
    }
    assert.equal(missing.stderr, 'error: no field "plan.nope" in the response\n');
    assert.equal(proto.stderr, 'error: no field "constructor" in the response\n');

    // --all: the path reads the one JSON array that --all --json prints
    const all = JSON.parse(ok(await cli(['installs', 'list', '--limit', '1', '--all', '--json'])).stdout);
    assert.equal(ok(await cli(['installs', 'list', '--limit', '1', '--all', '--field', '2.id'])).stdout, `${all[2].id}\n`);
    // on a terminal too: the bare value, no colour, no indentation
    const tty = await onTerminal(['workspaces', 'get', ws, '--field', 'plan'], 80, {});
    assert.equal(tty.stdout, `${JSON.stringify(workspace.plan)}\n`);
  });

  test('list tables fit 80 and 120 columns, with package and cluster names; piped output is unchanged and needs no lookups', async () => {
    for (const columns of [80, 120]) {
      for (const args of [['installs', 'list'], ['operations', 'list'], ['secrets', 'list'], ['audit-events', 'list']]) {
        const tty = await onTerminal(args, columns);
        assert.equal(tty.code, 0, tty.stderr);
        for (const line of tty.stdout.trimEnd().split('\n')) assert.ok(visibleWidth(line) <= columns, `${args.join(' ')} at ${columns}: ${JSON.stringify(line)}`);
      }
    }
    let table = '';
    const lookups = await requestsDuring(async () => (table = (await onTerminal(['installs', 'list'], 120)).stdout));
    for (const inst of installs) assert.match(table, new RegExp(`^${inst} +(analytics-pipeline|web-frontend) +1\\.0\\.0 +${clusterName} +healthy `, 'm'));
    assert.match(table, /^ID +PACKAGE +SEMVER +CLUSTER +STATE +RECONCILING +UPDATED$/m);
    // one GET per distinct package and cluster, not one per row
    const named = lookups.filter((url) => /^\/v1\/(packages|clusters)\/[a-z]+_\w+$/.test(url)).sort();
    assert.deepEqual(named, [...packages.map((p) => `/v1/packages/${p.id}`), `/v1/clusters/${cluster}`].sort());

    // narrower: ids stay whole, columns go (reconciling first), names are cut with … rather than wrapped
    const narrow = (await onTerminal(['installs', 'list'], 60)).stdout;
    for (const line of narrow.trimEnd().split('\n')) assert.ok(visibleWidth(line) <= 60, JSON.stringify(line));
    assert.doesNotMatch(narrow, /RECONCILING/);
    for (const inst of installs) assert.match(narrow, new RegExp(`^${inst} `, 'm'));
    assert.match(narrow, /^inst_\w+ +analyti\S*… +producti?\S*… +healthy$/m);

    let piped: Finished | undefined;
    const pipedLookups = await requestsDuring(async () => (piped = await cli(['installs', 'list'])));
    assert.deepEqual(pipedLookups.filter((url) => !url.startsWith('/v1/installs')), []);
    for (const inst of installs) assert.match(ok(piped!).stdout, new RegExp(`^${inst}\\tpkg_\\w+\\t1\\.0\\.0\\t${cluster}\\thealthy\\tfalse\\t\\d{4}-\\d\\d-\\d\\dT[\\d:]+Z$`, 'm'));
  });

  test('--json: indented and coloured on a terminal, plain with NO_COLOR, the exact API JSON when piped', async () => {
    const exact = (await api('GET', `/v1/workspaces/${ws}`)).text;
    const piped = ok(await cli(['workspaces', 'get', ws, '--json']));
    assert.equal(piped.stdout, `${exact}\n`);
    const coloured = await onTerminal(['workspaces', 'get', ws, '--json'], 80, {});
    assert.equal(coloured.stdout.replace(ANSI, ''), `${JSON.stringify(JSON.parse(exact), null, 2)}\n`);
    assert.ok(coloured.stdout.includes(`\x1b[32m${JSON.stringify(ws)}\x1b[39m`), 'strings are green');
    assert.match(coloured.stdout, /\x1b\[34m"id"\x1b\[39m/);
    const plain = await onTerminal(['workspaces', 'get', ws, '--json'], 80, { NO_COLOR: '1' });
    assert.equal(plain.stdout, `${JSON.stringify(JSON.parse(exact), null, 2)}\n`);
    // --all --json: one array, compact when piped, indented on a terminal
    const all = ok(await cli(['packages', 'list', '--all', '--json'])).stdout;
    assert.equal(all.split('\n').length, 2);
    assert.equal((await onTerminal(['packages', 'list', '--all', '--json'], 80)).stdout, `${JSON.stringify(JSON.parse(all), null, 2)}\n`);
  });

  test('operations get shows the steps as a table on a terminal (piped: the flat lines as before)', async () => {
    const op = json(await cli(['operations', 'list', '--owner-type', 'install', '--owner-id', installs[0]!, '--json'])).data[0];
    const full = JSON.parse((await api('GET', `/v1/operations/${op.id}`)).text);
    const tty = await onTerminal(['operations', 'get', op.id], 80);
    assert.equal(tty.code, 0, tty.stderr);
    assert.doesNotMatch(tty.stdout, /steps\[0\]/);
    assert.match(tty.stdout, /^steps\nNAME +STATUS +ATTEMPTS +STARTED +TOOK$/m);
    for (const step of full.steps) assert.match(tty.stdout, new RegExp(`^${step.name} +completed +1 +`, 'm'));
    assert.match(tty.stdout, /^response\.urls\nROUTE KEY +URL/m);
    assert.match(tty.stdout, /^state +SUCCEEDED$/m);
    const piped = ok(await cli(['operations', 'get', op.id])).stdout;
    assert.match(piped, new RegExp(`^steps\\[0\\]\\.name +${full.steps[0].name}$`, 'm'));
  });

  test('a secret shown once says so on stderr: api-tokens create, oauth-clients create, identity create-session', async () => {
    const token = ok(await cli(['api-tokens', 'create', '--name', 'ci', '--role', 'member']));
    assert.match(token.stdout, /^token +sk_svc_/m);
    assert.equal(token.stderr, '! token is shown only this once: store it now, it cannot be read again\n');
    const asJson = ok(await cli(['oauth-clients', 'create', '--name', 'robot', '--json']));
    assert.match(JSON.parse(asJson.stdout).client_secret, /^svc_cs_/);
    assert.match(asJson.stderr, /client_secret is shown only this once/);
    const session = ok(await cli(['identity', 'create-session', '--email', EMAIL, '--password', PASSWORD]));
    assert.match(session.stdout, /^token +\w{32}$/m);
    assert.match(session.stderr, /token is shown only this once/);
    const listed = ok(await cli(['api-tokens', 'list']));
    assert.equal(listed.stderr, '');
  });

  test('--wait: the live line takes at most the width minus one, so a line as wide as the terminal cannot wrap', async () => {
    const body = join(dir, 'slow-cluster.json');
    writeFileSync(body, JSON.stringify({ name: 'slow', local: { faults: [{ action: 'provision', latency_ms: 2500 }] } }));
    const columns = 16;
    const run = await onTerminal(['clusters', 'create', '--input', body, '--wait'], 80, { NO_COLOR: '1' }, columns);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^cluster_id +clu_\w+$/m);
    const live = run.errWrites.filter((w) => w.startsWith('\r\x1b[2K') && w.length > 5).map((w) => w.slice(5));
    assert.ok(live.length >= 1, JSON.stringify(run.errWrites));
    for (const line of live) assert.ok(visibleWidth(line) <= columns - 1 && !line.includes('\n'), JSON.stringify(line));
    // `⠋ provision 1.0s` and `⠋ cluster.create 0.0s` are 16 and 21 wide: cut to 15
    assert.ok(live.some((line) => line.endsWith('…')), JSON.stringify(live));
    assert.match(run.stderr, /\r\x1b\[2K {2}step provision: completed/);
  });
});
