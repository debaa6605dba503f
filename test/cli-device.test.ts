// `svc login` end to end against a real `svc serve`: the CLI prints the code (stderr), the test
// approves or denies it through the /device pages with plain HTTP form posts (sign in, then the
// approve/deny form, each with its CSRF token), and the CLI stores the session token; denial and
// expiry end with a clear message and exit 3.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import Database from 'better-sqlite3';
import { createTestDatabase, freePort, type TestDatabase } from './harness.js';
import { dbEnv, spawnSvc, startSvc, type RunningSvc } from './processes.js';
import { FormBrowser } from './device-form.js';

const EMAIL = 'device@example.test';
const PASSWORD = 'device password';


describe('svc login (device grant) against svc serve', () => {
  let db: TestDatabase;
  let server: RunningSvc;
  const homes: string[] = [];

  before(async () => {
    db = await createTestDatabase();
    // A known port, so the verification URL the server prints (SVC_PUBLIC_URL) is the one it listens on.
    const port = String(await freePort());
    server = await startSvc(dbEnv(db, { SVC_BOOTSTRAP_EMAIL: EMAIL, SVC_BOOTSTRAP_PASSWORD: PASSWORD, PORT: port, SVC_PUBLIC_URL: `http://127.0.0.1:${port}` }));
  });
  after(async () => {
    await server?.stop();
    await db?.drop();
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  });

  /** Starts `svc login --no-browser`; resolves with the user code once printed, and the exit. */
  async function startLogin() {
    const home = mkdtempSync(join(tmpdir(), 'svc-cli-device-'));
    homes.push(home);
    const child = spawnSvc(['login', '--no-browser'], { XDG_CONFIG_HOME: home, SVC_API_URL: server.url });
    let stderr = '';
    const exited = once(child, 'exit').then(([code]) => ({ code: code as number | null, stderr }));
    const userCode = await new Promise<string>((resolve, reject) => {
      child.stderr!.on('data', (d) => {
        stderr += d;
        const m = /one-time code: ([B-Z]{4}-[B-Z]{4})\n.*\(Ctrl-C cancels\)/.exec(stderr);
        if (m) resolve(m[1]!);
      });
      exited.then(() => reject(new Error(`svc login exited early: ${stderr}`)));
    });
    return { home, child, userCode, exited, stderr: () => stderr };
  }

  test('approved in the browser: the CLI stores the session token and it works', async () => {
    const login = await startLogin();
    assert.match(login.stderr(), new RegExp(`Open ${server.url.replace(/[.]/g, '\\.')}/device\\?user_code=${login.userCode} in a browser`));
    const approved = await new FormBrowser(server.url, EMAIL, PASSWORD).decide(login.userCode, 'approve');
    assert.equal(approved.status, 200, approved.html);
    const { code, stderr } = await login.exited;
    assert.equal(code, 0, stderr);
    assert.match(stderr, new RegExp(`logged in to .* as ${EMAIL}`));
    const config = JSON.parse(readFileSync(join(login.home, 'svc/config.json'), 'utf8'));
    const host = config.hosts[server.url];
    assert.equal(host.token_kind, 'session');
    assert.match(host.token, /^[A-Za-z0-9]{32}$/);
    const me = await fetch(`${server.url}/v1/me`, { headers: { authorization: `Bearer ${host.token}` } });
    assert.equal(me.status, 200);
  });

  test('denied in the browser: exit 3 with a clear message, nothing stored', async () => {
    const login = await startLogin();
    assert.equal((await new FormBrowser(server.url, EMAIL, PASSWORD).decide(login.userCode, 'deny')).status, 200);
    const { code, stderr } = await login.exited;
    assert.equal(code, 3, stderr);
    assert.match(stderr, /error: login denied in the browser/);
    assert.throws(() => readFileSync(join(login.home, 'svc/config.json')), /ENOENT/);
  });

  test('expired before approval: exit 3 telling to run svc login again', async () => {
    const login = await startLogin();
    // Let the code expire on the server: its expiry moved into the past in the database.
    const past = Math.floor(Date.now() / 1000) - 1;
    if (db.databaseUrl) {
      const client = new pg.Client({ connectionString: db.databaseUrl });
      await client.connect();
      await client.query('update device_codes set expires_at = $1', [past]);
      await client.end();
    } else {
      const sqlite = new Database(join(db.dataDir, 'svc.db'));
      sqlite.prepare('update device_codes set expires_at = ?').run(past);
      sqlite.close();
    }
    const { code, stderr } = await login.exited;
    assert.equal(code, 3, stderr);
    assert.match(stderr, /error: the code expired before it was approved; run `svc login` again/);
  });

  test('Ctrl-C cancels the login cleanly', async () => {
    const login = await startLogin();
    login.child.kill('SIGINT');
    const { code, stderr } = await login.exited;
    assert.equal(code, 130, stderr);
    assert.match(stderr, /error: login cancelled\n$/);
  });
});
