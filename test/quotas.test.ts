// Plans and quotas (API.md 8.2, spec endpoint 17): the catalog; every quota with its usage, per
// workspace and user-wide, one entry per metric; enforcement where each counted resource is created
// (clusters, machines, installs, workspaces owned, operations running per cluster, snippet runs per
// day), race-free under concurrent creates; deletions never refused by a quota.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { assertNamed } from './notification-wording.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { InstallFixtures, type Caller } from './installs-fixtures.js';
import { plansFile } from './plans-fixtures.js';

type Entry = { metric: string; type: string; limit: number; usage: number; remaining: number; resets_at?: number; cluster_id?: string; tier?: string };
const byMetric = (body: { data: Entry[] }) => Object.fromEntries(body.data.map((e) => [e.metric, e]));

function assertQuotaExceeded(res: { status: number; body: any; text: string }, metric: string, limit: number) {
  assert.equal(res.status, 429, res.text);
  assert.equal(res.body.error.code, 'RESOURCE_EXHAUSTED');
  assert.equal(res.body.error.reason, 'QUOTA_EXCEEDED');
  assert.equal(res.body.error.metadata.metric, metric);
  assert.equal(res.body.error.metadata.limit, String(limit));
  assert.match(res.body.error.metadata.usage, /^[0-9]+$/);
}

describe('plans and GET /v1/quotas', () => {
  let t: TestApp;
  let f: InstallFixtures;
  let owner: TestUser;
  let member: TestUser;
  let A: Caller;
  let tokenA: string;

  before(async () => {
    t = await startTestApp();
    f = new InstallFixtures(t);
    owner = await t.user('owner');
    member = await t.user('member');
    A = { user: owner, ws: (await t.workspace(owner, 'Quota A')).id };
    await t.addMember(owner, A.ws, member, 'member');
    tokenA = (await t.apiToken(owner, A.ws, { role: 'member' })).token;
  });
  after(() => t.close());

  test('GET /v1/plans lists the built-in catalog, lowest first, to any credential', async () => {
    for (const token of [owner.token, tokenA]) {
      const res = await t.request('GET', '/v1/plans', { token });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.data.map((p: { tier: string }) => p.tier), ['free', 'pro', 'enterprise']);
      assert.equal(res.body.has_more, false);
      assert.equal(res.body.next_cursor, null);
      const free = res.body.data[0];
      assert.equal(free.display_name, 'Free');
      assert.deepEqual(free.limits, {
        'workspaces/owned': 10, 'compute/clusters': 3, 'compute/machines': 9, 'installs/installs': 10,
        'secrets/secrets': 50, 'snippets/runs': 1000, 'agents/turns': 200, 'agents/cost_cents': 500, 'operations/running': 10,
      });
    }
    assert.equal((await t.request('GET', '/v1/plans')).status, 401);
  });

  test('a workspace view: one entry per metric, usage following what exists; workspaces/owned only for a user', async () => {
    const asOwner = await t.request('GET', '/v1/quotas', f.opts(A));
    assert.equal(asOwner.status, 200, asOwner.text);
    assert.deepEqual(asOwner.body.data.map((e: Entry) => e.metric),
      ['workspaces/owned', 'compute/clusters', 'compute/machines', 'installs/installs', 'secrets/secrets', 'snippets/runs', 'agents/turns', 'agents/cost_cents']);
    assert.equal(asOwner.body.has_more, false);
    const q = byMetric(asOwner.body);
    assert.deepEqual(q['compute/clusters'], { metric: 'compute/clusters', type: 'allocation', display_name: 'Clusters', unit: 'count', limit: 3, usage: 0, remaining: 3, tier: 'free' });
    assert.deepEqual({ usage: q['workspaces/owned']!.usage, limit: q['workspaces/owned']!.limit }, { usage: 1, limit: 10 });
    assert.equal(q['snippets/runs']!.type, 'rate');
    assert.equal(q['snippets/runs']!.resets_at! % 86_400, 0, 'rate windows end at midnight UTC');
    assert.ok(q['snippets/runs']!.resets_at! > clock.now());
    // An API token (no user): the workspace's figures without workspaces/owned.
    const asToken = await t.request('GET', '/v1/quotas', { token: tokenA });
    assert.equal(asToken.status, 200);
    assert.deepEqual(asToken.body.data.map((e: Entry) => e.metric), ['compute/clusters', 'compute/machines', 'installs/installs', 'secrets/secrets', 'snippets/runs', 'agents/turns', 'agents/cost_cents']);

    const cluster = await f.cluster(A);
    const pkg = (await f.packageWithVersion(A)).pkgId;
    await f.healthyInstall(A, pkg, cluster);
    assert.equal(byMetric((await t.request('GET', '/v1/quotas', { token: tokenA })).body)['compute/machines']!.usage, 0, 'a cluster\'s own nodes are not machines');
    assert.equal((await f.joinMachine(A, cluster)).status, 201);
    const now = byMetric((await t.request('GET', `/v1/quotas?cluster_id=${cluster}`, { token: tokenA })).body);
    assert.equal(now['compute/clusters']!.usage, 1);
    assert.equal(now['compute/machines']!.usage, 1, 'the machine that joined');
    assert.equal(now['installs/installs']!.usage, 1);
    assert.deepEqual(now['operations/running'], {
      metric: 'operations/running', type: 'concurrency', display_name: 'Running operations per cluster', unit: 'count',
      limit: 10, usage: 0, remaining: 10, cluster_id: cluster, tier: 'free',
    });
    // A member reads them too.
    assert.equal((await t.request('GET', '/v1/quotas', { token: member.token, headers: { 'svc-context': A.ws } })).status, 200);
  });

  test('workspaces/owned is the person\'s limit: the best plan among the workspaces they own sets it, and the entry names that plan', async () => {
    const someone = await t.user('someone');
    const free = { user: someone, ws: (await t.workspace(someone, 'Free one')).id };
    const paid = { user: someone, ws: (await t.workspace(someone, 'Paid one')).id };
    const limits = Object.fromEntries((await t.request('GET', '/v1/plans', { token: someone.token })).body.data.map((p: any) => [p.tier, p.limits]));
    const owned = async (c: Caller) => byMetric((await t.request('GET', '/v1/quotas', f.opts(c))).body)['workspaces/owned']!;
    assert.deepEqual([(await owned(free)).limit, (await owned(free)).tier], [limits.free['workspaces/owned'], 'free']);
    await t.services.subscriptions.setPlan(paid.ws, 'pro');
    // Seen from the free workspace: the pro plan's figure, and the entry says it is the pro plan's, not this workspace's.
    const fromFree = await owned(free);
    assert.deepEqual([fromFree.usage, fromFree.limit, fromFree.tier], [2, limits.pro['workspaces/owned'], 'pro']);
    const clusters = byMetric((await t.request('GET', '/v1/quotas', f.opts(free))).body)['compute/clusters']!;
    assert.deepEqual([clusters.limit, clusters.tier], [limits.free['compute/clusters'], 'free'], 'workspace metrics keep the workspace\'s plan');
    // The user-wide view agrees.
    const wide = byMetric((await t.request('GET', '/v1/quotas', { token: someone.token })).body)['workspaces/owned']!;
    assert.deepEqual([wide.limit, wide.tier], [fromFree.limit, 'pro']);
  });

  test('cluster_id: another tenant\'s cluster, an absent one or a malformed id is 404; unknown query fields 400', async () => {
    const other = await t.user('other');
    const B: Caller = { user: other, ws: (await t.workspace(other, 'Quota B')).id };
    const theirs = await f.cluster(B);
    for (const id of [theirs, 'clu_01aaaaaaaaaaaaaaaaaaaaaaaa', 'ws_01aaaaaaaaaaaaaaaaaaaaaaaa', 'nope']) {
      for (const opts of [f.opts(A), { token: tokenA }, { token: owner.token }]) {
        const res = await t.request('GET', `/v1/quotas?cluster_id=${id}`, opts);
        assert.equal(res.status, 404, `${id}: ${res.text}`);
      }
    }
    assert.equal((await t.request('GET', '/v1/quotas?cluster=x', { token: tokenA })).status, 400);
    assert.equal((await t.request('GET', `/v1/quotas?cluster_id=${'c'.repeat(55)}`, { token: tokenA })).status, 400);
    // svc-context of a workspace the caller does not belong to: 403.
    assert.equal((await t.request('GET', '/v1/quotas', { token: owner.token, headers: { 'svc-context': B.ws } })).status, 403);
    assert.equal((await t.request('GET', '/v1/quotas', { token: tokenA, headers: { 'svc-context': B.ws } })).status, 403);
  });

  test('a user credential without svc-context: the user-wide view over the workspaces the user owns', async () => {
    const solo = await t.user('solo');
    const one: Caller = { user: solo, ws: (await t.workspace(solo, 'Solo one')).id };
    const two: Caller = { user: solo, ws: (await t.workspace(solo, 'Solo two')).id };
    assert.equal((await f.joinMachine(one, await f.cluster(one))).status, 201);
    const c2 = await f.cluster(two);
    assert.equal((await f.joinMachine(two, c2)).status, 201);
    // A workspace solo only belongs to (as a member) does not count.
    const boss = await t.user('boss');
    const foreign: Caller = { user: boss, ws: (await t.workspace(boss, 'Not solo')).id };
    await t.addMember(boss, foreign.ws, solo, 'admin');
    await f.cluster(foreign);
    const res = await t.request('GET', '/v1/quotas', { token: solo.token });
    assert.equal(res.status, 200, res.text);
    const q = byMetric(res.body);
    assert.deepEqual(res.body.data.map((e: Entry) => e.metric),
      ['workspaces/owned', 'compute/clusters', 'compute/machines', 'installs/installs', 'secrets/secrets', 'snippets/runs', 'agents/turns', 'agents/cost_cents']);
    assert.deepEqual([q['workspaces/owned']!.usage, q['workspaces/owned']!.limit], [2, 10]);
    assert.deepEqual([q['compute/clusters']!.usage, q['compute/clusters']!.limit], [2, 6], 'limits summed over two free workspaces');
    assert.deepEqual([q['compute/machines']!.usage, q['compute/machines']!.limit], [2, 18]);
    // cluster_id in the user-wide view: any cluster of a workspace the user belongs to.
    const withCluster = byMetric((await t.request('GET', `/v1/quotas?cluster_id=${c2}`, { token: solo.token })).body);
    assert.equal(withCluster['operations/running']!.limit, 10);
    const foreignCluster = (await t.request('GET', '/v1/clusters', f.opts(foreign))).body.data[0].id;
    assert.equal((await t.request('GET', `/v1/quotas?cluster_id=${foreignCluster}`, { token: solo.token })).status, 200);
    assert.equal((await t.request('GET', `/v1/quotas?cluster_id=${foreignCluster}`, { token: owner.token })).status, 404);
  });

  test('every allocation metric has a usage counter', () => {
    assert.deepEqual(t.services.quotas.unregisteredMetrics(), []);
  });
});

describe('quota enforcement', () => {
  let t: TestApp;
  let f: InstallFixtures;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;

  before(async () => {
    t = await startTestApp({
      SVC_PLANS_FILE: plansFile({ 'compute/clusters': 5, 'compute/machines': 15, 'installs/installs': 2, 'workspaces/owned': 3, 'snippets/runs': 5, 'operations/running': 2 }),
    });
    f = new InstallFixtures(t);
    owner = await t.user('owner');
    admin = await t.user('admin');
    member = await t.user('member');
  });
  after(() => t.close());

  /** A workspace of a fresh owner (each may own 3 here), with the shared admin and member. */
  async function workspace(name: string): Promise<Caller> {
    owner = await t.user('owner');
    const ws = (await t.workspace(owner, name)).id;
    await t.addMember(owner, ws, admin, 'admin');
    await t.addMember(owner, ws, member, 'member');
    return { user: owner, ws };
  }

  test('20 concurrent cluster creates against a limit of 5: exactly 5 are accepted, 15 get 429 with metadata.metric', async () => {
    const A = await workspace('Race');
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      t.request('POST', '/v1/clusters', f.opts(A, { body: { name: `race-${i}` } }))));
    const accepted = results.filter((r) => r.status === 202);
    assert.equal(accepted.length, 5, results.map((r) => r.status).join(','));
    for (const r of results.filter((x) => x.status !== 202)) assertQuotaExceeded(r, 'compute/clusters', 5);
    const listed = await t.request('GET', '/v1/clusters?limit=100', f.opts(A));
    assert.equal(listed.body.data.length, 5, 'no cluster beyond the limit exists');
    for (const op of accepted) await f.waitOp(A, op.body.id);
    const q = byMetric((await t.request('GET', '/v1/quotas', f.opts(A))).body);
    assert.deepEqual([q['compute/clusters']!.usage, q['compute/clusters']!.remaining], [5, 0]);
  });

  test('reaching 80 % and 100 % notifies the owners and admins once per threshold and day, not members', async () => {
    const A = await workspace('Thresholds');
    const unread = async (u: TestUser, metric = 'compute/clusters') => (await t.request('GET', '/v1/notifications?unread=true', { token: u.token })).body.data
      .filter((n: any) => n.type === 'quota_threshold_reached' && n.workspace_id === A.ws && n.context.metric === metric);
    const mark = async (u: TestUser) => { await t.request('POST', '/v1/notifications:markAllRead', { token: u.token }); };
    for (const u of [owner, admin, member]) await mark(u);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await f.cluster(A));
    assert.deepEqual(await unread(owner), [], '3 of 5 is 60 %');
    ids.push(await f.cluster(A));
    const eighty = await unread(owner);
    assert.equal(eighty.length, 1);
    assert.deepEqual(eighty[0].context, { metric: 'compute/clusters', limit: '5', usage: '4', percent: '80', tier: 'free' });
    assert.equal(eighty[0].severity, 'warning');
    assert.equal(eighty[0].resource_type, 'workspace');
    assert.equal(eighty[0].resource_id, A.ws);
    assertNamed(eighty[0]);
    assert.ok(eighty[0].body.startsWith('Workspace Thresholds uses 4 of 5 (compute/clusters).'), eighty[0].body);
    ids.push(await f.cluster(A));
    const both = await unread(admin);
    assert.deepEqual(both.map((n: any) => n.context.percent), ['100', '80'], 'newest first');
    assert.equal(both[0].severity, 'critical');
    assert.deepEqual(await unread(member), [], 'members are not told');
    // A cluster's own nodes are not machines: nothing about compute/machines.
    assert.deepEqual(await unread(owner, 'compute/machines'), []);
    // Down and up again the same day: no second notification.
    const last = ids.pop()!;
    const etag = (await t.request('GET', `/v1/clusters/${last}`, f.opts(A))).body.etag;
    const del = await t.request('DELETE', `/v1/clusters/${last}`, f.opts(A, { headers: { 'if-match': etag } }));
    await f.waitOp(A, del.body.id);
    await f.cluster(A);
    assert.equal((await unread(owner)).length, 2);
  });

  test('installs: the third is 429; a failed create rolls back nothing but its own request', async () => {
    const A = await workspace('Installs');
    const cluster = await f.cluster(A);
    const pkg = (await f.packageWithVersion(A)).pkgId;
    await f.healthyInstall(A, pkg, cluster);
    await f.healthyInstall(A, pkg, cluster);
    const third = await f.createInstall(A, { package_id: pkg, package_version_pin: { kind: 'latest' }, cluster_id: cluster });
    assertQuotaExceeded(third, 'installs/installs', 2);
    assert.equal((await f.listAll(A)).length, 2);
    // Bad input still gets its own error first.
    const bad = await f.createInstall(A, { package_id: pkg, package_version_pin: { kind: 'pinned' }, cluster_id: cluster });
    assert.equal(bad.status, 400);
  });

  test('workspaces owned per user: the fourth is 429 for that user only; ownership elsewhere counts', async () => {
    const busy = await t.user('busy');
    for (let i = 0; i < 3; i++) await t.workspace(busy, `Busy ${i}`);
    const fourth = await t.request('POST', '/v1/workspaces', { token: busy.token, body: { name: 'Busy 4' } });
    assertQuotaExceeded(fourth, 'workspaces/owned', 3);
    const q = byMetric((await t.request('GET', '/v1/quotas', { token: busy.token })).body);
    assert.deepEqual([q['workspaces/owned']!.usage, q['workspaces/owned']!.remaining], [3, 0]);
    const mine = (await t.request('GET', '/v1/notifications', { token: busy.token })).body.data.filter((n: any) => n.type === 'quota_threshold_reached');
    assert.deepEqual(mine.map((n: any) => [n.resource_type, n.resource_id, n.context.percent]), [['user', busy.id, '100']],
      '3 of 3 crosses 80 % (at 2.4) and 100 % at once: the highest is sent');
    assertNamed(mine[0]);
    assert.ok(mine[0].body.startsWith('You use 3 of 3'), mine[0].body);
    const fresh = await t.user('fresh');
    assert.equal((await t.request('POST', '/v1/workspaces', { token: fresh.token, body: { name: 'Fresh' } })).status, 201);
  });

  test('operations/running per cluster: the third concurrent operation is 429; deletions always start', async () => {
    const A = await workspace('Running');
    // Deploys and capability reads take 2 s: operations stay running while the test looks.
    const slow = await f.cluster(A, [{ action: 'deploy', latency_ms: 2000 }, { action: 'capabilities', latency_ms: 2000 }]);
    const pkg = (await f.packageWithVersion(A)).pkgId;
    const install = () => f.createInstall(A, { package_id: pkg, package_version_pin: { kind: 'latest' }, cluster_id: slow });
    const first = await install();
    assert.equal(first.status, 202, first.text);
    const refresh = await t.request('POST', `/v1/clusters/${slow}/capabilities:refresh`, f.opts(A));
    assert.equal(refresh.status, 202, refresh.text);
    const third = await install();
    assertQuotaExceeded(third, 'operations/running', 2);
    assert.equal(third.body.error.metadata.cluster_id, slow);
    assert.equal((await f.listAll(A)).length, 1, 'the refused install was not written');
    // Removals are admitted over the quota: deleting the install (which drains its create)...
    const del = await t.request('DELETE', `/v1/installs/${first.body.owner_id}`, f.opts(A, { headers: { 'if-match': '*' } }));
    assert.equal(del.status, 202, del.text);
    const q = byMetric((await t.request('GET', `/v1/quotas?cluster_id=${slow}`, f.opts(A))).body);
    assert.deepEqual([q['operations/running']!.limit, q['operations/running']!.usage, q['operations/running']!.remaining], [2, 3, 0]);
    // ...and deleting the workspace, whose operation has no cluster and is never checked.
    const ws = (await t.request('GET', `/v1/workspaces/${A.ws}`, f.opts(A))).body;
    const gone = await t.request('DELETE', `/v1/workspaces/${A.ws}`, { token: owner.token, headers: { 'if-match': ws.etag } });
    assert.equal(gone.status, 202, gone.text);
    assert.equal((await f.waitOp(A, gone.body.id)).state, 'SUCCEEDED');
    for (const type of ['cluster.delete', 'install.delete', 'preview_hostname.release']) {
      assert.equal(t.services.workflows.get(type)?.admittedOverQuota, true, `${type} is admitted over the quota`);
    }
  });

  test('snippet runs per day: concurrent uses never pass the limit; 429 says when the window resets', async () => {
    const A = await workspace('Runs');
    const use = () => t.services.db.transaction().execute((tx) => t.services.quotas.enforce(tx, { workspaceId: A.ws }, 'snippets/runs'))
      .then(() => 'ok' as const, (err: any) => err);
    const refusedFrom = clock.now();
    const outcomes = await Promise.all(Array.from({ length: 20 }, use));
    const refusedBy = clock.now();
    assert.equal(outcomes.filter((o) => o === 'ok').length, 5);
    const refused = outcomes.find((o) => o !== 'ok');
    assert.equal(refused.code, 'RESOURCE_EXHAUSTED');
    assert.deepEqual(refused.options.metadata, { metric: 'snippets/runs', limit: '5', usage: '5' });
    const resetsIn = Number(refused.options.headers['retry-after']);
    assert.ok(resetsIn > 0 && resetsIn <= 86_400, `retry-after ${resetsIn}`);
    const q = byMetric((await t.request('GET', '/v1/quotas', f.opts(A))).body);
    assert.deepEqual([q['snippets/runs']!.usage, q['snippets/runs']!.remaining], [5, 0]);
    // retry-after counts from the refusal, whose second lies between refusedFrom and refusedBy.
    const refusedAt = q['snippets/runs']!.resets_at! - resetsIn;
    assert.ok(refusedAt >= refusedFrom && refusedAt <= refusedBy, `resets_at ${q['snippets/runs']!.resets_at} - retry-after ${resetsIn}`);
    // Adding more than one at once is all or nothing.
    clock.offsetMs = 86_400_000;
    try {
      await assert.rejects(t.services.db.transaction().execute((tx) => t.services.quotas.enforce(tx, { workspaceId: A.ws }, 'snippets/runs', 6)), /snippets\/runs/);
      assert.equal(await use(), 'ok', 'a new day starts at 0');
      assert.equal(byMetric((await t.request('GET', '/v1/quotas', f.opts(A))).body)['snippets/runs']!.usage, 1);
    } finally {
      clock.offsetMs = 0;
    }
  });
});

describe('quota enforcement: machines, and the benchmark switch', () => {
  test('compute/machines counts machines, not a cluster\'s own nodes: a join past the limit is 429', async () => {
    const t = await startTestApp({ SVC_PLANS_FILE: plansFile({ 'compute/machines': 2 }) });
    try {
      const f = new InstallFixtures(t);
      const owner = await t.user('owner');
      const A: Caller = { user: owner, ws: (await t.workspace(owner, 'Machines')).id };
      const cluster = await f.cluster(A);
      await f.cluster(A);
      assert.equal((await f.joinMachine(A, cluster)).status, 201);
      assert.equal((await f.joinMachine(A, cluster)).status, 201);
      const third = await f.joinMachine(A, cluster);
      assertQuotaExceeded(third, 'compute/machines', 2);
      const q = byMetric((await t.request('GET', '/v1/quotas', f.opts(A))).body);
      assert.deepEqual([q['compute/clusters']!.usage, q['compute/machines']!.usage], [2, 2]);
    } finally {
      await t.close();
    }
  });

  test('SVC_QUOTAS_ENFORCED=false (benchmarks only) skips the checks but still reports usage', async () => {
    const t = await startTestApp({ SVC_PLANS_FILE: plansFile({ 'compute/clusters': 1 }), SVC_QUOTAS_ENFORCED: 'false' });
    try {
      const f = new InstallFixtures(t);
      const owner = await t.user('owner');
      const A: Caller = { user: owner, ws: (await t.workspace(owner, 'Unchecked')).id };
      await f.cluster(A);
      await f.cluster(A);
      const q = byMetric((await t.request('GET', '/v1/quotas', f.opts(A))).body);
      assert.deepEqual([q['compute/clusters']!.limit, q['compute/clusters']!.usage, q['compute/clusters']!.remaining], [1, 2, 0]);
    } finally {
      await t.close();
    }
  });
});
