// The service-driven phases of an order draft survive the crash of the process running them (API.md
// 8.7): two `svc serve` processes share one database with short leases; in each of compute, install
// and cleanup, the process holding the step the phase waits on is killed with SIGKILL. The draft's
// cluster is made slow where it matters by the local driver's fault options (latency on provision,
// deploy), so the step is held long enough to be found in `jobs.locked_by`; once the victim is dead
// the fault is lifted and the survivor resumes. Rows are counted in the database: never two
// clusters, two orders or two installs for one draft, and every draft reaches its end.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { createTestDatabase, DIALECT, type TestDatabase } from './harness.js';
import { faultOrderClusters, SCHEMA } from './commerce-fixtures.js';
import { roomyPlans } from './plans-fixtures.js';
import { dbEnv, startSvc, svcCaller, type RunningSvc } from './processes.js';

const TOKEN = 'Orders0Crash0Bootstrap0Token0000';
const seller = svcCaller(TOKEN);

describe(`order drafts across a crash (${DIALECT})`, () => {
  let db: TestDatabase;
  let handle: DatabaseHandle;
  let env: Record<string, string>;
  const processes: RunningSvc[] = [];
  let buyerToken = '';
  let sellerWs = '';
  let offerId = '';

  const live = () => processes.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
  const url = () => live()[0]!.url;
  const buyer = (method: string, path: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) => svcCaller(buyerToken)(url(), method, path, opts);

  before(async () => {
    db = await createTestDatabase();
    env = dbEnv(db, {
      SVC_BOOTSTRAP_EMAIL: 'seller@example.test', SVC_BOOTSTRAP_PASSWORD: 'seller password', SVC_BOOTSTRAP_TOKEN: TOKEN,
      SVC_JOB_LEASE_MS: '1500', SVC_JOB_POLL_MS: '100', SVC_RETRY_BACKOFF_SCALE: '0.1', ...roomyPlans(),
    });
    processes.push(await startSvc(env), await startSvc(env));
    handle = openDatabase({ databaseUrl: db.databaseUrl, dataDir: db.dataDir, poolSize: 1 });
    const base = processes[0]!.url;
    sellerWs = (await seller(base, 'POST', '/v1/workspaces', { body: { name: 'Shop' } })).body.id;
    const h = { 'svc-context': sellerWs };
    const pkg = await seller(base, 'POST', '/v1/packages', { headers: h, body: { name: 'hello' } });
    await seller(base, 'POST', `/v1/packages/${pkg.body.id}/versions`, { headers: h, body: { semver: '1.0.0', input_schema: SCHEMA, manifest: { routes: [{ route_key: 'web' }] } } });
    const offer = await seller(base, 'POST', '/v1/offers', {
      headers: h, body: { package_id: pkg.body.id, title: 'Crash-proof', pricing: { currency: 'eur', unit_amount: 0, interval: 'one_time' }, commercial_mode: 'non_billable_test', max_uses: null },
    });
    assert.equal(offer.status, 201, JSON.stringify(offer.body));
    offerId = offer.body.id;
    // The buyer signs up through the offer's link (sign-up is closed by default).
    const signUp = await fetch(`${base}/v1/users`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'buyer@example.test', password: 'buyer password', offer: offer.body.short_hash }),
    });
    assert.equal(signUp.status, 201, await signUp.text());
    const signIn = await fetch(`${base}/v1/auth/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'buyer@example.test', password: 'buyer password' }) });
    buyerToken = ((await signIn.json()) as { token: string }).token;
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await handle?.close();
    await db?.drop();
  });

  /** Waits for the draft to satisfy `done`; fails with the last state. */
  async function waitDraft(id: string, done: (d: any) => boolean, what: string): Promise<any> {
    let last: any;
    for (let i = 0; i < 1200; i++) {
      last = (await buyer('GET', `/v1/order_drafts/${id}`)).body;
      if (done(last)) return last;
      await sleep(50);
    }
    assert.fail(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
  }

  /** The operation of `type` on `ownerId` once it exists. */
  async function operationOf(ownerId: () => Promise<string | undefined>, type: string): Promise<string> {
    for (let i = 0; i < 600; i++) {
      const owner = await ownerId();
      const op = owner ? await handle.db.selectFrom('operations').select('id').where('owner_id', '=', owner).where('type', '=', type).executeTakeFirst() : undefined;
      if (op) return op.id;
      await sleep(25);
    }
    assert.fail(`no ${type} operation appeared`);
  }

  /** Kills with SIGKILL the process holding the job of `operationId` (held by an injected latency), then starts another. */
  async function killHolder(operationId: string, clusterId: string): Promise<void> {
    let holder: string | null = null;
    for (let i = 0; i < 800; i++) {
      const job = await handle.db.selectFrom('jobs').select('locked_by').where('operation_id', '=', operationId).executeTakeFirst();
      if (job?.locked_by && job.locked_by === holder) break;
      holder = job?.locked_by ?? null;
      await sleep(holder ? 300 : 25);
    }
    assert.ok(holder, `a process holds the job of ${operationId}`);
    const victim = live().find((p) => holder!.includes(`:${p.child.pid}:`));
    assert.ok(victim, `the holder ${holder} is one of ours`);
    victim.child.kill('SIGKILL');
    await victim.exited;
    // The fault lifted before the lease runs out: the survivor's attempt of the step is not slowed.
    await lift(clusterId);
    processes.push(await startSvc(env));
  }

  function lift(clusterId: string) {
    return handle.db.updateTable('clusters').set({ options: JSON.stringify({ faults: [] }) }).where('id', '=', clusterId).execute();
  }
  const clusterOfDraft = async (id: string) => (await handle.db.selectFrom('order_drafts').select('cluster_id').where('id', '=', id).executeTakeFirst())?.cluster_id ?? undefined;

  async function newDraft(): Promise<any> {
    const created = await buyer('POST', `/v1/offers/${offerId}/order_drafts`);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const picked = await buyer('POST', `/v1/order_drafts/${created.body.id}:selectWorkspace`, { headers: { 'if-match': created.body.etag }, body: { kind: 'new', name: 'Mine' } });
    assert.equal(picked.status, 200, JSON.stringify(picked.body));
    return picked.body;
  }

  /** What one draft left in the database. */
  async function counts(draft: { id: string; workspace_id: string }) {
    const count = async (table: 'clusters' | 'installs', column: 'workspace_id') =>
      (await handle.db.selectFrom(table).select('id').where(column, '=', draft.workspace_id).execute()).length;
    const ops = async (type: string) => (await handle.db.selectFrom('operations').select('id').where('owner_id', '=', draft.id).where('type', '=', type).execute()).length;
    return {
      clusters: await count('clusters', 'workspace_id'), installs: await count('installs', 'workspace_id'),
      orders: (await handle.db.selectFrom('orders').select('id').where('order_draft_id', '=', draft.id).execute()).length,
      compute: await ops('order_draft.compute'), deliver: await ops('order_draft.deliver'), cleanup: await ops('order_draft.cleanup'),
    };
  }

  async function submitAndFinish(draftId: string): Promise<any> {
    const configure = await waitDraft(draftId, (d) => d.status !== 'compute', 'configure');
    assert.equal(configure.status, 'configure', JSON.stringify(configure));
    const submitted = await buyer('POST', `/v1/order_drafts/${draftId}:submitConfiguration`, { headers: { 'if-match': configure.etag }, body: { field_values: {} } });
    assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
    return submitted.body;
  }

  test('compute: the process creating the draft\'s cluster dies; the survivor finishes it, one cluster, then the order', { timeout: 240_000 }, async () => {
    const removeFaults = await faultOrderClusters(handle.db, [{ action: 'provision', latency_ms: 60_000 }]);
    const draft = await newDraft();
    const createOp = await operationOf(() => clusterOfDraft(draft.id), 'cluster.create');
    await removeFaults();
    await killHolder(createOp, (await clusterOfDraft(draft.id))!);
    await submitAndFinish(draft.id);
    const done = await waitDraft(draft.id, (d) => d.status === 'done' || d.status === 'terminated', 'done');
    assert.equal(done.status, 'done', JSON.stringify(done));
    assert.deepEqual(await counts(done), { clusters: 1, installs: 1, orders: 1, compute: 1, deliver: 1, cleanup: 0 });
  });

  test('install: the process deploying the order\'s install dies; the survivor delivers it once', { timeout: 240_000 }, async () => {
    const removeFaults = await faultOrderClusters(handle.db, [{ action: 'deploy', latency_ms: 60_000 }]);
    const draft = await newDraft();
    await operationOf(() => clusterOfDraft(draft.id), 'cluster.create');
    await removeFaults();
    const installing = await submitAndFinish(draft.id);
    assert.equal(installing.status, 'install');
    const deployOp = await operationOf(async () => {
      const row = await handle.db.selectFrom('order_drafts').select('install_operation_id').where('id', '=', draft.id).executeTakeFirst();
      return row?.install_operation_id ? (await handle.db.selectFrom('operations').select('owner_id').where('id', '=', row.install_operation_id).executeTakeFirst())?.owner_id : undefined;
    }, 'install.create');
    await killHolder(deployOp, (await clusterOfDraft(draft.id))!);
    const done = await waitDraft(draft.id, (d) => d.status === 'done' || d.status === 'terminated', 'done');
    assert.equal(done.status, 'done', JSON.stringify(done));
    assert.deepEqual(await counts(done), { clusters: 1, installs: 1, orders: 1, compute: 1, deliver: 1, cleanup: 0 });
    const order = (await buyer('GET', `/v1/orders/${done.order.id}`)).body;
    assert.equal(order.status, 'delivered');
  });

  test('cleanup: revoked while its cluster is being created, the process creating it dies; the survivor releases it once', { timeout: 240_000 }, async () => {
    const removeFaults = await faultOrderClusters(handle.db, [{ action: 'provision', latency_ms: 60_000 }]);
    const draft = await newDraft();
    const createOp = await operationOf(() => clusterOfDraft(draft.id), 'cluster.create');
    await removeFaults();
    const current = (await buyer('GET', `/v1/order_drafts/${draft.id}`)).body;
    assert.equal(current.status, 'compute');
    const cancelled = await buyer('POST', `/v1/order_drafts/${draft.id}:cancel`, { headers: { 'if-match': current.etag } });
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal(cancelled.body.status, 'cleaning_up');
    await killHolder(createOp, (await clusterOfDraft(draft.id))!);
    const ended = await waitDraft(draft.id, (d) => d.status === 'terminated', 'terminated');
    assert.equal(ended.termination_reason, 'revoked');
    for (let i = 0; i < 600 && (await counts(ended)).clusters > 0; i++) await sleep(50);
    assert.deepEqual(await counts(ended), { clusters: 0, installs: 0, orders: 0, compute: 1, deliver: 0, cleanup: 1 });
  });
});
