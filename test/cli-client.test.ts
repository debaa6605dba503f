// The command-line client (issue 10) against a real `svc serve` child process, each command run as a
// child process with a temporary config dir: login with a token, use, create, list, --all, --wait
// succeeding and failing (a fault injected into the local driver), every exit code, --json output,
// confirmation, config file modes, logout revoking the session on the server.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as OTPAuth from 'otpauth';
import { createTestDatabase, freePort, type TestDatabase } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';
import { dbEnv, runSvc, spawnSvc, startSvc, type Finished, type RunningSvc } from './processes.js';

const OWNER_TOKEN = 'CliOwner0Token0For0Client0Tests1'; // 32 characters of [A-Za-z0-9]
const PASSWORD = 'owner password';

const MANIFEST = {
  routes: [{ route_key: 'web' }],
  resources: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { greeting: '{{ values.greeting }}' } }],
};
const VERSION = { semver: '1.0.0', input_schema: { type: 'object', properties: { greeting: { type: 'string', default: 'hi' } } }, manifest: MANIFEST };

describe('svc command-line client against svc serve', () => {
  let db: TestDatabase;
  let server: RunningSvc;
  let configHome: string;
  let ws: string;
  let cluster: string;
  let pkg: string;

  /** Runs the client with the test's config dir and server; `env` adds or overrides variables. */
  const cli = (args: string[], opts: { env?: Record<string, string>; input?: string } = {}): Promise<Finished> =>
    runSvc(args, { XDG_CONFIG_HOME: configHome, SVC_API_URL: server.url, ...opts.env }, 120_000, opts.input);
  const json = (r: Finished) => {
    assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
  const api = async (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: res.status === 204 ? null : await res.json() };
  };

  before(async () => {
    db = await createTestDatabase();
    configHome = mkdtempSync(join(tmpdir(), 'svc-cli-config-'));
    server = await startSvc(dbEnv(db, {
      SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: PASSWORD, SVC_BOOTSTRAP_TOKEN: OWNER_TOKEN,
      // Retries wait 1% of their production backoff.
      SVC_RETRY_BACKOFF_SCALE: '0.01',
      // The suite registers more clusters than `free` allows; quotas stay enforced.
      ...roomyPlans(),
    }));
  });
  after(async () => {
    await server?.stop();
    await db?.drop();
    rmSync(configHome, { recursive: true, force: true });
  });

  test('--help and completion need no server and no credentials', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const [root, installs, create, bash, words] = await Promise.all([
      cli(['--help'], { env: { SVC_API_URL: closed } }),
      cli(['installs', '--help'], { env: { SVC_API_URL: closed } }),
      cli(['installs', 'update', '--help'], { env: { SVC_API_URL: closed } }),
      cli(['completion', 'bash']),
      cli(['__complete', 'installs', 'cr']),
    ]);
    assert.equal(root.code, 0, root.stderr);
    for (const name of ['workspaces', 'api-tokens', 'clusters', 'packages', 'installs', 'operations', 'login', 'logout', 'completion', 'serve']) {
      assert.match(root.stdout, new RegExp(`\\n  ${name}\\b`), name);
    }
    assert.equal(installs.code, 0);
    for (const action of ['create', 'list', 'get', 'update', 'delete']) assert.match(installs.stdout, new RegExp(`\\n  ${action}\\b`), action);
    assert.match(create.stdout, /<id>/);
    // Descriptions wrap (a wide flag term puts its description below it): compared with spaces collapsed.
    const flat = create.stdout.replace(/\s+/g, ' ');
    assert.match(flat, /--if-match <etag> .*omitted: the client reads the current etag first/);
    assert.match(flat, /--package-version-pin\.kind <kind> .*choices: "latest", "pinned"/);
    assert.match(create.stdout, /--wait/);
    assert.match(create.stdout, /PATCH \/v1\/installs\/\{id\}/);
    assert.match(bash.stdout, /complete -o default -F _svc_complete svc/);
    assert.equal(words.stdout, 'create\n');
  });

  test('not logged in: exit 3 with a hint; login --with-token stores the session in a 0600 file in a 0700 dir', async () => {
    const anonymous = await cli(['workspaces', 'list']);
    assert.equal(anonymous.code, 3, anonymous.stderr);
    assert.match(anonymous.stderr, /^error: UNAUTHENTICATED: .*\(request id req_[0-9a-z]+\)\n  not logged in: run `svc login`\n$/);
    const status0 = await cli(['auth', 'status', '--json']);
    assert.equal(status0.code, 3);
    assert.equal(JSON.parse(status0.stdout).logged_in, false);

    const bad = await cli(['login', '--with-token'], { input: 'not a token\n' });
    assert.equal(bad.code, 2);
    const login = await cli(['login', '--with-token'], { input: `${OWNER_TOKEN}\n` });
    assert.equal(login.code, 0, login.stderr);
    assert.match(login.stderr, /logged in to .* as owner@example\.test/);
    const dir = join(configHome, 'svc');
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(join(dir, 'config.json')).mode & 0o777, 0o600);
    const status = json(await cli(['auth', 'status', '--json']));
    assert.equal(status.logged_in, true);
    assert.equal(status.user, 'owner@example.test');
    assert.equal(status.token_kind, 'session');
    assert.equal(status.api_url, server.url);
    assert.equal(status.context, null);
  });

  test('workspaces create, use, list, get, update (etag read first); workspace routes without a context: exit 4 with a hint', async () => {
    const created = json(await cli(['workspaces', 'create', '--name', 'Acme', '--json']));
    assert.match(created.id, /^ws_/);
    // --json prints the API's JSON exactly: the same representation the API gives.
    const direct = await api('GET', `/v1/workspaces/${created.id}`, OWNER_TOKEN);
    assert.deepEqual(created, { ...direct.body });
    ws = created.id;

    const noContext = await cli(['clusters', 'list']);
    assert.equal(noContext.code, 4, noContext.stderr);
    assert.match(noContext.stderr, /PERMISSION_DENIED.*\n  no workspace selected: run `svc workspaces use ws_\.\.\.`/);

    const use = await cli(['workspaces', 'use', ws]);
    assert.equal(use.code, 0, use.stderr);
    assert.equal(JSON.parse(readFileSync(join(configHome, 'svc/config.json'), 'utf8')).hosts[server.url].context, ws);
    assert.equal(json(await cli(['auth', 'status', '--json'])).context, ws);

    const list = json(await cli(['workspaces', 'list', '--json']));
    assert.deepEqual(list.data.map((w: { id: string }) => w.id), [ws]);
    const table = await cli(['workspaces', 'get', ws]);
    assert.equal(table.code, 0);
    assert.match(table.stdout, new RegExp(`^id +${ws}$`, 'm'));
    assert.match(table.stdout, /^name +Acme$/m);

    const updated = json(await cli(['workspaces', 'update', ws, '--name', 'Acme Corp', '--json']));
    assert.equal(updated.name, 'Acme Corp');
    assert.notEqual(updated.etag, created.etag);
    const stale = await cli(['workspaces', 'update', ws, '--name', 'Stale', '--if-match', created.etag]);
    assert.equal(stale.code, 5, stale.stderr);
    assert.match(stale.stderr, /^error: ABORTED: /);
  });

  test('clusters and packages: create --wait, create-version from stdin, list --all across pages', async () => {
    const created = await cli(['clusters', 'create', '--name', 'dev', '--provider', 'local', '--wait']);
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stderr, /step provision: completed/);
    assert.match(created.stderr, /SUCCEEDED in/);
    assert.match(created.stdout, /^cluster_id +clu_/m);
    cluster = /^cluster_id +(clu_\w+)$/m.exec(created.stdout)![1]!;
    const clusters = json(await cli(['clusters', 'list', '--json']));
    assert.equal(clusters.data[0].state, 'active');

    const duplicate = await cli(['clusters', 'create', '--name', 'dev']);
    assert.equal(duplicate.code, 5);
    assert.match(duplicate.stderr, /^error: ALREADY_EXISTS: .*\(request id req_\w+\)$/m);
    const invalid = await cli(['clusters', 'create', '--name', 'Not A Label']);
    assert.equal(invalid.code, 1);
    assert.match(invalid.stderr, /^error: INVALID_ARGUMENT: .*\n  body\.name: must match pattern/);
    const badEnum = await cli(['clusters', 'create', '--name', 'x', '--provider', 'mainframe']);
    assert.equal(badEnum.code, 2);
    assert.match(badEnum.stderr, /Allowed choices are local, kubernetes/);

    pkg = json(await cli(['packages', 'create', '--name', 'hello', '--json'])).id;
    const version = await cli(['packages', 'create-version', pkg, '--input', '-', '--json'], { input: JSON.stringify(VERSION) });
    assert.equal(json(version).semver, '1.0.0');
    for (const name of ['p1', 'p2', 'p3', 'p4']) assert.equal((await api('POST', '/v1/packages', OWNER_TOKEN, { name }, { 'svc-context': ws })).status, 201);
    const all = json(await cli(['packages', 'list', '--limit', '2', '--all', '--json']));
    assert.ok(Array.isArray(all));
    assert.equal(all.length, 5);
    assert.equal(new Set(all.map((p: { id: string }) => p.id)).size, 5);
    const page = await cli(['packages', 'list', '--limit', '2']);
    assert.equal(page.stdout.trim().split('\n').length, 2);
    assert.match(page.stderr, /more results: --cursor \S+ \(or --all\)/);
    const badLimit = await cli(['packages', 'list', '--limit', 'many']);
    assert.equal(badLimit.code, 2);
  });

  test('installs create --wait, get, list, update without --if-match, delete needs --yes', async () => {
    const created = await cli(['installs', 'create', '--package-id', pkg, '--cluster-id', cluster, '--package-version-pin.kind', 'latest', '--wait', '--json']);
    const op = json(created);
    assert.equal(op.state, 'SUCCEEDED');
    const install = op.response.install_id as string;
    assert.match(created.stderr, /step publish_urls: completed/);
    const got = json(await cli(['installs', 'get', install, '--json']));
    assert.equal(got.state, 'healthy');
    const list = await cli(['installs', 'list']);
    assert.match(list.stdout, new RegExp(`^${install}\\t${pkg}\\t1\\.0\\.0\\t${cluster}\\thealthy\\t`, 'm'));

    const update = await cli(['installs', 'update', install, '--package-version-pin.kind', 'latest', '--wait']);
    assert.equal(update.code, 0, update.stderr);
    assert.match(update.stderr, /SUCCEEDED/);

    const refused = await cli(['installs', 'delete', install]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /refusing to delete installs .* without --yes/);
    assert.equal((await api('GET', `/v1/installs/${install}`, OWNER_TOKEN, undefined, { 'svc-context': ws })).status, 200);
    const deleted = await cli(['installs', 'delete', install, '--yes', '--wait']);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal((await api('GET', `/v1/installs/${install}`, OWNER_TOKEN, undefined, { 'svc-context': ws })).status, 404);
    const missing = await cli(['installs', 'get', install]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^error: NOT_FOUND: .*\(request id req_\w+\)\n$/);
  });

  test('--wait on a failing deploy: last_error shown while retrying, then exit 1 with the error', async () => {
    const faulty = await cli(['clusters', 'create', '--input', '-', '--wait'], {
      input: JSON.stringify({ name: 'faulty', local: { faults: [{ action: 'deploy', fail_times: 2, latency_ms: 700 }] } }),
    });
    assert.equal(faulty.code, 0, faulty.stderr);
    const faultyId = /^cluster_id +(clu_\w+)$/m.exec(faulty.stdout)![1]!;
    const retried = await cli(['installs', 'create', '--package-id', pkg, '--cluster-id', faultyId, '--package-version-pin.kind', 'latest', '--wait']);
    assert.equal(retried.code, 0, retried.stderr);
    assert.match(retried.stderr, /step apply: retrying after error: injected fault: deploy failed on attempt/);
    assert.match(retried.stderr, /SUCCEEDED/);

    const broken = json(await cli(['clusters', 'create', '--input', '-', '--wait', '--json'], {
      input: JSON.stringify({ name: 'broken', local: { faults: [{ action: 'deploy', fail_times: 100, latency_ms: 400 }] } }),
    }));
    const failed = await cli(['installs', 'create', '--package-id', pkg, '--cluster-id', broken.response.cluster_id, '--package-version-pin.kind', 'latest', '--wait', '--json']);
    assert.equal(failed.code, 1, failed.stderr);
    assert.match(failed.stderr, /step apply: retrying after error: injected fault/);
    assert.match(failed.stderr, /^error: operation op_\w+ FAILED: step apply failed: injected fault: deploy/m);
    const op = JSON.parse(failed.stdout);
    assert.equal(op.state, 'FAILED');

    // operations list/get/wait on the failed one.
    const ops = json(await cli(['operations', 'list', '--owner-type', 'install', '--json']));
    assert.ok(ops.data.some((o: { id: string }) => o.id === op.id));
    assert.equal(json(await cli(['operations', 'get', op.id, '--json'])).state, 'FAILED');
    const waited = await cli(['operations', 'wait', op.id]);
    assert.equal(waited.code, 1);
    assert.match(waited.stderr, /FAILED/);
  });

  test('operations cancel, then operations wait exits 1 on CANCELLED', async () => {
    const started = json(await cli(['clusters', 'create', '--input', '-', '--json'], {
      input: JSON.stringify({ name: 'slow', local: { faults: [{ action: 'provision', latency_ms: 15_000 }] } }),
    }));
    assert.equal(started.state, 'RUNNING');
    const cancelled = await cli(['operations', 'cancel', started.id, '--json']);
    assert.equal(json(cancelled).id, started.id);
    const waited = await cli(['operations', 'wait', started.id, '--json']);
    assert.equal(waited.code, 1, waited.stderr);
    assert.equal(JSON.parse(waited.stdout).state, 'CANCELLED');
    assert.match(waited.stderr, /CANCELLED/);
    const again = await cli(['operations', 'cancel', started.id]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^error: FAILED_PRECONDITION: /);
  });

  test('Ctrl-C while waiting stops waiting, leaves the operation running and says how to resume', async () => {
    const child = spawnSvc(['clusters', 'create', '--input', '-', '--wait'], { XDG_CONFIG_HOME: configHome, SVC_API_URL: server.url });
    child.stdin!.end(JSON.stringify({ name: 'interrupted', local: { faults: [{ action: 'provision', latency_ms: 4000 }] } }));
    let stderr = '';
    const exited = once(child, 'exit');
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (d) => {
        stderr += d;
        if (/waiting for op_/.test(stderr)) resolve();
      });
      exited.then(([code]) => reject(new Error(`svc exited (${code}) before waiting: ${stderr}`)));
    });
    child.kill('SIGINT');
    const [code] = await exited;
    assert.equal(code, 130, stderr);
    const id = /Resume with: svc operations wait (op_\w+)/.exec(stderr)?.[1];
    assert.ok(id, stderr);
    const resumed = await cli(['operations', 'wait', id]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, /SUCCEEDED/);
  });

  test('exit codes: 2 usage, 3 bad token, 4 another workspace, 6 unreachable server', async () => {
    const [usage, unknownFlag, badToken, foreign, down] = await Promise.all([
      cli(['installs', 'get']),
      cli(['installs', 'list', '--frobnicate']),
      cli(['installs', 'list'], { env: { SVC_TOKEN: 'Wrong0Token0Wrong0Token0Wrong012' } }),
      cli(['installs', 'list'], { env: { SVC_CONTEXT: 'ws_01jf8x3q6m2c4y7n0k5t9r1b3d' } }),
      cli(['installs', 'list'], { env: { SVC_API_URL: `http://127.0.0.1:${await freePort()}` } }),
    ]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /missing required argument 'id'/);
    assert.equal(unknownFlag.code, 2);
    assert.equal(badToken.code, 3);
    assert.equal(foreign.code, 4, foreign.stderr);
    assert.equal(down.code, 6);
    assert.match(down.stderr, /^error: cannot reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/);
  });

  test('api-tokens create, list, revoke; an API token is only forgotten by logout', async () => {
    const created = json(await cli(['api-tokens', 'create', '--name', 'ci', '--role', 'admin', '--json']));
    assert.match(created.token, /^sk_svc_/);
    const listed = json(await cli(['api-tokens', 'list', '--json']));
    assert.ok(listed.data.some((t: { id: string }) => t.id === created.id));

    const other = mkdtempSync(join(tmpdir(), 'svc-cli-config-'));
    try {
      const env = { XDG_CONFIG_HOME: other };
      assert.equal((await cli(['login', '--with-token'], { env, input: created.token })).code, 0);
      const status = json(await cli(['auth', 'status', '--json'], { env }));
      assert.equal(status.token_kind, 'api_token');
      // An API token acts on its own workspace: no `use` needed.
      assert.equal(json(await cli(['clusters', 'list', '--json'], { env })).data.length >= 1, true);
      const out = await cli(['logout'], { env });
      assert.equal(out.code, 0);
      assert.match(out.stderr, /stays valid until revoked/);
      assert.equal((await api('GET', '/v1/clusters', created.token)).status, 200, 'logout does not revoke an API token');
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
    const revoked = await cli(['api-tokens', 'revoke', created.id, '--yes']);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal((await api('GET', '/v1/clusters', created.token)).status, 401);
  });

  test('workspaces delete --yes --wait; logout revokes the session on the server', async () => {
    const doomed = json(await cli(['workspaces', 'create', '--name', 'Doomed', '--json']));
    const refused = await cli(['workspaces', 'delete', doomed.id]);
    assert.equal(refused.code, 2);
    const deleted = await cli(['workspaces', 'delete', doomed.id, '--yes', '--wait']);
    assert.equal(deleted.code, 0, deleted.stderr);

    // A session of its own (not the bootstrap token other tests use), stored, then logged out.
    const res = await fetch(`${server.url}/v1/auth/sessions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'owner@example.test', password: PASSWORD }),
    });
    const session = ((await res.json()) as { token: string }).token;
    const other = mkdtempSync(join(tmpdir(), 'svc-cli-config-'));
    try {
      const env = { XDG_CONFIG_HOME: other };
      assert.equal((await cli(['login', '--with-token'], { env, input: session })).code, 0);
      assert.equal((await api('GET', '/v1/me', session)).status, 200);
      const out = await cli(['logout'], { env });
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stderr, /session revoked/);
      assert.equal((await api('GET', '/v1/me', session)).status, 401, 'the session no longer works on the server');
      const config = JSON.parse(readFileSync(join(other, 'svc/config.json'), 'utf8'));
      assert.equal(config.hosts[server.url], undefined, 'the token is forgotten');
      assert.equal((await cli(['auth', 'status'], { env })).code, 3);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  test('identity change-password reads the current and the new password from stdin (never from flags in history); other sessions stop', async () => {
    const env = dbEnv(db, {});
    const made = await runSvc(['admin', 'create-user', '--email', 'pat@example.test', '--password', 'pat first password'], env);
    assert.equal(made.code, 0, made.stderr);
    const signIn = async (password: string) => fetch(`${server.url}/v1/auth/sessions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'pat@example.test', password }),
    });
    const [mine, other] = await Promise.all([signIn('pat first password'), signIn('pat first password')]);
    const token = ((await mine.json()) as { token: string }).token;
    const otherToken = ((await other.json()) as { token: string }).token;
    const as = { env: { SVC_TOKEN: token } };

    const short = await cli(['identity', 'change-password'], { ...as, input: 'pat first password\n' });
    assert.equal(short.code, 2, short.stderr);
    assert.match(short.stderr, /--new-password was not given and line 2 of stdin is empty/);
    const wrong = await cli(['identity', 'change-password'], { ...as, input: 'not the password\npat second password\n' });
    assert.equal(wrong.code, 1, wrong.stderr);
    assert.match(wrong.stderr, /the current password is not right/);

    const changed = await cli(['identity', 'change-password'], { ...as, input: 'pat first password\npat second password\n' });
    assert.equal(changed.code, 0, changed.stderr);
    assert.equal(changed.stdout, 'Password changed; 1 other session was signed out.\n');
    assert.ok(!`${changed.stdout}${changed.stderr}`.includes('pat second password'));
    assert.equal((await api('GET', '/v1/me', token)).status, 200);
    assert.equal((await api('GET', '/v1/me', otherToken)).status, 401);
    assert.equal((await signIn('pat first password')).status, 401);
    assert.equal((await signIn('pat second password')).status, 201);

    // A reset link the operator made: the new password from stdin, never a flag.
    const link = await runSvc(['admin', 'users', 'reset-password', 'pat@example.test'], env);
    assert.equal(link.code, 0, link.stderr);
    const resetToken = /reset-password#([A-Za-z0-9]{32})/.exec(link.stdout)![1]!;
    const reset = await cli(['identity', 'complete-password-reset', '--token', resetToken], { input: 'pat third password\n' });
    assert.equal(reset.code, 0, reset.stderr);
    assert.match(reset.stdout, /^Password set; \d+ sessions? (was|were) signed out\. Sign in with it\.\n$/);
    assert.equal((await api('GET', '/v1/me', token)).status, 401);
    assert.equal((await signIn('pat third password')).status, 201);
  });

  test('identity create-session asks the two-factor code of an account that has one: from stdin\'s second line; without it, says so', async () => {
    const env = dbEnv(db, {});
    const made = await runSvc(['admin', 'create-user', '--email', 'tia@example.test', '--password', 'tia has a password'], env);
    assert.equal(made.code, 0, made.stderr);
    const first = await cli(['identity', 'create-session', '--email', 'tia@example.test', '--json'], { input: 'tia has a password\n' });
    assert.equal(first.code, 0, first.stderr);
    const token = JSON.parse(first.stdout).token as string;
    const enrolled = await cli(['identity', 'enroll-two-factor', '--json'], { env: { SVC_TOKEN: token } });
    assert.equal(enrolled.code, 0, enrolled.stderr);
    const secret = JSON.parse(enrolled.stdout).secret as string;
    assert.match(enrolled.stderr, /secret is shown only this once/);
    const code = (steps: number) => new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) }).generate({ timestamp: Date.now() + steps * 30_000 });
    const confirmed = await cli(['identity', 'confirm-two-factor', '--code', code(-1)], { env: { SVC_TOKEN: token } });
    assert.equal(confirmed.code, 0, confirmed.stderr);
    assert.equal(confirmed.stdout.match(/^ {2}[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}$/gm)?.length, 10, confirmed.stdout);

    const asked = await cli(['identity', 'create-session', '--email', 'tia@example.test'], { input: 'tia has a password\n' });
    assert.equal(asked.code, 3, asked.stderr);
    assert.match(asked.stderr, /send the code from your authenticator app/);
    const signedIn = await cli(['identity', 'create-session', '--email', 'tia@example.test', '--json'], { input: `tia has a password\n${code(0)}\n` });
    assert.equal(signedIn.code, 0, signedIn.stderr);
    assert.equal((await api('GET', '/v1/me', JSON.parse(signedIn.stdout).token)).body.two_factor, true);
  });
});
