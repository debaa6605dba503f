// `svc serve`'s start (issue 33): a taken port is said before any slow work, naming the setting to
// change, and nothing is written; a start logs its progress and ends with one line a person reads.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { databasesDroppedAfter } from './harness.js';
import { dbEnv, runSvc, startSvc } from './processes.js';

async function occupy(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

describe('svc serve: ports and progress', () => {
  const database = databasesDroppedAfter();

  test('PORT taken: exit 2 naming PORT, before the database is opened', async () => {
    const db = await database();
    const { server, port } = await occupy();
    try {
      const run = await runSvc(['serve'], dbEnv(db, { HOST: '127.0.0.1', PORT: String(port), SVC_PREVIEW_PORT: '0' }));
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is taken by another program: set PORT to a free port`));
      assert.doesNotMatch(run.stdout, /opening the database|svc listening/);
      // nothing was written: no SQLite file made (on PostgreSQL, no migration ran: checked by the log above)
      assert.equal(existsSync(join(db.dataDir, 'svc.db')), false);
    } finally {
      server.close();
    }
  });

  test('SVC_PREVIEW_PORT taken: exit 2 naming SVC_PREVIEW_PORT; the same port twice is refused too', async () => {
    const db = await database();
    const { server, port } = await occupy();
    try {
      const run = await runSvc(['serve'], dbEnv(db, { HOST: '127.0.0.1', PORT: '0', SVC_PREVIEW_PORT: String(port) }));
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, /set SVC_PREVIEW_PORT to a free port/);
    } finally {
      server.close();
    }
    const same = await runSvc(['serve'], dbEnv(db, { HOST: '127.0.0.1', PORT: '18765', SVC_PREVIEW_PORT: '18765' }));
    assert.equal(same.code, 2, same.stderr);
    assert.match(same.stderr, /PORT and SVC_PREVIEW_PORT are both 18765/);
  });

  test('a start logs its progress and ends with "svc listening on <url> (web app and API)"', async () => {
    const db = await database();
    const svc = await startSvc(dbEnv(db, { HOST: '127.0.0.1' }));
    try {
      const messages = svc.logs.map((l) => l.msg);
      const opening = messages.indexOf('starting: opening the database');
      const workers = messages.indexOf('starting: workers and routes');
      const listening = messages.findIndex((m) => m === `svc listening on ${svc.url} (web app and API)`);
      assert.ok(opening >= 0 && workers > opening && listening > workers, JSON.stringify(messages));
      assert.match(svc.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await svc.stop();
    }
  });
});
