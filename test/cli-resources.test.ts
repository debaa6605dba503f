// The command-line client for secrets, the account and snippets (issues 11-13, CLI items) against a
// real `svc serve`: values from files and stdin read exactly and never echoed, `secret-versions
// access` printing the bare value, key=value maps, snippet runs printed by display_type with typed
// inputs, ad hoc code, failures on stderr with exit 1, quotas and notifications. Commands run as
// child processes (not terminals); what only a terminal shows (bars, the unread mark, aligned
// tables) is checked by running the same commands in-process with an Output that is a terminal.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../src/cli/program.js';
import { createOutput, type Output } from '../src/cli/output.js';
import { createTestDatabase, type TestDatabase } from './harness.js';
import { plansFile } from './plans-fixtures.js';
import { cliSession } from './cli-session.js';
import { dbEnv, startSvc, type RunningSvc } from './processes.js';

const OWNER_TOKEN = 'CliOwner0Token0For0Resource0Test'; // 32 characters of [A-Za-z0-9]

/** An Output that is a terminal 120 columns wide (colours off, so the text is plain), capturing what is written. */
function terminal(): { o: Output; stdout: () => string; stderr: () => string } {
  let stdout = '';
  let stderr = '';
  const o = createOutput({ NO_COLOR: '1' }, {
    out: { write: (t: string) => (stdout += t), isTTY: true, columns: 120 },
    err: { write: (t: string) => (stderr += t), isTTY: false },
  });
  return { o, stdout: () => stdout, stderr: () => stderr };
}

describe('svc commands for secrets, quotas, notifications and snippets', () => {
  let db: TestDatabase;
  let server: RunningSvc;
  let dir: string;
  let ws: string;

  const { cli, ok, json, api } = cliSession(() => ({ url: server.url, token: OWNER_TOKEN, ws, configHome: dir }));
  /** The command in this process, on a terminal. */
  const onTerminal = async (args: string[]) => {
    const t = terminal();
    const code = await runCli(args, t.o);
    return { code, stdout: t.stdout(), stderr: t.stderr() };
  };
  const file = (name: string, content: string | Buffer) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };

  before(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'svc-cli-resources-'));
    server = await startSvc(dbEnv(db, {
      SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: OWNER_TOKEN,
      // a limit the bars can show filling up
      SVC_PLANS_FILE: plansFile({ 'secrets/secrets': 8 }),
    }));
    const created = await fetch(`${server.url}/v1/workspaces`, {
      method: 'POST', headers: { authorization: `Bearer ${OWNER_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'CLI resources' }),
    });
    ws = ((await created.json()) as { id: string }).id;
    // the in-process runs (onTerminal) read these
    Object.assign(process.env, { SVC_API_URL: server.url, SVC_TOKEN: OWNER_TOKEN, SVC_CONTEXT: ws, XDG_CONFIG_HOME: dir });
  });
  after(async () => {
    await server?.stop();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('help and completion show the file, key=value and ad hoc options', async () => {
    const [run, create, code, display] = await Promise.all([
      cli(['snippets', 'run', '--help']),
      cli(['secrets', 'create', '--help']),
      cli(['__complete', 'snippets', 'run', '--code']),
      cli(['__complete', 'snippets', 'run', '--d']),
    ]);
    assert.match(ok(run).stdout, /^Usage: svc snippets run \[options\] \[id\]$/m);
    assert.match(run.stdout, /Without <id> and with --code or --code-file: POST \/v1\/snippets:execute/);
    assert.match(run.stdout, /--input <key=value\|file>/);
    assert.match(ok(create).stdout.replace(/\s+/g, ' '), /--value-file <file> read value from a file, or - for stdin, exactly/);
    assert.match(create.stdout.replace(/\s+/g, ' '), /--value <value> the secret value.*?\(required, or --value-file\)/);
    assert.match(create.stdout, /--label <key=value>/);
    assert.equal(ok(code).stdout, '--code\n--code-file\n');
    assert.equal(ok(display).stdout, '--display-type\n');
  });

  test('secrets: --value-file and stdin read exactly, never echoed; access prints the bare value; --json the API JSON', async () => {
    // A trailing newline, a multi-byte character and a tab: what the file holds is what is stored.
    const value = 'pa\tss wörd\n';
    const created = ok(await cli(['secrets', 'create', '--name', 'db-password', '--value-file', file('value.txt', value), '--label', 'env=prod', '--label', 'team=core']));
    assert.doesNotMatch(created.stdout + created.stderr, /pa\tss/);
    const id = /^id +(sec_\w+)$/m.exec(created.stdout)![1]!;
    const secret = await api('GET', `/v1/secrets/${id}`);
    assert.deepEqual(secret.body.labels, { env: 'prod', team: 'core' });

    const bare = ok(await cli(['secret-versions', 'access', id, 'latest']));
    assert.equal(bare.stdout, value, 'exactly the value: nothing added when stdout is not a terminal');
    assert.equal(bare.stderr, '');
    // The same command where users look for it first (x-svc-cli-aliases in the document).
    assert.equal(ok(await cli(['secrets', 'access', id, 'latest'])).stdout, value);
    const accessed = json(await cli(['secret-versions', 'access', id, '1', '--json']));
    assert.deepEqual(Object.keys(accessed).sort(), ['secret_id', 'value', 'version_id', 'version_number']);
    assert.equal(accessed.value, value);
    assert.equal(accessed.version_number, 1);

    // stdin, then what `access > file` wrote goes back in unchanged (a round trip without the value in argv).
    const v2 = json(await cli(['secret-versions', 'create', id, '--value-file', '-', '--comment', 'rotated', '--json'], 'from stdin, no newline'));
    assert.equal(v2.version_number, 2);
    assert.equal(ok(await cli(['secret-versions', 'access', id, 'latest'])).stdout, 'from stdin, no newline');
    const copy = file('copy.txt', ok(await cli(['secret-versions', 'access', id, '1'])).stdout);
    const again = json(await cli(['secrets', 'create', '--name', 'copy', '--value-file', copy, '--json']));
    assert.equal(json(await cli(['secret-versions', 'access', again.id, 'latest', '--json'])).value, value);

    // version aliases as key=value (integers), accessed by alias
    ok(await cli(['secrets', 'update', id, '--version-alias', 'stable=1']));
    assert.equal(ok(await cli(['secret-versions', 'access', id, 'stable'])).stdout, value);
    const badAlias = await cli(['secrets', 'update', id, '--version-alias', 'stable=one']);
    assert.equal(badAlias.code, 2);
    assert.match(badAlias.stderr, /--version-alias stable=one: stable must be an integer/);

    // On a terminal a newline follows the value (so the prompt starts on its own line).
    const tty = await onTerminal(['secret-versions', 'access', id, 'latest']);
    assert.equal(tty.code, 0, tty.stderr);
    assert.equal(tty.stdout, 'from stdin, no newline\n');

    // A disabled version: the API's error, exit 1, nothing on stdout.
    // (a custom method's if-match is read from the version it acts on when left out)
    ok(await cli(['secret-versions', 'disable', id, v2.id]));
    const disabled = await cli(['secret-versions', 'access', id, '2']);
    assert.equal(disabled.code, 1);
    assert.equal(disabled.stdout, '');
    assert.match(disabled.stderr, /^error: FAILED_PRECONDITION: version 2 .* is disabled.*\(request id req_\w+\)$/m);
  });

  test('secrets: bad value sources are usage errors that create nothing', async () => {
    const before = (await api('GET', '/v1/secrets')).body.data.length;
    const [both, missing, notUtf8, twoStdin, neither] = await Promise.all([
      cli(['secrets', 'create', '--name', 'x1', '--value', 'inline', '--value-file', file('v1.txt', 'file')]),
      cli(['secrets', 'create', '--name', 'x2', '--value-file', join(dir, 'no-such-file')]),
      cli(['secrets', 'create', '--name', 'x3', '--value-file', file('latin1.bin', Buffer.from([0x70, 0xe4, 0x73, 0x73]))]),
      cli(['secrets', 'create', '--input', '-', '--value-file', '-'], '{"name":"x4"}'),
      cli(['secrets', 'create', '--name', 'x5']),
    ]);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--value and --value-file exclude each other/);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--value-file .*no-such-file: ENOENT/);
    assert.equal(notUtf8.code, 2);
    assert.match(notUtf8.stderr, /--value-file .*latin1\.bin is not valid UTF-8 text/);
    assert.equal(twoStdin.code, 2);
    assert.match(twoStdin.stderr, /--input and --value-file cannot both read stdin/);
    assert.equal(neither.code, 2);
    assert.match(neither.stderr, /missing required --value/);
    assert.equal((await api('GET', '/v1/secrets')).body.data.length, before);
  });

  test('quotas list: plain numbers when piped, a bar per metric on a terminal, --json exact', async () => {
    const quotas = (await api('GET', '/v1/quotas')).body;
    const secrets = quotas.data.find((q: { metric: string }) => q.metric === 'secrets/secrets');
    assert.ok(secrets.usage >= 2 && secrets.limit === 8, JSON.stringify(secrets));

    const piped = ok(await cli(['quotas', 'list']));
    const lines = piped.stdout.trim().split('\n');
    assert.equal(lines.length, quotas.data.length);
    assert.ok(lines.includes(`secrets/secrets\t${secrets.usage}\t8\t${8 - secrets.usage}\t-`), piped.stdout);
    assert.match(piped.stdout, /^snippets\/runs\t\d+\t\d+\t\d+\t\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/m);
    assert.deepEqual(json(await cli(['quotas', 'list', '--json'])).data.map((q: { metric: string }) => q.metric), quotas.data.map((q: { metric: string }) => q.metric));

    const tty = await onTerminal(['quotas', 'list']);
    assert.equal(tty.code, 0, tty.stderr);
    assert.match(tty.stdout, /^METRIC +USAGE +LIMIT +BAR +RESETS$/m);
    const filled = Math.round((secrets.usage / 8) * 20);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(20 - filled)} ${`${Math.round((secrets.usage / 8) * 100)}%`.padStart(4)}`;
    assert.match(tty.stdout, new RegExp(`^secrets/secrets +${secrets.usage} +8 +${bar} +-$`, 'm'));
    assert.match(tty.stdout, /^snippets\/runs .* in \d+(h|m|s)$/m);
  });

  test('notifications list marks unread ones; mark-read and mark-all-read', async () => {
    // Soft-deleting a secret tells the owners when it will be purged.
    const doomed = json(await cli(['secrets', 'create', '--name', 'doomed', '--value', 'x', '--json']));
    ok(await cli(['secrets', 'delete', doomed.id, '--yes']));
    const listed = json(await cli(['notifications', 'list', '--json']));
    const purge = listed.data.find((n: { resource_id: string }) => n.resource_id === doomed.id);
    assert.equal(purge.type, 'secret_purge_scheduled');
    assert.equal(purge.read_at, undefined);

    const piped = ok(await cli(['notifications', 'list']));
    assert.match(piped.stdout, new RegExp(`^unread\\t${purge.id}\\t${purge.severity}\\t`, 'm'));
    const tty = await onTerminal(['notifications', 'list']);
    assert.match(tty.stdout, new RegExp(`^● +${purge.id} `, 'm'));

    ok(await cli(['notifications', 'mark-read', purge.id]));
    assert.match(ok(await cli(['notifications', 'list'])).stdout, new RegExp(`^read\\t${purge.id}\\t`, 'm'));
    const after = await onTerminal(['notifications', 'list']);
    assert.match(after.stdout, new RegExp(`^ +${purge.id} `, 'm'));
    ok(await cli(['notifications', 'mark-all-read']));
    assert.equal(json(await cli(['notifications', 'count-unread', '--json'])).unread_count, 0);
  });

  test('snippets run: inputs typed by the declarations, output by display_type, runs recorded', async () => {
    const declarations = file('inputs.json', JSON.stringify({
      inputs: [
        { key: 'days', label: 'Days', kind: 'number', default: 7 },
        { key: 'verbose', label: 'Verbose', kind: 'boolean', default: false },
        { key: 'name', label: 'Name', kind: 'text', default: 'x' },
      ],
    }));
    const create = async (name: string, displayType: string, code: string) =>
      json(await cli(['snippets', 'create', '--name', name, '--display-type', displayType, '--code-file', file(`${name}.js`, code), '--input', declarations, '--json'])).id as string;
    const [table, stat, asJson, logs] = await Promise.all([
      create('rows', 'table', 'return Array.from({ length: inputs.days }, (_, i) => ({ day: i + 1, name: inputs.name, ok: inputs.verbose }))'),
      create('stat', 'stat', 'return inputs.days * 2'),
      create('json', 'json', 'return { days: inputs.days, name: inputs.name, verbose: inputs.verbose }'),
      create('logs', 'logs', "console.log('first', inputs.days); console.warn('second'); return null"),
    ]);

    const rows = ok(await cli(['snippets', 'run', table, '--input', 'days=2', '--input', 'name=007', '--input', 'verbose=true']));
    assert.equal(rows.stdout, '1\t007\ttrue\n2\t007\ttrue\n');
    assert.equal(ok(await cli(['snippets', 'run', stat, '--input', 'days=21'])).stdout, '42\n');
    // `name` is a text input: 007 stays a string; days a number, verbose a boolean.
    const printed = ok(await cli(['snippets', 'run', asJson, '--input', 'days=3', '--input', 'name=007', '--input', 'verbose=false']));
    assert.equal(printed.stdout, `${JSON.stringify({ days: 3, name: '007', verbose: false }, null, 2)}\n`);
    assert.equal(ok(await cli(['snippets', 'run', logs])).stdout, 'first 7\nwarn second\n');

    const [notNumber, notBoolean, unknown] = await Promise.all([
      cli(['snippets', 'run', stat, '--input', 'days=seven']),
      cli(['snippets', 'run', table, '--input', 'verbose=yes']),
      cli(['snippets', 'run', stat, '--input', 'weeks=2']),
    ]);
    assert.equal(notNumber.code, 2);
    assert.match(notNumber.stderr, /--input days=seven: days is a number input/);
    assert.equal(notBoolean.code, 2);
    assert.match(notBoolean.stderr, /verbose is a boolean input \(true or false\)/);
    assert.equal(unknown.code, 1, 'the API refuses undeclared inputs');
    assert.match(unknown.stderr, /^error: INVALID_ARGUMENT: .*\n  body\.inputs/);

    // --json: the run exactly as the API answered; --display-type overrides the snippet's.
    const run = json(await cli(['snippets', 'run', stat, '--input', 'days=1', '--json']));
    assert.equal(run.state, 'succeeded');
    assert.equal(run.output, 2);
    assert.equal(ok(await cli(['snippets', 'run', stat, '--display-type', 'json'])).stdout, '14\n');
    const runs = json(await cli(['snippets', 'list-runs', stat, '--json']));
    assert.ok(runs.data.some((r: { id: string }) => r.id === run.id));

    // On a terminal: an aligned table with a header, a stat alone.
    const tty = await onTerminal(['snippets', 'run', table, '--input', 'days=2']);
    assert.equal(tty.code, 0, tty.stderr);
    assert.equal(tty.stdout, 'DAY  NAME  OK\n1    x     false\n2    x     false\n');
    assert.equal((await onTerminal(['snippets', 'run', stat])).stdout, '14\n');
  });

  test('snippets run: a failed run prints its error on stderr and exits 1 (also with --json)', async () => {
    const id = json(await cli(['snippets', 'create', '--name', 'thrower', '--display-type', 'json', '--code', "console.log('before'); throw new TypeError('boom')", '--json'])).id;
    const failed = await cli(['snippets', 'run', id]);
    assert.equal(failed.code, 1);
    assert.equal(failed.stdout, '');
    assert.match(failed.stderr, /^before\nerror: snippet failed: SNIPPET_THREW: boom\n {2}at /);
    const asJson = await cli(['snippets', 'run', id, '--json']);
    assert.equal(asJson.code, 1);
    assert.equal(JSON.parse(asJson.stdout).error.code, 'SNIPPET_THREW');
    assert.match(asJson.stderr, /SNIPPET_THREW/);

    const loop = await cli(['snippets', 'run', '--code', 'for (;;) {}', '--overrides.timeout-ms', '300']);
    assert.equal(loop.code, 1);
    assert.match(loop.stderr, /^error: snippet failed: TIMEOUT: /m);
  });

  test('snippets run --code-file: ad hoc code through :execute, printed by its shape; nothing saved', async () => {
    const before = (await api('GET', '/v1/snippets')).body.data.length;
    const table = ok(await cli(['snippets', 'run', '--code-file', '-', '--input', 'n=2'], 'return [{ a: inputs.n }, { a: inputs.n + 1, b: "x" }]'));
    assert.equal(table.stdout, '2\t\n3\tx\n');
    assert.equal(ok(await cli(['snippets', 'run', '--code-file', file('stat.js', 'return "up"\n')])).stdout, 'up\n');
    const object = ok(await cli(['snippets', 'run', '--code', 'return { nested: { ok: true } }']));
    assert.deepEqual(JSON.parse(object.stdout), { nested: { ok: true } });
    const logs = ok(await cli(['snippets', 'run', '--code', "console.error('bad'); return 1", '--display-type', 'logs']));
    assert.equal(logs.stdout, 'error bad\n');
    const thrown = await cli(['snippets', 'run', '--code-file', '-'], "throw new Error('ad hoc')");
    assert.equal(thrown.code, 1);
    assert.match(thrown.stderr, /^error: snippet failed: SNIPPET_THREW: ad hoc$/m);
    assert.equal(json(await cli(['snippets', 'run', '--code', 'return 5', '--json'])).output, 5);

    const both = await cli(['snippets', 'run', 'snp_01jf8x3q6m2c4y7n0k5t9r1b3d', '--code', 'return 1']);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--code runs code without <id>: give one or the other/);
    const neither = await cli(['snippets', 'run']);
    assert.equal(neither.code, 2);
    assert.match(neither.stderr, /missing <id> \(or --code or --code-file\)/);
    assert.equal((await api('GET', '/v1/snippets')).body.data.length, before);
  });
});
