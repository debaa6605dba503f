// The `svc` executable (issue 2, scope 1-2): migrate, admin create-user, config errors, serve with
// the bootstrap owner, restarts, and several processes starting at once on one database.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { openDatabase } from '../src/db/database.js';
import { createTestDatabase, type TestDatabase } from './harness.js';
import { dbEnv, ROOT, runSvc, startSvc } from './processes.js';

const BOOTSTRAP_TOKEN = 'Bootstrap0Token0For0The0CliTests'; // 32 characters of [A-Za-z0-9]

async function getJson(url: string, token: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json() };
}

describe('svc migrate and svc admin', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(() => db.drop());

  test('migrate applies the migrations on a fresh database, then reports it is up to date', async () => {
    const first = await runSvc(['migrate'], dbEnv(db));
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^applied: 001_kernel/);
    const second = await runSvc(['migrate'], dbEnv(db));
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout.trim(), 'database is up to date');
  });

  test('admin create-user prints the new usr_ id; a duplicate e-mail exits 1 with a clear message', async () => {
    const created = await runSvc(['admin', 'create-user', '--email', 'Ops@Example.test', '--password', 'long enough pw'], dbEnv(db));
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout.trim(), /^usr_[0-9a-z]{26}$/);
    const again = await runSvc(['admin', 'create-user', '--email', 'ops@example.test', '--password', 'another password'], dbEnv(db));
    assert.equal(again.code, 1);
    assert.equal(again.stdout, '');
    assert.match(again.stderr, /already exists/);
  });

  test('admin create-user rejects a bad password and missing flags', async () => {
    const [short, missing] = await Promise.all([
      runSvc(['admin', 'create-user', '--email', 'x@example.test', '--password', 'short'], dbEnv(db)),
      runSvc(['admin', 'create-user', '--email', 'x@example.test'], dbEnv(db)),
    ]);
    assert.equal(short.code, 1);
    assert.match(short.stderr, /password must be 8-256 characters/);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /needs --email and --password/);
  });

  test('bad configuration, an unknown command and no command exit 2 with a message', async () => {
    const [badPort, badToken, unknown, none, badRole, badFlag] = await Promise.all([
      runSvc(['serve'], dbEnv(db, { PORT: 'abc' })),
      runSvc(['serve'], dbEnv(db, { SVC_BOOTSTRAP_EMAIL: 'a@b.test', SVC_BOOTSTRAP_PASSWORD: 'password1', SVC_BOOTSTRAP_TOKEN: 'short' })),
      runSvc(['frobnicate'], dbEnv(db)),
      runSvc([], dbEnv(db)),
      runSvc(['serve', '--role', 'boss'], dbEnv(db)),
      runSvc(['serve', '--rol', 'api'], dbEnv(db)),
    ]);
    assert.equal(badRole.code, 2);
    assert.match(badRole.stderr, /role must be one of all, api, worker, got "boss"/);
    assert.equal(badFlag.code, 2, badFlag.stderr);
    assert.match(badFlag.stderr, /Unknown option '--rol'/);
    assert.equal(badPort.code, 2);
    assert.match(badPort.stderr, /configuration error: PORT must be an integer between 0 and 65535, got "abc"/);
    assert.equal(badToken.code, 2);
    assert.match(badToken.stderr, /SVC_BOOTSTRAP_TOKEN must be exactly 32 characters/);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command 'frobnicate'/);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /Usage: svc <command>/);
  });

  test('bin/svc.js (the built executable) runs', { skip: !existsSync(join(ROOT, 'dist/main.js')) && 'dist/ is not built (npm run build)' }, async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, 'bin/svc.js'), 'help'], { cwd: ROOT });
    assert.match(stdout, /Usage: svc <command>/);
    assert.match(stdout, /serve/);
  });
});

describe('svc serve with a bootstrap owner', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(() => db.drop());

  const bootstrap = { SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: BOOTSTRAP_TOKEN };

  test('the first start creates the owner and registers the token; a restart is idempotent', async () => {
    const first = await startSvc(dbEnv(db, bootstrap));
    let userId: string;
    try {
      assert.match(first.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.ok(first.logs.some((l) => l.msg === 'applied migrations'), 'a fresh database is migrated at start');
      const me = await getJson(`${first.url}/v1/me`, BOOTSTRAP_TOKEN);
      assert.equal(me.status, 200);
      assert.equal(me.body.email, 'owner@example.test');
      assert.equal(me.body.credential, 'session');
      userId = me.body.id;
      const ready = await fetch(`${first.url}/readyz`);
      assert.equal(ready.status, 200);
      // The bootstrap password signs in too.
      const signIn = await fetch(`${first.url}/v1/auth/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'owner@example.test', password: 'owner password' }),
      });
      assert.equal(signIn.status, 201);
    } finally {
      assert.deepEqual(await first.stop(), { code: 0, signal: null });
    }
    // Secrets never reach the log.
    const logText = JSON.stringify(first.logs);
    assert.ok(!logText.includes(BOOTSTRAP_TOKEN), 'the bootstrap token was logged');
    assert.ok(!logText.includes('owner password'), 'the bootstrap password was logged');

    const second = await startSvc(dbEnv(db, bootstrap));
    try {
      assert.ok(!second.logs.some((l) => l.msg === 'applied migrations'), 'nothing left to migrate');
      const me = await getJson(`${second.url}/v1/me`, BOOTSTRAP_TOKEN);
      assert.equal(me.status, 200);
      assert.equal(me.body.id, userId, 'the same owner, not a second one');
      assert.equal(second.logs.find((l) => l.msg === 'bootstrap owner ready')?.user_id, userId);
    } finally {
      assert.deepEqual(await second.stop(), { code: 0, signal: null });
    }
  });
});

describe('several instances starting at once on one database', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(() => db.drop());

  test('three concurrent `svc migrate` all exit 0 and apply each migration exactly once', async () => {
    const results = await Promise.all([1, 2, 3].map(() => runSvc(['migrate'], dbEnv(db))));
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    const applied = results.filter((r) => r.stdout.startsWith('applied:'));
    assert.equal(applied.length, 1, results.map((r) => r.stdout).join(' | '));
    assert.equal(results.filter((r) => r.stdout.trim() === 'database is up to date').length, 2);
    const handle = openDatabase({ databaseUrl: db.databaseUrl, dataDir: db.dataDir, poolSize: 1 });
    try {
      const rows = await handle.db.selectFrom('svc_migrations' as never).select(['name' as never]).execute() as { name: string }[];
      const names = rows.map((r) => r.name);
      assert.ok(names.includes('001_kernel'));
      assert.equal(new Set(names).size, names.length, `a migration is recorded twice: ${names.join(', ')}`);
      // The schema is complete and usable: one users table, empty.
      assert.deepEqual(await handle.db.selectFrom('users').select('id').execute(), []);
    } finally {
      await handle.close();
    }
  });

  test('two `svc serve` started together on a fresh database both serve the same bootstrap owner', async () => {
    const fresh = await createTestDatabase();
    const bootstrap = { SVC_BOOTSTRAP_EMAIL: 'twin@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: BOOTSTRAP_TOKEN };
    const instances = await Promise.allSettled([startSvc(dbEnv(fresh, bootstrap)), startSvc(dbEnv(fresh, bootstrap))]);
    try {
      for (const i of instances) assert.equal(i.status, 'fulfilled', i.status === 'rejected' ? String(i.reason) : '');
      const [a, b] = instances.map((i) => (i as PromiseFulfilledResult<Awaited<ReturnType<typeof startSvc>>>).value) as [
        Awaited<ReturnType<typeof startSvc>>,
        Awaited<ReturnType<typeof startSvc>>,
      ];
      assert.notEqual(a.url, b.url);
      const meA = await getJson(`${a.url}/v1/me`, BOOTSTRAP_TOKEN);
      const meB = await getJson(`${b.url}/v1/me`, BOOTSTRAP_TOKEN);
      assert.equal(meA.status, 200);
      assert.equal(meB.status, 200);
      assert.equal(meA.body.id, meB.body.id);
      // A workspace created through one instance is visible through the other, with the same etag.
      const created = await fetch(`${a.url}/v1/workspaces`, {
        method: 'POST',
        headers: { authorization: `Bearer ${BOOTSTRAP_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Shared' }),
      });
      assert.equal(created.status, 201);
      const ws = (await created.json()) as { id: string; etag: string };
      const read = await getJson(`${b.url}/v1/workspaces/${ws.id}`, BOOTSTRAP_TOKEN);
      assert.equal(read.status, 200);
      assert.equal(read.body.etag, ws.etag);
    } finally {
      for (const i of instances) if (i.status === 'fulfilled') assert.deepEqual(await i.value.stop(), { code: 0, signal: null });
      await fresh.drop();
    }
  });
});
