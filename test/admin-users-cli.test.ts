// The operator's account commands on the host (`svc admin users …`, `svc admin mail list`), run as
// real processes on the service's database: their output, refusals (exit 1, the reason in words)
// and usage errors (exit 2); and the mail and admin settings refused at start with a clear message.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { createTestDatabase, startTestApp, type TestApp, type TestDatabase } from './harness.js';
import { dbEnv, runSvc } from './processes.js';

describe('svc admin users and mail', () => {
  let db: TestDatabase;
  let t: TestApp;
  let env: Record<string, string>;
  before(async () => {
    db = await createTestDatabase({ migrated: true });
    env = dbEnv(db);
    t = await startTestApp(env, { database: db });
  });
  after(async () => {
    await t.close();
    await db.drop?.();
  });

  test('list, disable, enable, reset-password, grant-admin; deleting an owner is refused, naming the workspace', async () => {
    const owner = await t.user('owner');
    const other = await t.user('other');
    await t.workspace(owner, 'Owned Co');
    const [listed, disabled, refused, unknown, bad, mail] = await Promise.all([
      runSvc(['admin', 'users', 'list'], env),
      runSvc(['admin', 'users', 'disable', other.email.toUpperCase()], env),
      runSvc(['admin', 'users', 'delete', owner.id], env),
      runSvc(['admin', 'users', 'enable', 'nobody@example.test'], env),
      runSvc(['admin', 'users', 'frobnicate', owner.id], env),
      runSvc(['admin', 'mail', 'list', '--limit', '0'], env),
    ]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^ID +EMAIL +NAME +STATE +ADMIN +OWNS +CREATED\n/);
    assert.match(listed.stdout, new RegExp(`${owner.id} +${owner.email.replace('.', '\\.')} +- +active +- +owned-co `));
    assert.equal(disabled.code, 0, disabled.stderr);
    assert.match(disabled.stdout, new RegExp(`^${other.email.replace('.', '\\.')} \\(${other.id}\\) is disabled: 1 session\\(s\\) signed out`));
    assert.equal((await t.request('GET', '/v1/me', { token: other.token })).status, 401, 'signed out at once');
    assert.deepEqual([refused.code, refused.stderr], [1, `error: ${owner.email} owns a workspace (owned-co): make someone else its owner, or delete it, first\n`]);
    assert.equal((await t.request('GET', '/v1/me', { token: owner.token })).status, 200, 'nothing deleted');
    assert.deepEqual([unknown.code, unknown.stderr], [1, 'error: user nobody@example.test not found\n']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^error: unknown command "frobnicate"\n\nUsage: svc admin users/);
    assert.equal(mail.code, 2);
    assert.match(mail.stderr, /--limit must be an integer from 1 to 100/);

    const [enabled, link, granted] = await Promise.all([
      runSvc(['admin', 'users', 'enable', other.id], env),
      runSvc(['admin', 'users', 'reset-password', other.email], env),
      runSvc(['admin', 'users', 'grant-admin', other.email], env),
    ]);
    assert.equal(enabled.code, 0, enabled.stderr);
    assert.equal((await t.request('POST', '/v1/auth/sessions', { body: { email: other.email, password: other.password } })).status, 201);
    assert.match(link.stdout, /\nhttp:\/\/127\.0\.0\.1:8080\/reset-password#[A-Za-z0-9]{32}\n$/);
    assert.match(granted.stdout, /is an instance admin \(granted\)\n$/);
    const session = await t.services.sessions.createSession(other.id);
    assert.equal((await t.request('GET', '/v1/admin/users', { token: session.token })).status, 200);
  });

  test('mail and admin settings are checked at start; the SMTP URL never shows in the config', () => {
    const base = { SVC_DATA_DIR: db.dataDir, SVC_SECRET_KEY: env.SVC_SECRET_KEY };
    const refuses = (extra: Record<string, string>, message: RegExp) =>
      assert.throws(() => loadConfig({ ...base, ...extra }), (err: Error) => err instanceof ConfigError && message.test(err.message));
    refuses({ SVC_MAIL: 'carrier-pigeon' }, /SVC_MAIL must be one of local, smtp, got "carrier-pigeon"/);
    refuses({ SVC_MAIL: 'smtp' }, /SVC_MAIL=smtp needs SVC_SMTP_URL/);
    refuses({ SVC_MAIL: 'smtp', SVC_SMTP_URL: 'http://mail.example.com' }, /SVC_MAIL=smtp needs SVC_SMTP_URL/);
    refuses({ SVC_MAIL_FROM: 'not an address' }, /SVC_MAIL_FROM must be an address/);
    refuses({ SVC_ADMIN_EMAILS: 'ok@example.com, nope' }, /SVC_ADMIN_EMAILS .* "nope" is not one/);
    const config = loadConfig({ ...base, SVC_MAIL: 'smtp', SVC_SMTP_URL: 'smtps://svc:hunter2-secret@mail.example.com:465', SVC_ADMIN_EMAILS: 'A@Example.com,b@example.com' });
    assert.equal(config.people.mail.smtpUrl, 'smtps://svc:hunter2-secret@mail.example.com:465');
    assert.ok(!JSON.stringify(config).includes('hunter2'));
    assert.deepEqual(config.people.adminEmails, ['a@example.com', 'b@example.com']);
  });
});
