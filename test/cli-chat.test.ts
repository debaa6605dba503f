// `svc chat` (issue 24, CLI): a real `svc chat` process against a real `svc serve` with the local
// model: a question answered with streamed text and a tool-call line; approvals answered y and n
// from stdin (the secret created, or not), and without a terminal refused unless --approve; a
// question of the agent answered; Ctrl-C cancelling the turn on the server (exit 130); the event
// stream cut once by a proxy between the client and the server, resumed with no duplicated output.
// Also the derived commands' presenters (agent-turns get, approval-requests get, agent-events).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sseMessages } from '../src/cli/sse.js';
import { createTestDatabase, type TestDatabase } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';
import { cliSession } from './cli-session.js';
import { dbEnv, runSvc, spawnSvc, startSvc, type RunningSvc } from './processes.js';

const OWNER_TOKEN = 'ChatOwner0Token0For0The0CliTests'; // 32 characters of [A-Za-z0-9]

/** A stream of `chunks` as a fetch body, for the parser. */
function bodyOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({ start(c) { for (const ch of chunks) c.enqueue(enc.encode(ch)); c.close(); } });
}

describe('the event-stream parser', () => {
  test('fields, comments, multi-line data, ids that persist, CRLF and CR split across chunks', async () => {
    const got = [];
    for await (const m of sseMessages(bodyOf([
      ': keepalive\n\n', 'id: 1\nevent: turn.queued\ndata: {"a":', '1}\n\n', 'data: x\r', '\ndata: y\r\n\r\n', 'id: 3\revent: e\rdata:z\r\r', 'data: no end',
    ]))) got.push(m);
    assert.deepEqual(got, [
      { id: '1', event: 'turn.queued', data: '{"a":1}' },
      { id: '1', event: 'message', data: 'x\ny' },
      { id: '3', event: 'e', data: 'z' },
    ]);
  });
});

/** An HTTP proxy that passes everything on, except that it cuts the first event stream after its first message.delta. */
async function cuttingProxy(target: string): Promise<{ url: string; cuts: () => number; close: () => Promise<void> }> {
  let cuts = 0;
  const server: Server = createServer((req, res) => {
    const up = httpRequest(new URL(req.url!, target), { method: req.method, headers: req.headers }, (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      const stream = req.url!.startsWith('/v1/agent_events:stream');
      upRes.on('data', (chunk: Buffer) => {
        res.write(chunk);
        if (stream && cuts === 0 && chunk.toString().includes('event: message.delta')) {
          cuts++;
          upRes.destroy();
          res.socket?.destroy();
        }
      });
      upRes.on('end', () => res.end());
      upRes.on('error', () => res.destroy());
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    cuts: () => cuts,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

describe('svc chat against svc serve (local model)', () => {
  let db: TestDatabase;
  let server: RunningSvc;
  let dir: string;
  let ws: string;
  let agentId: string;
  const { cli, ok, api } = cliSession(() => ({ url: server.url, token: OWNER_TOKEN, ws, configHome: dir }));
  const env = (url = server.url) => ({ XDG_CONFIG_HOME: dir, SVC_API_URL: url, SVC_TOKEN: OWNER_TOKEN, SVC_CONTEXT: ws });
  const turnsOf = async (sessionId: string) => (await api('GET', `/v1/agent_turns?session_id=${sessionId}&limit=100`)).body.data as { id: string; state: string; input: { content: string } }[];
  const sessionOf = (stderr: string) => /session (ags_[0-9a-z]+)/.exec(stderr)?.[1];
  const secretNamed = async (name: string) => ((await api('GET', '/v1/secrets?limit=100')).body.data as { name: string }[]).some((s) => s.name === name);
  /** What the turn's messages say, each ended by a newline: what stdout must hold exactly once. */
  const writtenText = async (turnId: string) => {
    const events = (await api('GET', `/v1/agent_events?turn_id=${turnId}&limit=100`)).body.data as { type: string; data: { content?: string } }[];
    return events.filter((e) => e.type === 'message.created' && e.data.content).map((e) => `${e.data.content}${e.data.content!.endsWith('\n') ? '' : '\n'}`).join('');
  };

  before(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'svc-cli-chat-'));
    server = await startSvc(dbEnv(db, { SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: OWNER_TOKEN, ...roomyPlans() }));
    const created = await fetch(`${server.url}/v1/workspaces`, {
      method: 'POST', headers: { authorization: `Bearer ${OWNER_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Chat' }),
    });
    ws = ((await created.json()) as { id: string }).id;
    const agent = await api('POST', '/v1/agents', { name: 'ops', instructions: 'You help the team run their workspace.', capabilities: ['CHAT'] });
    assert.equal(agent.status, 201, agent.text);
    agentId = agent.body.id;
  });
  after(async () => {
    await server?.stop();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a question: the answer streamed to stdout, the tool call as one line on stderr, exit 0; the next chat goes on in that session', async () => {
    const r = ok(await cli(['chat', 'ops', 'how many installs are there?']));
    assert.match(r.stderr, /new session ags_/);
    assert.match(r.stderr, /^▸ execute: .+ ✓ .+$/m);
    const sessionId = sessionOf(r.stderr)!;
    const [turn] = await turnsOf(sessionId);
    assert.equal(turn!.state, 'COMPLETED');
    assert.equal(r.stdout, await writtenText(turn!.id));
    assert.match(r.stdout, /install/i);

    // by id, in the same session (the newest of mine that can take a turn); --new starts another
    const again = ok(await cli(['chat', agentId, 'how many installs are there?']));
    assert.match(again.stderr, new RegExp(`session ${sessionId} \\(goes on`));
    assert.equal((await turnsOf(sessionId)).length, 2);
    const fresh = ok(await cli(['chat', 'ops', '--new', 'how many installs are there?']));
    assert.notEqual(sessionOf(fresh.stderr), sessionId);

    // --json: the events as JSON lines, exactly the stored ones of the turn
    const json = ok(await cli(['chat', 'ops', '--json', 'how many installs are there?']));
    const lines = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; turn_id: string; sequence: number });
    assert.equal(lines[0]!.type, 'turn.queued');
    assert.equal(lines.at(-1)!.type, 'turn.completed');
    const stored = (await api('GET', `/v1/agent_events?turn_id=${lines[0]!.turn_id}&limit=100`)).body.data as { sequence: number }[];
    assert.deepEqual(lines.map((l) => l.sequence), stored.map((e) => e.sequence));
  });

  test('the session that goes on is one of yours: an API token\'s own, and the owner\'s even when the token\'s is newer', async () => {
    const mine = ok(await cli(['chat', 'ops', '--new', 'how many clusters are there?']));
    const token = (await api('POST', '/v1/api_tokens', { name: 'chat', role: 'member' })).body.token as string;
    const asToken = (args: string[]) => runSvc(args, { ...env(), SVC_TOKEN: token });
    const first = ok(await asToken(['chat', 'ops', 'how many clusters are there?']));
    assert.match(first.stderr, /new session ags_/);
    const again = ok(await asToken(['chat', 'ops', 'how many clusters are there?']));
    assert.match(again.stderr, new RegExp(`session ${sessionOf(first.stderr)} \\(goes on`));
    const owner = ok(await cli(['chat', 'ops', 'how many clusters are there?']));
    assert.match(owner.stderr, new RegExp(`session ${sessionOf(mine.stderr)} \\(goes on`));
  });

  test('an approval answered y from stdin creates the secret; n rejects it and nothing is created', async () => {
    const yes = await cli(['chat', 'ops', '--new'], 'create a secret named db-password with value s3cret-Value-1\ny\n');
    assert.equal(yes.code, 0, yes.stderr);
    assert.match(yes.stderr, /approval needed/);
    assert.match(yes.stderr, /│ .*db-password/);
    assert.match(yes.stderr, /Approve\? \[y\/N\] y\n/);
    assert.ok(await secretNamed('db-password'));

    const no = await cli(['chat', 'ops', '--new'], 'create a secret named other-password with value s3cret-Value-2\nn\n');
    assert.equal(no.code, 0, no.stderr);
    assert.match(no.stderr, /Approve\? \[y\/N\] n\n/);
    assert.match(no.stderr, /✗ rejected/);
    assert.equal(await secretNamed('other-password'), false);
  });

  test('without a terminal a message\'s approval needs --approve or --reject: else exit 1, the turn waits, and --session answers it later', async () => {
    const refused = await cli(['chat', 'ops', '--new', 'create a secret named waiting-password with value s3cret-Value-3']);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /apr_\w+ waits for your approval, and stdin is not a terminal\n {2}decide: svc approval-requests resolve apr_\w+ --decision APPROVE/);
    assert.match(refused.stderr, /\n {2}or on a terminal: svc chat ops --session ags_\w+\n/);
    const [turn] = await turnsOf(sessionOf(refused.stderr)!);
    assert.equal(turn!.state, 'WAITING_FOR_PERMISSION');
    assert.equal(await secretNamed('waiting-password'), false);
    // --session comes back to it: the turn shown from its start, the open request asked (the answer piped), the change made
    const back = await cli(['chat', 'ops', '--session', sessionOf(refused.stderr)!], 'y\n');
    assert.equal(back.code, 0, back.stderr);
    assert.match(back.stderr, /agtt_\w+ waits for you:\n/);
    assert.equal(back.stderr.match(/Approve\? \[y\/N\]/g)?.length, 1);
    assert.ok(await secretNamed('waiting-password'));

    const approved = ok(await cli(['chat', 'ops', '--new', '--approve', 'create a secret named approved-password with value s3cret-Value-4']));
    assert.match(approved.stderr, /approved \(--approve\)/);
    assert.ok(await secretNamed('approved-password'));

    const both = await cli(['chat', 'ops', '--approve', '--reject', 'hello']);
    assert.equal(both.code, 2);
    const unknown = await cli(['chat', 'nobody', 'hello']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no agent named "nobody"/);
  });

  test('an approval card shows invisible characters as markers: the summary in svc chat and approval-requests get, the code escaped', async () => {
    const name = 'db\u202epass\u200bword';
    const r = await cli(['chat', 'ops', '--new', '--reject', `create a secret named \`${name}\` with value s3cret-Value-5`]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /approval needed: Create the secret db⟨U\+202E⟩pass⟨U\+200B⟩word /);
    assert.match(r.stderr, /│ .*name: "db\\u202epass\\u200bword"/, 'the code carries the name as an escaped JSON literal');
    assert.doesNotMatch(r.stderr, /[\u202e\u200b]/, 'nothing invisible reaches the terminal');
    const [approval] = (await api('GET', '/v1/approval_requests?limit=1')).body.data as { id: string; summary: string }[];
    assert.equal(approval!.summary, `Create the secret ${name}`);
    const got = ok(await cli(['approval-requests', 'get', approval!.id]));
    assert.match(got.stdout, /^summary +Create the secret db⟨U\+202E⟩pass⟨U\+200B⟩word$/m);
    assert.equal(await secretNamed(name), false);
  });

  test('a question of the agent is answered at the prompt (a choice by its number), then the deploy approved', async () => {
    for (const name of ['staging', 'production']) assert.equal((await api('POST', '/v1/clusters', { name })).status, 202);
    const pkg = await api('POST', '/v1/packages', { name: 'web' });
    assert.equal(pkg.status, 201, pkg.text);
    const version = await api('POST', `/v1/packages/${pkg.body.id}/versions`, { semver: '1.0.0', input_schema: { type: 'object' }, manifest: { routes: [] } });
    assert.equal(version.status, 201, version.text);
    const r = await cli(['chat', 'ops', '--new'], 'deploy web\n2\ny\n');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^\? Which cluster .*\n {2}1\. production\n {2}2\. staging\nanswer \(1-2 or text\): 2\n/m);
    assert.match(r.stderr, /approval needed: Deploy web .*staging/);
    const installs = (await api('GET', '/v1/installs')).body.data as { package_id: string; cluster_id: string }[];
    assert.equal(installs.length, 1);
    assert.equal(installs[0]!.package_id, pkg.body.id);
  });

  test('Ctrl-C cancels the running turn on the server and exits 130', async () => {
    const child = spawnSvc(['chat', 'ops', '--new', '[slow] how many installs are there?'], env());
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = once(child, 'exit');
    // the turn is running once the model's text starts
    for (let i = 0; i < 600 && !stdout; i++) await new Promise((r) => setTimeout(r, 100));
    assert.ok(stdout, stderr);
    child.kill('SIGINT');
    const [code] = await exited;
    assert.equal(code, 130, stderr);
    assert.match(stderr, /✗ cancelled agtt_/);
    const [turn] = await turnsOf(sessionOf(stderr)!);
    assert.equal(turn!.state, 'CANCELLED');
  });

  test('an event stream cut in the middle is resumed: every piece of text once, in order', async () => {
    const proxy = await cuttingProxy(server.url);
    try {
      const r = await runSvc(['chat', 'ops', '--new', '[slow] how many installs are there?'], env(proxy.url), 120_000);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(proxy.cuts(), 1);
      assert.match(r.stderr, /stream interrupted: .*; resuming/);
      const [turn] = await turnsOf(sessionOf(r.stderr)!);
      assert.equal(r.stdout, await writtenText(turn!.id));
    } finally {
      await proxy.close();
    }
  });

  test('the derived commands: a turn with its usage, an approval request with its code, events as lines', async () => {
    const r = ok(await cli(['chat', 'ops', '--new', 'how many installs are there?']));
    const sessionId = sessionOf(r.stderr)!;
    const [turn] = await turnsOf(sessionId);
    const got = ok(await cli(['agent-turns', 'get', turn!.id]));
    assert.match(got.stdout, /^state +COMPLETED$/m);
    assert.match(got.stdout, /^usage +[\d,]+ tokens/m);
    assert.doesNotMatch(got.stdout, /^failure/m);
    const events = ok(await cli(['agent-events', 'list', '--turn-id', turn!.id]));
    assert.match(events.stdout, /^\d+\t\S+\tturn\.queued\tagtt_\S+\thow many installs are there\?$/m);
    const streamed = ok(await cli(['agent-events', 'stream', '--turn-id', turn!.id]));
    assert.equal(streamed.stdout, events.stdout);
    const approvals = (await api('GET', '/v1/approval_requests?limit=10')).body.data as { id: string }[];
    const approval = ok(await cli(['approval-requests', 'get', approvals[0]!.id]));
    assert.match(approval.stdout, /^code\n {2}│ /m);
  });
});
