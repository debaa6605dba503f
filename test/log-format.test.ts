// SVC_LOG_FORMAT (docs/observability.md): `pretty` makes `svc serve` write pino-pretty's lines for
// a person at a terminal, with the same redaction as the JSON log (a token in a query string is
// `[redacted]`, never shown); an unknown format stops the process before it starts, naming the
// setting. The default JSON format is what every other process test reads (test/processes.ts).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, DIALECT, freePort, type TestDatabase } from './harness.js';
import { dbEnv, runSvc, spawnSvc } from './processes.js';

const QUERY_TOKEN = 'sk_svc_prettyformattoken0123456789';

describe(`SVC_LOG_FORMAT (${DIALECT})`, () => {
  let db: TestDatabase;

  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await db?.drop();
  });

  test('pretty: a line a person reads (time, level, message, fields below), redacted as the JSON log is', { timeout: 120_000 }, async () => {
    const env = dbEnv(db, { SVC_LOG_FORMAT: 'pretty', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', SVC_PREVIEW_PORT: String(await freePort()) });
    const child = spawnSvc(['serve'], env);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const exited = once(child, 'exit');
    try {
      const waitFor = async (pattern: RegExp): Promise<RegExpExecArray> => {
        for (let i = 0; i < 1200; i++) {
          const m = pattern.exec(out);
          if (m) return m;
          if (child.exitCode !== null) break;
          await sleep(50);
        }
        assert.fail(`no ${pattern} in the output:\n${out}\nstderr:\n${err}`);
      };
      const listening = await waitFor(/^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3})\] INFO: svc listening on (http:\/\/127\.0\.0\.1:\d+) /m);
      const url = listening[2]!;
      // Fields follow on lines of their own, indented; no line is a JSON record.
      assert.match(out, /^\s+database: "(sqlite|postgres)"$/m);
      for (const line of out.split('\n')) assert.ok(!line.startsWith('{'), `a JSON line in the pretty log: ${line}`);
      const res = await fetch(`${url}/v1/workspaces?access_token=${QUERY_TOKEN}`);
      assert.equal(res.status, 401);
      await waitFor(/INFO: request completed/);
      await waitFor(/"url": "\/v1\/workspaces\?access_token=\[redacted\]"/);
      assert.ok(!out.includes(QUERY_TOKEN), 'the token in the query string reached the log');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    assert.equal(child.exitCode, 0, err);
    assert.match(out, /INFO: stopped/);
  });

  test('an unknown format stops svc serve before it starts, naming the setting', async () => {
    const r = await runSvc(['serve'], dbEnv(db, { SVC_LOG_FORMAT: 'xml', PORT: '0' }), 60_000);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /SVC_LOG_FORMAT must be json or pretty, got "xml"/);
  });
});
