// The account across `svc serve` processes sharing one database: concurrent creates from two
// processes never pass a quota; a downgrade and a cancel scheduled for the period end are applied
// once when two worker processes start with their clocks past it; a bad SVC_PLANS_FILE stops the
// process with exit 2 naming the problem.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { BUILT_IN_PLANS } from '../src/modules/plans/plans.js';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { createTestDatabase, DIALECT, type TestDatabase } from './harness.js';
import { plansFile } from './plans-fixtures.js';
import { dbEnv, runSvc, startSvc, svcCaller, type RunningSvc } from './processes.js';

const TOKEN = 'Account0Processes0Bootstrap0Tok0';

const call = svcCaller(TOKEN);

describe(`the account across svc processes (${DIALECT})`, () => {
  let db: TestDatabase;
  let handle: DatabaseHandle;
  let env: Record<string, string>;
  const running: RunningSvc[] = [];

  before(async () => {
    db = await createTestDatabase();
    env = dbEnv(db, {
      SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: TOKEN,
      SVC_JOB_POLL_MS: '100', SVC_PLANS_FILE: plansFile({ 'compute/clusters': 5, 'compute/machines': 15 }),
    });
    handle = openDatabase({ databaseUrl: db.databaseUrl, dataDir: db.dataDir, poolSize: 1 });
  });
  // Starts still under way when a test gives up (a slow machine) are waited for and stopped too,
  // so no server outlives the file.
  const starting: Promise<unknown>[] = [];
  after(async () => {
    await Promise.allSettled(starting);
    await Promise.all(running.map((p) => p.stop()));
    await handle?.close();
    await db?.drop();
  });

  async function start(extra: Record<string, string> = {}): Promise<RunningSvc[]> {
    const pair = [startSvc({ ...env, ...extra }), startSvc({ ...env, ...extra })];
    for (const p of pair) starting.push(p.then((svc) => { running.push(svc); }, () => { /* the test sees the error */ }));
    return Promise.all(pair);
  }
  async function stopAll(): Promise<void> {
    await Promise.all(running.splice(0).map((p) => p.stop()));
  }

  test('20 concurrent cluster creates through two processes against a limit of 5: exactly 5 accepted', { timeout: 240_000 }, async () => {
    const [a, b] = await start();
    const ws = (await call(a!.url, 'POST', '/v1/workspaces', { body: { name: 'Race' } })).body.id;
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      call(i % 2 ? b!.url : a!.url, 'POST', '/v1/clusters', { headers: { 'svc-context': ws }, body: { name: `race-${i}` } })));
    assert.equal(results.filter((r) => r.status === 202).length, 5, results.map((r) => r.status).join(','));
    for (const r of results.filter((x) => x.status !== 202)) {
      assert.equal(r.status, 429);
      assert.equal(r.body.error.reason, 'QUOTA_EXCEEDED');
      assert.equal(r.body.error.metadata.metric, 'compute/clusters');
    }
    const rows = await handle.db.selectFrom('clusters').select('id').where('workspace_id', '=', ws).execute();
    assert.equal(rows.length, 5);
    await stopAll();
  });

  test('a downgrade and a cancel due at the period end are applied once by two worker processes', { timeout: 240_000 }, async () => {
    const [a] = await start();
    const scheduled: { ws: string; kind: string; wsEtag: number; subEtag: number; periodEnd: number }[] = [];
    for (const kind of ['downgrade', 'cancel']) {
      const ws = (await call(a!.url, 'POST', '/v1/workspaces', { body: { name: `Ends ${kind}` } })).body.id;
      const act = async (verb: string, body?: unknown) => {
        const etag = (await call(a!.url, 'GET', `/v1/workspaces/${ws}/subscription`)).body.etag;
        const op = await call(a!.url, 'POST', `/v1/workspaces/${ws}/subscription:${verb}`, { headers: { 'if-match': etag }, ...(body ? { body } : {}) });
        assert.equal(op.status, 202, JSON.stringify(op.body));
        const done = await call(a!.url, 'POST', `/v1/operations/${op.body.id}:wait?timeout=30`, { headers: { 'svc-context': ws } });
        assert.equal(done.body.state, 'SUCCEEDED');
        return done.body;
      };
      // The operator raises the plan (SVC_BILLING=operator): the real command, on the service's database.
      const slug = (await call(a!.url, 'GET', `/v1/workspaces/${ws}`)).body.slug;
      const raised = await runSvc(['admin', 'workspaces', 'set-plan', slug, 'pro'], env);
      assert.equal(raised.code, 0, raised.stderr);
      assert.match(raised.stdout, new RegExp(`^${slug} \\(${ws}\\): free -> pro \\(change request scr_\\w+\\)\\n$`));
      if (kind === 'cancel') {
        const [unknownWs, unknownTier, same] = await Promise.all([
          runSvc(['admin', 'workspaces', 'set-plan', 'no-such-workspace', 'pro'], env),
          runSvc(['admin', 'workspaces', 'set-plan', ws, 'platinum'], env),
          runSvc(['admin', 'workspaces', 'set-plan', ws, 'pro'], env),
        ]);
        assert.deepEqual([unknownWs.code, unknownWs.stderr], [1, 'error: workspace no-such-workspace not found\n']);
        assert.equal(unknownTier.code, 1);
        assert.match(unknownTier.stderr, /^error: tier "platinum" is not in the plan catalog \(free, pro, enterprise\)/);
        assert.deepEqual([same.code, same.stderr], [1, 'error: the workspace is already on pro\n']);
      }
      const op = kind === 'cancel' ? await act('cancel') : await act('changeTier', { tier: 'free' });
      assert.equal(op.response.status, 'pending');
      const sub = (await call(a!.url, 'GET', `/v1/workspaces/${ws}/subscription`)).body;
      assert.equal(sub.tier, 'pro');
      const wsEtag = Number((await call(a!.url, 'GET', `/v1/workspaces/${ws}`)).body.etag);
      scheduled.push({ ws, kind, wsEtag, subEtag: Number(sub.etag), periodEnd: sub.current_period_end * 1000 });
    }
    await stopAll();

    // Two processes whose clocks are past both period ends, sweeping every 100 ms (and at start).
    const offset = Math.max(...scheduled.map((s) => s.periodEnd)) - Date.now() + 5_000;
    const [c] = await start({ SVC_TEST_CLOCK_OFFSET_MS: String(offset), SVC_ACCOUNT_SWEEP_MS: '100' });
    for (const s of scheduled) {
      let sub: any;
      for (let i = 0; i < 600; i++) {
        sub = (await call(c!.url, 'GET', `/v1/workspaces/${s.ws}/subscription`)).body;
        if (sub.tier === 'free') break;
        await sleep(50);
      }
      assert.deepEqual([sub.tier, sub.status, sub.scheduled_change], ['free', 'active', null], `${s.kind}: ${JSON.stringify(sub)}`);
    }
    // Both keep sweeping a while: nothing is applied again.
    await sleep(1000);
    for (const s of scheduled) {
      const sub = (await call(c!.url, 'GET', `/v1/workspaces/${s.ws}/subscription`)).body;
      assert.equal(Number(sub.etag), s.subEtag + 1, `${s.kind}: the subscription changed once`);
      const ws = (await call(c!.url, 'GET', `/v1/workspaces/${s.ws}`)).body;
      assert.equal(ws.plan.tier, 'free');
      assert.equal(Number(ws.etag), s.wsEtag + 1, `${s.kind}: the plan changed once`);
      const [cr] = (await call(c!.url, 'GET', `/v1/workspaces/${s.ws}/subscription/change_requests`)).body.data;
      assert.deepEqual([cr.kind, cr.status], [s.kind, 'applied']);
    }
    const notes = await handle.db.selectFrom('notifications').select(['workspace_id']).where('type', '=', 'subscription_change_applied').execute();
    assert.deepEqual(notes.map((n) => n.workspace_id).sort(), scheduled.flatMap((s) => [s.ws, s.ws]).sort(),
      'per workspace: the upgrade and the scheduled change, one notification each');
    await stopAll();
  });

  test('a bad SVC_PLANS_FILE stops svc with exit 2 and a message naming the problem', async () => {
    const write = (name: string, text: string) => {
      const file = join(db.dataDir, name);
      writeFileSync(file, text);
      return file;
    };
    const cases: [string, RegExp][] = [
      [join(db.dataDir, 'absent.json'), /SVC_PLANS_FILE cannot be read/],
      [write('broken.json', '[{"tier": "free",'), /is not valid JSON/],
      [write('nofree.json', JSON.stringify([{ tier: 'pro', display_name: 'Pro', limits: {} }])), /plans\[0\]\.limits is missing "workspaces\/owned"/],
      [write('typo.json', JSON.stringify([{ tier: 'free', display_name: 'Free', limits: { 'compute/cluster': 1 } }])), /unknown metric "compute\/cluster"/],
      [write('negative.json', JSON.stringify(BUILT_IN_PLANS.map((p) => ({ ...p, limits: { ...p.limits, 'installs/installs': -1 } })))),
        /plans\[0\]\.limits\["installs\/installs"\] must be an integer from 0 to 2147483647/],
      [write('starter.json', JSON.stringify(BUILT_IN_PLANS.filter((p) => p.tier !== 'free'))), /must define the "free" plan/],
    ];
    const results = await Promise.all(cases.map(([file]) => runSvc(['serve'], dbEnv(db, { SVC_PLANS_FILE: file }))));
    results.forEach((r, i) => {
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /^configuration error: SVC_PLANS_FILE/);
      assert.match(r.stderr, cases[i]![1]);
    });
  });
});
