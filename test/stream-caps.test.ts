// One principal must not exhaust the service (issue 33 section 5): long-lived responses (the agent
// event stream, `:wait` of operations and turns) are capped per principal and per workspace, the
// principal's cap is held under a share of the connection cap, and at the connection cap an idle
// keep-alive socket is closed to admit a new connection.
import assert from 'node:assert/strict';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { healthz, startTestApp, type TestApp, type TestUser } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';

/** Opens a request and resolves with its status once the headers arrive; the response stays open until `close()`. */
function openLong(port: number, method: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: () => string; close: () => void }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const req: ClientRequest = httpRequest({ port, host: '127.0.0.1', method, path, headers, agent: false }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      res.on('error', () => undefined);
      resolve({ status: res.statusCode!, body: () => text, close: () => req.destroy() });
    });
    req.on('error', (err) => (text ? undefined : reject(err)));
    req.end();
  });
}

/** The response of a request that ends: status and parsed body. */
async function whole(port: number, method: string, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ port, host: '127.0.0.1', method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('long-lived requests are capped per principal and per workspace', () => {
  let t: TestApp;
  let port: number;
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  let ws: string;
  let otherWs: string;
  const sessions: Record<string, string> = {};
  const open: Array<{ close: () => void }> = [];

  const stream = (user: TestUser, workspace: string) =>
    openLong(port, 'GET', `/v1/agent_events:stream?session_id=${sessions[`${user.id} ${workspace}`]}`, { authorization: `Bearer ${user.token}`, 'svc-context': workspace, accept: 'text/event-stream' })
      .then((s) => {
        open.push(s);
        return s;
      });

  async function sessionOf(user: TestUser, workspace: string, agentId: string) {
    const res = await t.request('POST', '/v1/agent_sessions', { token: user.token, headers: { 'svc-context': workspace }, body: { agent_id: agentId, title: 'talk' } });
    assert.equal(res.status, 201, res.text);
    sessions[`${user.id} ${workspace}`] = res.body.id;
  }

  before(async () => {
    // SVC_MAX_CONNECTIONS 40: a principal may hold at most 40/8 = 5 long requests, under its own setting of 6.
    t = await startTestApp({ ...roomyPlans(), SVC_ROLE: 'api', SVC_MAX_CONNECTIONS: '40', SVC_LONG_REQUESTS_PER_PRINCIPAL: '6', SVC_LONG_REQUESTS_PER_WORKSPACE: '7' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
    alice = await t.user('alice');
    bob = await t.user('bob');
    carol = await t.user('carol');
    ws = (await t.workspace(alice, 'Shared')).id;
    otherWs = (await t.workspace(carol, 'Other')).id;
    await t.addMember(alice, ws, bob, 'member');
    await t.addMember(alice, ws, carol, 'member');
    const agent = await t.request('POST', '/v1/agents', { token: alice.token, headers: { 'svc-context': ws }, body: { name: 'ops', instructions: 'Help.', capabilities: ['CHAT'] } });
    assert.equal(agent.status, 201, agent.text);
    const otherAgent = await t.request('POST', '/v1/agents', { token: carol.token, headers: { 'svc-context': otherWs }, body: { name: 'ops', instructions: 'Help.', capabilities: ['CHAT'] } });
    for (const u of [alice, bob, carol]) await sessionOf(u, ws, agent.body.id);
    await sessionOf(carol, otherWs, otherAgent.body.id);
  });
  after(async () => {
    for (const s of open) s.close();
    await t.close();
  });

  const closeAll = async () => {
    for (const s of open.splice(0)) s.close();
    // The server sees the streams close asynchronously: wait until a new one is admitted again.
    for (let i = 0; i < 100; i++) {
      const probe = await stream(alice, ws);
      probe.close();
      open.pop();
      if (probe.status === 200) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail('the slots of closed streams were never given back');
  };

  test('one principal: past its share of the connection cap (40 / 8 = 5), 429 TOO_MANY_LONG_REQUESTS in the error shape, for streams and :wait alike; others are served', async () => {
    for (let i = 0; i < 5; i++) assert.equal((await stream(alice, ws)).status, 200);
    const refused = await stream(alice, ws);
    assert.equal(refused.status, 429);
    await new Promise((r) => setTimeout(r, 50));
    const body = JSON.parse(refused.body());
    assert.equal(body.error.code, 'RESOURCE_EXHAUSTED');
    assert.equal(body.error.reason, 'TOO_MANY_LONG_REQUESTS');
    assert.equal(body.error.metadata.scope, 'principal');
    assert.equal(body.error.metadata.limit, '5');
    assert.match(body.error.message, /long-lived requests/);
    // :wait takes the same slots (the answer comes before any wait: refused at once).
    const wait = await whole(port, 'POST', '/v1/operations/op_0000000000000000000000000:wait?timeout=1', { authorization: `Bearer ${alice.token}`, 'svc-context': ws });
    assert.equal(wait.status, 429);
    assert.equal(wait.body.error.reason, 'TOO_MANY_LONG_REQUESTS');
    assert.ok(Number(wait.headers['retry-after']) >= 1);
    const turnWait = await whole(port, 'POST', '/v1/agent_turns/agtt_0000000000000000000000000:wait?timeout=1', { authorization: `Bearer ${alice.token}`, 'svc-context': ws });
    assert.equal(turnWait.status, 429);
    // Short requests of the same principal are not capped.
    assert.equal((await whole(port, 'GET', '/v1/agents', { authorization: `Bearer ${alice.token}`, 'svc-context': ws })).status, 200);
    // Another principal of the workspace still gets a stream.
    assert.equal((await stream(bob, ws)).status, 200);
    await closeAll();
  });

  test('one workspace: past SVC_LONG_REQUESTS_PER_WORKSPACE for all its principals together, 429 with scope workspace; another workspace is served', async () => {
    for (let i = 0; i < 4; i++) assert.equal((await stream(alice, ws)).status, 200);
    for (let i = 0; i < 3; i++) assert.equal((await stream(bob, ws)).status, 200);
    const refused = await stream(carol, ws);
    assert.equal(refused.status, 429);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(JSON.parse(refused.body()).error.metadata.scope, 'workspace');
    assert.equal((await stream(carol, otherWs)).status, 200, 'carol in her own workspace');
    await closeAll();
  });

  test('a closed stream gives its slot back', async () => {
    const streams = [];
    for (let i = 0; i < 5; i++) streams.push(await stream(alice, ws));
    assert.equal((await stream(alice, ws)).status, 429);
    streams[0]!.close();
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      const next = await stream(alice, ws);
      status = next.status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(status, 200);
    await closeAll();
  });
});

describe('at the connection cap, an idle keep-alive socket is closed to admit a new connection', () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await startTestApp({ SVC_MAX_CONNECTIONS: '4', SVC_KEEP_ALIVE_TIMEOUT_MS: '600000' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  after(() => t.close());

  /** A raw connection that made one request and keeps the connection open. */
  async function keptAlive(): Promise<{ socket: Socket; closed: Promise<void> }> {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    await new Promise((r) => socket.once('connect', r));
    let text = '';
    socket.setEncoding('latin1');
    const answered = new Promise<void>((r) => socket.on('data', (d: string) => {
      text += d;
      if (text.includes('"ok"')) r();
    }));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await answered;
    return { socket, closed };
  }

  test('four idle keep-alive sockets fill the cap of 4; a fifth connection is served and the longest idle one is closed', async () => {
    const idle: Array<{ socket: Socket; closed: Promise<void> }> = [];
    try {
      for (let i = 0; i < 4; i++) idle.push(await keptAlive());
      const closedFirst = idle[0]!.closed.then(() => 'closed');
      assert.equal(await healthz(port), 200, 'the new connection is served');
      assert.equal(await closedFirst, 'closed', 'the socket idle longest was closed');
      for (const c of idle.slice(1)) assert.equal(c.socket.destroyed, false, 'only one was closed');
    } finally {
      for (const c of idle) c.socket.destroy();
    }
  });

  test('sockets with a request under way are not closed: at the cap with none idle, the new connection is refused', async () => {
    const busy: Socket[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => undefined);
        await new Promise((r) => socket.once('connect', r));
        // Headers with Expect: 100-continue and no body yet: the server's 100 says it has the request under way.
        const continued = new Promise((r) => {
          socket.once('data', r);
          socket.once('close', () => r('closed'));
        });
        socket.write('POST /v1/auth/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n');
        assert.match(String(await continued), /^HTTP\/1\.1 100/);
        busy.push(socket);
      }
      await assert.rejects(healthz(port), 'a connection over the cap with no idle socket is closed');
      for (const s of busy) assert.equal(s.destroyed, false, 'no socket with a request under way was closed');
    } finally {
      for (const s of busy) s.destroy();
    }
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) status = await healthz(port).catch(() => 0);
    assert.equal(status, 200, 'served again once they are gone');
  });
});
