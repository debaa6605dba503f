// `svc whoami` (issue 21) against svc serve: logged out, a session with and without a workspace, an
// API token, a workspace that cannot be read, a server that cannot be reached. (The rest of the
// client as a gh user expects it is in cli-help.test.ts, which needs no server.)
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, freePort, type TestDatabase } from './harness.js';
import { dbEnv, runSvc, startSvc, type Finished, type RunningSvc } from './processes.js';

describe('svc whoami against svc serve', () => {
  const TOKEN = 'Whoami0Owner0Token0For0Cli0Tests'; // 32 characters of [A-Za-z0-9]
  let db: TestDatabase;
  let server: RunningSvc;
  let config: string;
  const cli = (args: string[], env: Record<string, string> = {}, input?: string): Promise<Finished> =>
    runSvc(args, { XDG_CONFIG_HOME: config, SVC_API_URL: server.url, ...env }, 60_000, input);
  before(async () => {
    db = await createTestDatabase();
    config = mkdtempSync(join(tmpdir(), 'svc-whoami-'));
    server = await startSvc(dbEnv(db, { SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: TOKEN }));
  });
  after(async () => {
    await server?.stop();
    await db?.drop();
    rmSync(config, { recursive: true, force: true });
  });

  test('logged out: exit 3 and how to log in; a session: the user, the workspace by name and id, the token kind', async () => {
    const out = await cli(['whoami']);
    assert.equal(out.code, 3);
    assert.match(out.stdout, /Not logged in\n.*svc login/);
    assert.equal((await cli(['login', '--with-token'], {}, TOKEN)).code, 0);
    const none = await cli(['whoami']);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, `${server.url}\n  ✓ Logged in as owner@example.test\n  - Workspace: none selected (svc workspaces use ws_...)\n  - Token: session, stored in ${join(config, 'svc/config.json')}\n`);

    const ws = await fetch(`${server.url}/v1/workspaces`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Acme' }) });
    const wsId = ((await ws.json()) as { id: string }).id;
    assert.equal((await cli(['workspaces', 'use', wsId])).code, 0);
    const used = await cli(['whoami']);
    assert.match(used.stdout, new RegExp(`- Workspace: Acme \\(${wsId}\\)\n`));
    const asJson = JSON.parse((await cli(['whoami', '--json'])).stdout);
    assert.equal(asJson.user, 'owner@example.test');
    assert.deepEqual(asJson.workspace, { id: wsId, name: 'Acme' });
    assert.equal(asJson.token_kind, 'session');
    assert.deepEqual(JSON.parse((await cli(['auth', 'status', '--json'])).stdout), asJson, 'auth status is whoami');

    // An API token has no user: whoami names the token and the workspace it belongs to.
    const created = await fetch(`${server.url}/v1/api_tokens`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'svc-context': wsId, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ci' }) });
    const apiToken = ((await created.json()) as { token: string }).token;
    const viaToken = await cli(['whoami'], { SVC_TOKEN: apiToken, SVC_CONTEXT: '' });
    assert.equal(viaToken.code, 0, viaToken.stderr);
    assert.match(viaToken.stdout, new RegExp(`Logged in with the API token ci \\(role member\\)\n  - Workspace: Acme \\(${wsId}\\)\n  - Token: api_token, from SVC_TOKEN\n`));

    const unknown = await cli(['whoami', '--json'], { SVC_TOKEN: 'Unknown0Token0Of0Nobody000000000' });
    assert.equal(unknown.code, 3);
    assert.equal(JSON.parse(unknown.stdout).logged_in, false);
    assert.match(JSON.parse(unknown.stdout).error, /^UNAUTHENTICATED/);
  });

  test('a workspace that cannot be read is shown as the problem, not as being logged out', async () => {
    const r = await cli(['whoami'], { SVC_CONTEXT: 'ws_00000000000000000000000000' });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /- Workspace: ws_0{26}\n  - ! workspace ws_0{26}: (NOT_FOUND|PERMISSION_DENIED)/);
  });

  test('the closed port: not reachable is exit 6 with the address', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const r = await cli(['whoami'], { SVC_API_URL: closed, SVC_TOKEN: TOKEN });
    assert.equal(r.code, 6);
    assert.match(r.stdout, /Not logged in: cannot reach/);
  });
});
