// Issue 20 section 1: no single request can stall the process. Nesting past the bound is refused
// before anything walks the body; a body over the size limit gets a 413 the client can read; a
// body that is not UTF-8 is refused rather than stored altered; silent and surplus connections
// are closed. Assertions are on answers and on who closed a socket, never on durations.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { healthz, startTestApp, type TestApp, type TestUser } from './harness.js';
import { InstallFixtures, type Caller } from './installs-fixtures.js';
import { MAX_BODY_NESTING } from '../src/platform/validation.js';
import { clock } from '../src/platform/clock.js';
import { USER_CODE_FREE_FAILURES } from '../src/modules/sessions/sign-in-throttle.js';
import { Browser, csrfOf } from './browser.js';

const deep = (n: number, leaf = '1') => `${'{"a":'.repeat(n)}${leaf}${'}'.repeat(n)}`;

/** One request with node:http: the status and body the client read, or the socket error it saw instead. */
function send(port: number, opts: { path: string; headers: Record<string, string | number>; chunks: Buffer[] }): Promise<{ status: number; body: any } | { error: string }> {
  return new Promise((resolve) => {
    const req = httpRequest({ port, host: '127.0.0.1', method: 'POST', path: opts.path, headers: opts.headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    (async () => {
      for (const chunk of opts.chunks) {
        if (req.destroyed) return;
        if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
      }
      req.end();
    })().catch(() => undefined);
  });
}

/** A raw connection; `closedByServer` is true once the server ended or reset it (the test never closes it first). */
function rawConnection(port: number): Promise<{ socket: Socket; text: () => string; closed: Promise<boolean> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => { text += d; });
    socket.on('error', () => undefined);
    const closed = new Promise<boolean>((r) => socket.once('close', () => r(true)));
    socket.once('connect', () => resolve({ socket, text: () => text, closed }));
    socket.once('error', reject);
  });
}

describe('request limits: nesting, size, encoding, connections', () => {
  let t: TestApp;
  let port: number;
  let owner: TestUser;
  let ws: string;
  const as = (headers: Record<string, string> = {}) => ({ token: owner.token, headers: { 'svc-context': ws, ...headers } });

  before(async () => {
    t = await startTestApp({ SVC_FIRST_BYTE_TIMEOUT_MS: '300', SVC_MAX_CONNECTIONS_PER_ADDRESS: '8' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
    owner = await t.user('limits');
    ws = (await t.workspace(owner, 'Limits')).id;
  });
  after(() => t.close());

  test('install values nested 150,000 levels deep are 400 NESTING_TOO_DEEP on create and update, with or without idempotency-key', async () => {
    const f = new InstallFixtures(t);
    const c: Caller = { user: owner, ws };
    const { pkgId } = await f.packageWithVersion(c);
    const clusterId = await f.cluster(c);
    const install = await f.healthyInstall(c, pkgId, clusterId);
    const create = (values: string) => `{"package_id":"${pkgId}","package_version_pin":{"kind":"latest"},"cluster_id":"${clusterId}","initial_values":{"b":${values}}}`;
    for (const key of [{}, { 'idempotency-key': randomUUID() }] as Record<string, string>[]) {
      const res = await t.request('POST', '/v1/installs', { ...as(key), payload: create(deep(150_000)) });
      assert.equal(res.status, 400, res.text.slice(0, 300));
      assert.equal(res.body.error.reason, 'NESTING_TOO_DEEP');
      assert.deepEqual(res.body.error.field_violations, [{ field: 'body', description: `nests arrays and objects deeper than ${MAX_BODY_NESTING} levels` }]);
    }
    const patch = await t.request('PATCH', `/v1/installs/${install.id}`, { ...as({ 'if-match': '*' }), payload: `{"values":{"b":${deep(150_000)}}}` });
    assert.equal(patch.status, 400, patch.text.slice(0, 300));
    assert.equal(patch.body.error.reason, 'NESTING_TOO_DEEP');
    // Under the global bound, the values' own 64-level bound still answers with its own reason.
    const values65 = await t.request('POST', '/v1/installs', { ...as(), payload: create(deep(70)) });
    assert.equal(values65.status, 400, values65.text);
    assert.equal(values65.body.error.reason, 'VALUES_INVALID');
  });

  test('brackets inside strings do not count as nesting', async () => {
    const res = await t.request('POST', '/v1/workspaces', { token: owner.token, payload: JSON.stringify({ name: `${'['.repeat(100)}\\"{{{${'{'.repeat(100)}` }) });
    assert.notEqual(res.body?.error?.reason, 'NESTING_TOO_DEEP', res.text);
  });

  test('snippet inputs nested past the bound are 400 NESTING_TOO_DEEP on :execute, not a 500', async () => {
    const res = await t.request('POST', '/v1/snippets:execute', { ...as(), payload: `{"code":"return 1","inputs":{"x":${deep(5000)}}}` });
    assert.equal(res.status, 400, res.text.slice(0, 300));
    assert.equal(res.body.error.reason, 'NESTING_TOO_DEEP');
  });

  test('a body that is not UTF-8 is 400 INVALID_ENCODING and nothing is stored (a secret value included)', async () => {
    const before = await t.request('GET', '/v1/secrets', as());
    for (const bad of [Buffer.from([0xff]), Buffer.from([0xc3]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xc0, 0xaf])]) {
      const payload = Buffer.concat([Buffer.from('{"name":"enc","value":"a'), bad, Buffer.from('b"}')]);
      const res = await t.app.inject({ method: 'POST', url: '/v1/secrets', payload, headers: { authorization: `Bearer ${owner.token}`, 'svc-context': ws, 'content-type': 'application/json' } });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(JSON.parse(res.body).error.reason, 'INVALID_ENCODING');
    }
    const after = await t.request('GET', '/v1/secrets', as());
    assert.deepEqual(after.body.data, before.body.data, 'no secret was created');
    // Valid multi-byte UTF-8 still passes.
    const ok = await t.request('POST', '/v1/secrets', { ...as(), body: { name: 'enc-ok', value: 'é€😀' } });
    assert.equal(ok.status, 201, ok.text);
  });

  test('form bodies that are not UTF-8, raw or percent-encoded, are refused on the OAuth and device endpoints', async () => {
    for (const [url, payload] of [
      ['/oauth/token', Buffer.concat([Buffer.from('grant_type=client_credentials&client_id=oac_'), Buffer.from([0xff]), Buffer.from('&client_secret=x')])],
      ['/oauth/token', Buffer.from('grant_type=client_credentials&client_id=oac_%FF&client_secret=x')],
      ['/device/sign-in', Buffer.from('email=a%C3%40x.test&password=x&user_code=ABCD-EFGH&csrf=x')],
    ] as const) {
      const res = await t.app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      assert.equal(res.statusCode, 400, `${url}: ${res.body.slice(0, 200)}`);
      assert.match(res.body, /not valid UTF-8/, url);
    }
  });

  test('a body over the limit is 413 BODY_TOO_LARGE the client reads, with Content-Length and chunked, every time', async () => {
    const limit = t.config.bodyLimit;
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const chunks = Array.from({ length: Math.ceil((limit * 2) / chunk.length) }, () => chunk);
    const total = chunks.length * chunk.length;
    const outcomes: string[] = [];
    for (let i = 0; i < 15; i++) {
      for (const framing of [{ 'content-length': total }, { 'transfer-encoding': 'chunked' }] as Record<string, string | number>[]) {
        const res = await send(port, { path: '/v1/auth/sessions', headers: { 'content-type': 'application/json', ...framing }, chunks });
        if ('error' in res) outcomes.push(`${Object.keys(framing)[0]}: ${res.error}`);
        else {
          assert.equal(res.status, 413);
          assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
          assert.equal(res.body.error.reason, 'BODY_TOO_LARGE');
          assert.match(res.body.error.request_id, /^req_/);
          outcomes.push('413');
        }
      }
    }
    assert.deepEqual(outcomes.filter((o) => o !== '413'), [], 'every client read its 413');
  });

  test('a connection that never sends a byte is closed by the server; a new client is still served', async () => {
    const silent = await rawConnection(port);
    assert.equal(await silent.closed, true);
    assert.equal(silent.text(), '', 'closed without an answer: there was no request');
    assert.equal(await healthz(port), 200);
  });

  test('connections from one address past SVC_MAX_CONNECTIONS_PER_ADDRESS are closed at once; others are served when they go', async () => {
    const held: Socket[] = [];
    try {
      // Each held connection has begun a request line, so the first-byte timeout does not close it.
      for (let i = 0; i < 8; i++) {
        const c = await rawConnection(port);
        c.socket.write('G');
        held.push(c.socket);
      }
      const surplus = await rawConnection(port);
      surplus.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.equal(await surplus.closed, true);
      assert.equal(surplus.text(), '', 'no answer over the cap');
    } finally {
      for (const s of held) s.destroy();
    }
    // The held sockets' close reaches the server asynchronously: retry until one is served.
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) status = await healthz(port).catch(() => 0);
    assert.equal(status, 200);
  });

  test('the first-byte timeout closes only silent connections: a request begun before it and finished after it is answered', async () => {
    const c = await rawConnection(port);
    c.socket.write('GET /heal');
    await new Promise((r) => setTimeout(r, 3 * 300));
    c.socket.write('thz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.equal(await c.closed, true);
    assert.match(c.text(), /^HTTP\/1\.1 200/, c.text().slice(0, 300));
  });

  test('a request that arrived while the process was busy past the first-byte timeout is answered, not reset', async () => {
    // The server has the connection (its first-byte timer runs) and the client has sent a whole
    // request; then the process is busy for three timeouts. When it is free again the expired timer
    // fires before the waiting bytes are read: the socket must not count as silent.
    const accepted = new Promise((r) => t.app.server.once('connection', r));
    const c = await rawConnection(port);
    await accepted;
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const busyUntil = Date.now() + 3 * 300;
    while (Date.now() < busyUntil) { /* the event loop is held, as a busy process holds it */ }
    assert.equal(await c.closed, true);
    assert.match(c.text(), /^HTTP\/1\.1 200/, `the request was answered, not reset: ${JSON.stringify(c.text().slice(0, 300))}`);
  });

  describe('wrong user codes on the device page are throttled (RFC 8628 section 5.1)', () => {
    const WRONG = ['BCDF-GHJK', 'BCDF-GHJL', 'BCDF-GHJM', 'BCDF-GHJN', 'BCDF-GHJP', 'BCDF-GHJQ', 'BCDF-GHJR', 'BCDF-GHJS'];
    async function userCode(): Promise<string> {
      const res = await t.app.inject({ method: 'POST', url: '/oauth/device/code', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: '' });
      return res.json().user_code;
    }
    // The delays are seconds of the clock: it stands still during these tests (moved only by
    // offsetMs), so a slow machine cannot outwait a delay between two requests.
    const running = clock.nowMs;
    before(() => {
      const frozen = Date.now();
      clock.nowMs = function () { return frozen + this.offsetMs; };
    });
    after(() => {
      clock.nowMs = running;
      clock.offsetMs = 0;
    });
    async function signedInBrowser(): Promise<Browser> {
      const browser = new Browser(t);
      await browser.signIn(await t.user('device'));
      return browser;
    }

    test('past the free wrong codes of a session, every code is 429 with retry-after, the right one included, until the delay passes', async () => {
      clock.offsetMs += 2 * 3600_000; // counters of earlier tests have reset
      const right = await userCode();
      const browser = await signedInBrowser();
      for (const wrong of WRONG.slice(0, USER_CODE_FREE_FAILURES.session)) {
        assert.equal((await browser.get(`/device?user_code=${wrong}`)).status, 404);
      }
      const refused = await browser.get(`/device?user_code=${WRONG[6]}`);
      assert.equal(refused.status, 429, refused.html.slice(0, 300));
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      assert.match(refused.html, /Too many wrong codes/);
      const rightRefused = await browser.get(`/device?user_code=${encodeURIComponent(right)}`);
      assert.equal(rightRefused.status, 429, 'the right code is refused while the delay runs');
      const approve = await browser.post('/device/approve', { user_code: right, csrf: csrfOf(rightRefused.html) });
      assert.equal(approve.status, 429, 'approving is refused too');
      assert.equal((await t.services.db.selectFrom('device_codes').select('status').where('user_code', '=', right.replace('-', '')).executeTakeFirstOrThrow()).status, 'pending');
      clock.offsetMs += (Number(rightRefused.headers['retry-after']) + 1) * 1000;
      const shown = await browser.get(`/device?user_code=${encodeURIComponent(right)}`);
      assert.equal(shown.status, 200, 'after the delay the right code opens its page');
      // Another session from the same address is not delayed by this one's failures.
      assert.equal((await (await signedInBrowser()).get(`/device?user_code=${WRONG[7]}`)).status, 404);
    });

    test('past the free wrong codes of an address, a fresh session from it is throttled too; right codes give their attempt back', async () => {
      clock.offsetMs += 2 * 3600_000;
      const right = await userCode();
      let wrongSent = 0;
      while (wrongSent < USER_CODE_FREE_FAILURES.address) {
        const browser = await signedInBrowser();
        // Under each session's own free count; a right code between guesses clears nothing.
        for (const wrong of WRONG.slice(0, Math.min(USER_CODE_FREE_FAILURES.session - 1, USER_CODE_FREE_FAILURES.address - wrongSent))) {
          assert.equal((await browser.get(`/device?user_code=${wrong}`)).status, 404);
          wrongSent++;
        }
        if (wrongSent < USER_CODE_FREE_FAILURES.address) assert.equal((await browser.get(`/device?user_code=${encodeURIComponent(right)}`)).status, 200);
      }
      const fresh = await signedInBrowser();
      const refused = await fresh.get(`/device?user_code=${encodeURIComponent(right)}`);
      assert.equal(refused.status, 429, refused.html.slice(0, 300));
      assert.ok(Number(refused.headers['retry-after']) >= 1);
    });
  });
});
