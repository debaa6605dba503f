// The smtp mail driver against a real SMTP server running in the test (smtp-server, from the
// nodemailer project): a reset link arrives with our From, the outbox keeps no body once sent,
// the credentials in SVC_SMTP_URL authenticate and never reach the outbox, a 5xx refusal is final
// and a 4xx one is retried until the server takes the message.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

interface Received { from: string; to: string[]; raw: string }

describe('mail through SMTP', () => {
  let t: TestApp;
  let root: TestUser;
  let server: SMTPServer;
  const received: Received[] = [];
  const auths: string[] = [];
  /** recipients refused for a while (4xx) before they are taken */
  const busyFor = new Map<string, number>();

  before(async () => {
    server = new SMTPServer({
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      logger: false,
      onAuth(auth, _session, cb) {
        auths.push(auth.username ?? '');
        if (auth.username === 'svc' && auth.password === 'smtp p@ss') cb(null, { user: 'svc' });
        else cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
      },
      onRcptTo(address, _session, cb) {
        if (address.address.startsWith('refused')) return cb(Object.assign(new Error('5.1.1 no such mailbox here'), { responseCode: 550 }));
        const busy = busyFor.get(address.address) ?? 0;
        if (busy > 0) {
          busyFor.set(address.address, busy - 1);
          return cb(Object.assign(new Error('4.2.1 mailbox busy, try later'), { responseCode: 451 }));
        }
        cb();
      },
      onData(stream, session, cb) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString('utf8') });
          cb();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.server.address() as AddressInfo).port;
    t = await startTestApp({
      SVC_MAIL: 'smtp', SVC_SMTP_URL: `smtp://svc:${encodeURIComponent('smtp p@ss')}@127.0.0.1:${port}`, SVC_MAIL_FROM: 'Acme svc <svc@acme.test>',
      SVC_ADMIN_EMAILS: 'root@acme.test',
    });
    const user = await t.services.users.createUser({ email: 'root@acme.test', password: 'root has a long password' });
    root = { id: user.id, email: user.email, password: 'root has a long password', token: (await t.services.sessions.createSession(user.id)).token };
  });
  after(async () => {
    await t.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  async function settled(email: string): Promise<any> {
    for (let i = 0; i < 400; i++) {
      const m = (await t.request('GET', `/v1/admin/mail_messages?limit=1&to=${encodeURIComponent(email)}`, { token: root.token })).body.data[0];
      if (m && m.state !== 'queued') return m;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`mail to ${email} never settled`);
  }
  const askReset = (email: string) => t.request('POST', '/v1/password_resets', { body: { email }, remoteAddress: `10.9.${received.length}.${Math.floor(Math.random() * 250)}` });

  test('a reset link arrives through the server; the outbox keeps no body, and no credential', async () => {
    const ada = await t.services.users.createUser({ email: 'ada@acme.test', password: 'ada has a long password' });
    assert.equal((await askReset(ada.email)).status, 200);
    const mail = await settled(ada.email);
    assert.deepEqual([mail.state, mail.driver, mail.attempts, mail.body, mail.last_error], ['sent', 'smtp', 1, null, null]);
    const got = received.find((r) => r.to.includes('ada@acme.test'))!;
    assert.ok(got, 'the server received it');
    assert.equal(got.from, 'svc@acme.test');
    assert.match(got.raw, /^From: Acme svc <svc@acme\.test>/m);
    assert.match(got.raw, /^Subject: Reset your svc password/m);
    assert.match(got.raw.replace(/=\r?\n/g, ''), /http:\/\/svc\.test\/reset-password#[A-Za-z0-9]{32}/);
    assert.ok(auths.includes('svc'));
    const outbox = JSON.stringify((await t.request('GET', '/v1/admin/mail_messages?limit=100', { token: root.token })).body);
    assert.ok(!outbox.includes('smtp p@ss') && !outbox.includes(encodeURIComponent('smtp p@ss')));
  });

  test('a final refusal (5xx) ends the message as failed at once, with the server\'s words', async () => {
    await t.services.users.createUser({ email: 'refused@acme.test', password: 'refused has a password' });
    await askReset('refused@acme.test');
    const mail = await settled('refused@acme.test');
    assert.deepEqual([mail.state, mail.attempts, mail.body], ['failed', 1, null]);
    assert.match(mail.last_error, /refused the message: .*no such mailbox/);
  });

  test('a passing refusal (4xx) is retried until the server takes the message', async () => {
    busyFor.set('busy@acme.test', 2);
    await t.services.users.createUser({ email: 'busy@acme.test', password: 'busy has a password' });
    await askReset('busy@acme.test');
    const mail = await settled('busy@acme.test');
    assert.deepEqual([mail.state, mail.attempts, mail.last_error], ['sent', 3, null]);
    assert.ok(received.some((r) => r.to.includes('busy@acme.test')));
  });
});
