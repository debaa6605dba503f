// Preview hostnames through HTTP (spec 2.3, endpoints 1 and 6): bindFloating and its required
// idempotency-key, rebinding a track, bindPinned, every list filter, pinned eviction (on the
// install's next deploy with zero retention, and by the runtime's sweep once the retention
// passes), release, and binds refused while the install is being deleted. States that a running
// worker would move on at once (provisioning, releasing) are checked on an API-only app.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { newId } from '../src/platform/ids.js';
import { startRuntime } from '../src/jobs/runtime.js';
import { createLogger } from '../src/server.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

const SCHEMA = { type: 'object', properties: { color: { type: 'string', default: 'blue', maxLength: 20 } }, additionalProperties: false };
const MANIFEST = { routes: [{ route_key: 'web' }] };

/** An owner, a workspace, a member, an active local cluster and a published package: what installs need. */
async function workspaceWithPackage(t: TestApp, clusterBody: Record<string, unknown> = {}) {
  const owner = await t.user('owner');
  const ws = (await t.workspace(owner, 'Previews')).id;
  const as = (user: TestUser = owner, headers: Record<string, string> = {}) => ({ token: user.token, headers: { 'svc-context': ws, ...headers } });
  const cluster = await t.request('POST', '/v1/clusters', { ...as(), body: { name: 'local', ...clusterBody } });
  assert.equal(cluster.status, 202, cluster.text);
  assert.equal((await t.request('POST', `/v1/operations/${cluster.body.id}:wait`, as())).body.state, 'SUCCEEDED');
  const pkg = await t.request('POST', '/v1/packages', { ...as(), body: { name: 'web app' } });
  assert.equal(pkg.status, 201, pkg.text);
  const version = await t.request('POST', `/v1/packages/${pkg.body.id}/versions`, { ...as(), body: { semver: '1.0.0', input_schema: SCHEMA, manifest: MANIFEST } });
  assert.equal(version.status, 201, version.text);
  return { owner, ws, as, clusterId: cluster.body.metadata.cluster_id as string, packageId: pkg.body.id as string };
}

type Fixture = Awaited<ReturnType<typeof workspaceWithPackage>>;

async function waitOp(t: TestApp, f: Fixture, id: string) {
  const res = await t.request('POST', `/v1/operations/${id}:wait?timeout=30`, f.as());
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** An installed package through HTTP; returns the install id and its current render. */
async function install(t: TestApp, f: Fixture): Promise<{ id: string; renderId: string }> {
  const res = await t.request('POST', '/v1/installs', {
    ...f.as(), body: { package_id: f.packageId, package_version_pin: { kind: 'latest' }, cluster_id: f.clusterId },
  });
  assert.equal(res.status, 202, res.text);
  const op = await waitOp(t, f, res.body.id);
  assert.equal(op.state, 'SUCCEEDED', JSON.stringify(op));
  return { id: op.response.install_id, renderId: op.response.render_id };
}

/** Deploys the install again with other values (a new render); returns the new render id. */
async function redeploy(t: TestApp, f: Fixture, installId: string, color: string): Promise<string> {
  const res = await t.request('PATCH', `/v1/installs/${installId}`, { ...f.as(undefined, { 'if-match': '*' }), body: { values: { color } } });
  assert.equal(res.status, 202, res.text);
  const op = await waitOp(t, f, res.body.id);
  assert.equal(op.state, 'SUCCEEDED', JSON.stringify(op));
  return op.response.render_id;
}

function bind(t: TestApp, f: Fixture, installId: string, verb: 'bindFloating' | 'bindPinned', body: unknown, key: string | null = randomUUID()) {
  return t.request('POST', `/v1/installs/${installId}/preview_hostnames:${verb}`, { ...f.as(undefined, key ? { 'idempotency-key': key } : {}), body });
}

async function boundHostname(t: TestApp, f: Fixture, installId: string, verb: 'bindFloating' | 'bindPinned', body: unknown) {
  const res = await bind(t, f, installId, verb, body);
  assert.equal(res.status, 202, res.text);
  const op = await waitOp(t, f, res.body.id);
  assert.equal(op.state, 'SUCCEEDED', JSON.stringify(op));
  return (await t.request('GET', `/v1/installs/${installId}/preview_hostnames/${op.response.preview_hostname_id}`, f.as())).body;
}

describe('preview hostnames', () => {
  let t: TestApp;
  let f: Fixture;
  let inst: { id: string; renderId: string };
  const base = () => `/v1/installs/${inst.id}/preview_hostnames`;

  before(async () => {
    t = await startTestApp({ SVC_PREVIEW_PORT: '8089', SVC_PREVIEW_DOMAIN: 'preview.test' });
    f = await workspaceWithPackage(t);
    inst = await install(t, f);
  });
  after(() => t.close());

  test('bindFloating without idempotency-key is 400 and creates nothing', async () => {
    const res = await bind(t, f, inst.id, 'bindFloating', { track: 'main', render_id: inst.renderId }, null);
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
    assert.ok(res.body.error.field_violations.some((v: { field: string }) => v.field === 'header.idempotency-key'), res.text);
    assert.deepEqual((await t.request('GET', base(), f.as())).body.data, []);
    const ops = await t.request('GET', `/v1/operations?owner_id=${inst.id}&limit=100`, f.as());
    assert.ok(!ops.body.data.some((o: { metadata: { type: string } }) => o.metadata.type.startsWith('preview_hostname.')));
  });

  test('bindFloating validates its body exactly and its render against the install', async () => {
    const bad: [unknown, string][] = [
      [{ render_id: inst.renderId }, 'body.track'],
      [{ track: 'main' }, 'body.render_id'],
      [{ track: '', render_id: inst.renderId }, 'body.track'],
      [{ track: 'x'.repeat(101), render_id: inst.renderId }, 'body.track'],
      [{ track: 'main', render_id: 'r'.repeat(55) }, 'body.render_id'],
      [{ track: 'main', render_id: inst.renderId, protocol: 'ftp' }, 'body.protocol'],
      [{ track: 'main', render_id: inst.renderId, routing_mode: 'direct' }, 'body.routing_mode'],
      [{ track: 'main', render_id: inst.renderId, extra: 1 }, 'body.extra'],
      // Not a render of this install.
      [{ track: 'main', render_id: newId('render') }, 'body.render_id'],
      [{ track: 'main', render_id: 'nonsense' }, 'body.render_id'],
    ];
    for (const [body, field] of bad) {
      const res = await bind(t, f, inst.id, 'bindFloating', body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.ok(res.body.error.field_violations?.some((v: { field: string }) => v.field === field), `${field}: ${res.text}`);
    }
    for (const id of [newId('install'), 'inst_nope', newId('cluster')]) {
      const res = await bind(t, f, id, 'bindFloating', { track: 'main', render_id: inst.renderId });
      assert.equal(res.status, 404, res.text);
    }
    assert.deepEqual((await t.request('GET', base(), f.as())).body.data, []);
  });

  test('bindFloating: 202 operation, the hostname active with every field of spec 2.3; the same key replays it', async () => {
    const key = randomUUID();
    const body = { track: 'main', render_id: inst.renderId };
    const res = await bind(t, f, inst.id, 'bindFloating', body, key);
    assert.equal(res.status, 202, res.text);
    const op = res.body;
    assert.equal(op.metadata.type, 'preview_hostname.bind_floating');
    assert.equal(op.owner_type, 'install');
    assert.equal(op.owner_id, inst.id);
    assert.equal(op.metadata.cluster_id, f.clusterId);
    assert.equal(op.metadata.install_id, inst.id);
    assert.equal(op.metadata.track, 'main');
    assert.equal(op.metadata.render_id, inst.renderId);
    assert.match(op.metadata.preview_hostname_id, /^phn_[0-9a-z]{26}$/);
    assert.equal(op.metadata.hostname, `main--${inst.id.slice(5)}.preview.test`);

    const again = await bind(t, f, inst.id, 'bindFloating', body, key);
    assert.equal(again.status, 202);
    assert.equal(again.body.id, op.id);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    const reused = await bind(t, f, inst.id, 'bindFloating', { ...body, protocol: 'grpc' }, key);
    assert.equal(reused.status, 422);
    assert.equal(reused.body.error.reason, 'IDEMPOTENCY_KEY_REUSED');

    const done = await waitOp(t, f, op.id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    assert.deepEqual(done.response, {
      type: 'preview_hostname.bind_floating', cluster_id: f.clusterId, install_id: inst.id,
      preview_hostname_id: op.metadata.preview_hostname_id, hostname: op.metadata.hostname,
    });
    const got = await t.request('GET', `${base()}/${op.metadata.preview_hostname_id}`, f.as());
    assert.equal(got.status, 200, got.text);
    const h = got.body;
    assert.deepEqual(Object.keys(h).sort(), [
      'binding', 'created_at', 'etag', 'hostname', 'id', 'install_id', 'last_seen_at', 'pending_operation_id', 'pending_render_id',
      'state', 'updated_at', 'url', 'workspace_id',
    ]);
    assert.equal(h.id, op.metadata.preview_hostname_id);
    assert.equal(h.workspace_id, f.ws);
    assert.equal(h.install_id, inst.id);
    assert.equal(h.hostname, op.metadata.hostname);
    assert.equal(h.url, `http://${h.hostname}:8089`);
    assert.equal(h.state, 'active');
    assert.deepEqual(h.binding, { kind: 'floating', track: 'main', render_id: inst.renderId, protocol: 'http', routing_mode: 'through_dispatcher' });
    assert.equal(h.pending_render_id, null);
    assert.equal(h.pending_operation_id, null);
    assert.equal(h.last_seen_at, h.created_at, 'never served yet');
    for (const k of ['last_seen_at', 'created_at', 'updated_at']) assert.ok(Number.isInteger(h[k]) && h[k] > 0, k);
    assert.equal(got.headers.etag, `"${h.etag}"`);
  });

  test('binding a track again moves the same hostname to the new render; the latest request wins', async () => {
    const first = await boundHostname(t, f, inst.id, 'bindFloating', { track: 'Feature/Login', render_id: inst.renderId, protocol: 'websocket' });
    assert.match(first.hostname, new RegExp(`^feature-login-[0-9a-f]{6}--${inst.id.slice(5)}\\.preview\\.test$`));
    assert.equal(first.binding.protocol, 'websocket');
    const r2 = await redeploy(t, f, inst.id, 'green');
    assert.notEqual(r2, inst.renderId);

    const moved = await boundHostname(t, f, inst.id, 'bindFloating', { track: 'Feature/Login', render_id: r2, routing_mode: 'bypass_dispatcher' });
    assert.equal(moved.id, first.id);
    assert.equal(moved.hostname, first.hostname);
    assert.equal(moved.state, 'active');
    assert.deepEqual(moved.binding, { kind: 'floating', track: 'Feature/Login', render_id: r2, protocol: 'http', routing_mode: 'bypass_dispatcher' });
    assert.notEqual(moved.etag, first.etag);

    // Three binds in a row without waiting: whatever order their operations end in, the last asked wins.
    const ids: string[] = [];
    for (const render of [inst.renderId, r2, inst.renderId]) {
      const res = await bind(t, f, inst.id, 'bindFloating', { track: 'Feature/Login', render_id: render });
      assert.equal(res.status, 202, res.text);
      assert.equal(res.body.metadata.preview_hostname_id, first.id);
      ids.push(res.body.id);
    }
    for (const id of ids) assert.equal((await waitOp(t, f, id)).state, 'SUCCEEDED');
    const final = (await t.request('GET', `${base()}/${first.id}`, f.as())).body;
    assert.equal(final.binding.render_id, inst.renderId);
    assert.equal(final.state, 'active');
    assert.equal(final.pending_operation_id, null);
    const floating = await t.request('GET', `${base()}?binding_kind=floating&track=${encodeURIComponent('Feature/Login')}`, f.as());
    assert.equal(floating.body.data.length, 1, 'one hostname per track');
    inst.renderId = (await t.request('GET', `/v1/installs/${inst.id}`, f.as())).body.current_render_id;
  });

  test('bindPinned: a hostname of one render; the same (track, render) again is the same hostname', async () => {
    const pinned = await boundHostname(t, f, inst.id, 'bindPinned', { render_id: inst.renderId });
    assert.equal(pinned.binding.kind, 'pinned');
    assert.equal(pinned.binding.track, 'pinned');
    assert.equal(pinned.binding.render_id, inst.renderId);
    assert.equal(pinned.hostname, `pinned-${inst.renderId.slice(-12)}--${inst.id.slice(5)}.preview.test`);
    const res = await bind(t, f, inst.id, 'bindPinned', { render_id: inst.renderId }, null);
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.metadata.type, 'preview_hostname.bind_pinned');
    assert.equal(res.body.metadata.preview_hostname_id, pinned.id);
    assert.equal((await waitOp(t, f, res.body.id)).state, 'SUCCEEDED');
    const other = await boundHostname(t, f, inst.id, 'bindPinned', { render_id: inst.renderId, track: 'qa' });
    assert.notEqual(other.id, pinned.id);
    assert.equal(other.hostname, `qa-${inst.renderId.slice(-12)}--${inst.id.slice(5)}.preview.test`);
  });

  test('the list: newest first, every filter, cursors bound to the filters', async () => {
    const all = (await t.request('GET', base(), f.as())).body;
    // main, Feature/Login (floating); pinned, qa (pinned): all active.
    assert.equal(all.data.length, 4);
    assert.equal(all.has_more, false);
    assert.equal(all.next_cursor, null);
    const ids = all.data.map((h: { id: string }) => h.id);
    assert.deepEqual(ids, [...ids].sort().reverse());
    const count = async (query: string) => {
      const res = await t.request('GET', `${base()}?${query}`, f.as());
      assert.equal(res.status, 200, res.text);
      return res.body.data.map((h: { binding: { kind: string; track: string }; state: string }) => `${h.binding.kind}:${h.binding.track}:${h.state}`).sort();
    };
    assert.deepEqual(await count('binding_kind=floating'), ['floating:Feature/Login:active', 'floating:main:active']);
    assert.deepEqual(await count('binding_kind=pinned'), ['pinned:pinned:active', 'pinned:qa:active']);
    assert.deepEqual(await count('track=main'), ['floating:main:active']);
    assert.deepEqual(await count('track=qa&binding_kind=pinned'), ['pinned:qa:active']);
    assert.deepEqual(await count('track=qa&binding_kind=floating'), []);
    assert.deepEqual((await count('state=active')).length, 4);
    for (const state of ['provisioning', 'evicted', 'releasing']) assert.deepEqual(await count(`state=${state}`), []);
    for (const bad of ['binding_kind=both', 'state=gone', `track=${'t'.repeat(101)}`, 'track=', 'limit=0', 'limit=101', 'other=1']) {
      assert.equal((await t.request('GET', `${base()}?${bad}`, f.as())).status, 400, bad);
    }

    // Pages of one, bound to their filter.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { data: { id: string; binding: { kind: string } }[]; next_cursor: string | null; has_more: boolean } } =
        await t.request('GET', `${base()}?binding_kind=pinned&limit=1${cursor ? `&cursor=${cursor}` : ''}`, f.as());
      assert.equal(page.status, 200);
      assert.equal(page.body.has_more, page.body.next_cursor !== null);
      for (const h of page.body.data) {
        assert.equal(h.binding.kind, 'pinned');
        seen.push(h.id);
      }
      if (page.body.next_cursor && !cursor) {
        const swapped = await t.request('GET', `${base()}?binding_kind=floating&limit=1&cursor=${page.body.next_cursor}`, f.as());
        assert.equal(swapped.status, 400, 'a cursor reused with another filter');
        assert.equal(swapped.body.error.reason, 'INVALID_CURSOR');
        const otherTrack = await t.request('GET', `${base()}?binding_kind=pinned&track=qa&limit=1&cursor=${page.body.next_cursor}`, f.as());
        assert.equal(otherTrack.status, 400);
      }
      cursor = page.body.next_cursor;
    } while (cursor);
    assert.equal(seen.length, 2);
    assert.equal(new Set(seen).size, 2);
  });

  test('another workspace sees none of it', async () => {
    const stranger = await t.user('stranger');
    const other = (await t.workspace(stranger, 'Elsewhere')).id;
    const as = { token: stranger.token, headers: { 'svc-context': other, 'idempotency-key': randomUUID() } };
    const hostId = (await t.request('GET', base(), f.as())).body.data[0].id;
    for (const [method, url, body] of [
      ['GET', base(), undefined], ['GET', `${base()}/${hostId}`, undefined],
      ['POST', `${base()}:bindFloating`, { track: 'x', render_id: inst.renderId }], ['POST', `${base()}:bindPinned`, { render_id: inst.renderId }],
    ] as const) {
      const res = await t.request(method, url, { ...as, ...(body ? { body } : {}) });
      assert.equal(res.status, 404, `${method} ${url}: ${res.text}`);
    }
    const del = await t.request('DELETE', `${base()}/${hostId}`, { token: stranger.token, headers: { 'svc-context': other, 'if-match': '*' } });
    assert.equal(del.status, 404);
    const sameWsOtherInstall = await t.request('GET', `/v1/installs/${newId('install')}/preview_hostnames/${hostId}`, f.as());
    assert.equal(sameWsOtherInstall.status, 404);
  });

  test('DELETE: if-match required and checked; 202 release operation; then the hostname is gone', async () => {
    const h = (await t.request('GET', `${base()}?track=qa`, f.as())).body.data[0];
    const url = `${base()}/${h.id}`;
    const missing = await t.request('DELETE', url, f.as());
    assert.equal(missing.status, 400);
    assert.ok(missing.body.error.field_violations.some((v: { field: string }) => v.field === 'header.if-match'), missing.text);
    const stale = await t.request('DELETE', url, f.as(undefined, { 'if-match': '"1"' }));
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.code, 'ABORTED');
    assert.equal(stale.body.error.metadata.etag, h.etag);
    const res = await t.request('DELETE', url, f.as(undefined, { 'if-match': `"${h.etag}"` }));
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.metadata.type, 'preview_hostname.release');
    assert.equal(res.body.owner_id, inst.id);
    assert.equal(res.body.metadata.preview_hostname_id, h.id);
    const done = await waitOp(t, f, res.body.id);
    assert.equal(done.state, 'SUCCEEDED');
    assert.equal(done.response.hostname, h.hostname);
    assert.equal((await t.request('GET', url, f.as())).status, 404);
    assert.equal((await t.request('DELETE', url, f.as(undefined, { 'if-match': '*' }))).status, 404);
    assert.ok(!(await t.request('GET', base(), f.as())).body.data.some((x: { id: string }) => x.id === h.id));
  });

  test('pinned eviction by the runtime sweep once the retention has passed', async () => {
    const pinned = (await t.request('GET', `${base()}?binding_kind=pinned&track=pinned`, f.as())).body.data[0];
    assert.equal(pinned.binding.render_id, inst.renderId);
    const r3 = await redeploy(t, f, inst.id, 'red');
    // Replaced just now: still served for the retention (7 days by default).
    assert.equal((await t.request('GET', `${base()}/${pinned.id}`, f.as())).body.state, 'active');
    assert.equal(await t.runtime.sweepPreviewHostnames(), 0);
    clock.offsetMs = (t.config.preview.pinnedRetentionSeconds + 5) * 1000;
    try {
      assert.equal(await t.runtime.sweepPreviewHostnames(), 1, 'only the pinned hostname of the replaced render');
      const evicted = (await t.request('GET', `${base()}/${pinned.id}`, f.as())).body;
      assert.equal(evicted.state, 'evicted');
      assert.notEqual(evicted.etag, pinned.etag);
      assert.deepEqual((await t.request('GET', `${base()}?state=evicted`, f.as())).body.data.map((x: { id: string }) => x.id), [pinned.id]);
      // Its render is retired: binding it pinned again is refused; a floating track may still use it.
      const again = await bind(t, f, inst.id, 'bindPinned', { render_id: inst.renderId });
      assert.equal(again.status, 422, again.text);
      assert.equal(again.body.error.reason, 'RENDER_RETIRED');
      // The current render's pinned hostname is not touched.
      const current = await boundHostname(t, f, inst.id, 'bindPinned', { render_id: r3 });
      assert.equal(await t.runtime.sweepPreviewHostnames(), 0);
      assert.equal((await t.request('GET', `${base()}/${current.id}`, f.as())).body.state, 'active');
    } finally {
      clock.offsetMs = 0;
    }
  });
});

describe('pinned eviction with zero retention', () => {
  let t: TestApp;
  after(() => t.close());

  test('the install\'s next deploy evicts the pinned hostname of the render it replaces', async () => {
    t = await startTestApp({ SVC_PREVIEW_PINNED_RETENTION: '0' });
    const f = await workspaceWithPackage(t);
    const inst = await install(t, f);
    const pinned = await boundHostname(t, f, inst.id, 'bindPinned', { render_id: inst.renderId });
    const floating = await boundHostname(t, f, inst.id, 'bindFloating', { track: 'main', render_id: inst.renderId });
    assert.equal(pinned.state, 'active');
    const r2 = await redeploy(t, f, inst.id, 'green');
    const base = `/v1/installs/${inst.id}/preview_hostnames`;
    assert.equal((await t.request('GET', `${base}/${pinned.id}`, f.as())).body.state, 'evicted');
    assert.equal((await t.request('GET', `${base}/${floating.id}`, f.as())).body.state, 'active', 'floating hostnames are never evicted');
    const states = await t.request('GET', `${base}?state=evicted&binding_kind=pinned`, f.as());
    assert.deepEqual(states.body.data.map((x: { id: string }) => x.id), [pinned.id]);
    const retired = await bind(t, f, inst.id, 'bindPinned', { render_id: inst.renderId });
    assert.equal(retired.status, 422);
    assert.equal(retired.body.error.reason, 'RENDER_RETIRED');
    const fresh = await boundHostname(t, f, inst.id, 'bindPinned', { render_id: r2 });
    assert.equal(fresh.state, 'active');
    // An evicted hostname can still be released.
    const evicted = (await t.request('GET', `${base}/${pinned.id}`, f.as())).body;
    const del = await t.request('DELETE', `${base}/${pinned.id}`, f.as(undefined, { 'if-match': evicted.etag }));
    assert.equal(del.status, 202, del.text);
    assert.equal((await waitOp(t, f, del.body.id)).state, 'SUCCEEDED');
    assert.equal((await t.request('GET', `${base}/${pinned.id}`, f.as())).status, 404);
  });
});

describe('an install being deleted', () => {
  let t: TestApp;
  after(() => t.close());

  test('refuses binds (422), releases its hostnames, and takes them with it', async () => {
    t = await startTestApp();
    // Undeploying takes a while on this cluster: the deletion is still running when we bind.
    const f = await workspaceWithPackage(t, { local: { faults: [{ action: 'undeploy', latency_ms: 1500 }] } });
    const inst = await install(t, f);
    const h = await boundHostname(t, f, inst.id, 'bindFloating', { track: 'main', render_id: inst.renderId });
    const del = await t.request('DELETE', `/v1/installs/${inst.id}`, f.as(undefined, { 'if-match': '*' }));
    assert.equal(del.status, 202, del.text);
    for (const verb of ['bindFloating', 'bindPinned'] as const) {
      const res = await bind(t, f, inst.id, verb, { track: 'other', render_id: inst.renderId });
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.error.reason, 'INSTALL_DELETING');
    }
    // Released (no longer served) while the undeploy runs.
    const url = `/v1/installs/${inst.id}/preview_hostnames/${h.id}`;
    const deadline = Date.now() + 30_000;
    let state = '';
    while (Date.now() < deadline) {
      const res = await t.request('GET', url, f.as());
      state = res.status === 200 ? res.body.state : String(res.status);
      if (state !== 'active') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(state === 'releasing' || state === '404', state);
    if (state === 'releasing') {
      const again = await t.request('DELETE', url, f.as(undefined, { 'if-match': '*' }));
      assert.equal(again.status, 422, again.text);
      assert.equal(again.body.error.reason, 'INSTALL_DELETING');
    }
    assert.equal((await waitOp(t, f, del.body.id)).state, 'SUCCEEDED');
    assert.equal((await t.request('GET', url, f.as())).status, 404);
    assert.equal((await t.request('GET', `/v1/installs/${inst.id}/preview_hostnames`, f.as())).status, 404);
  });
});

describe('states a worker moves on at once, on an API-only app', () => {
  let t: TestApp;
  let as: (headers?: Record<string, string>) => { token: string; headers: Record<string, string> };
  let base: string;
  let old: string;
  let current: string;
  let undeployed: string;
  const bindF = (track: string, render: string) =>
    t.request('POST', `${base}:bindFloating`, { ...as({ 'idempotency-key': randomUUID() }), body: { track, render_id: render } });

  before(async () => {
    // No worker: operations stay RUNNING, so the states between request and operation stay visible.
    t = await startTestApp({ SVC_ROLE: 'api' });
    const owner = await t.user('owner');
    const ws = (await t.workspace(owner, 'Frozen')).id;
    as = (headers = {}) => ({ token: owner.token, headers: { 'svc-context': ws, ...headers } });
    // An install with two deployed renders and one never deployed, written as the install workflows leave them.
    const db = t.services.db;
    const now = Math.floor(Date.now() / 1000);
    const clusterId = newId('cluster');
    await db.insertInto('clusters').values({
      id: clusterId, workspace_id: ws, name: 'c', state: 'active', provider: 'local', reconciling: 0, options: '{}', kubeconfig_sealed: null,
      capabilities: null, capabilities_observed_at: null, node_count: 0, created_at: now, updated_at: now, revision: 1,
    }).execute();
    const installId = newId('install');
    [old, current, undeployed] = [newId('render'), newId('render'), newId('render')];
    await db.insertInto('installs').values({
      id: installId, workspace_id: ws, cluster_id: clusterId, package_id: newId('package'), package_version_id: newId('packageVersion'),
      pin_kind: 'latest', pin_version: null, values: '{}', state: 'healthy', reconciling: 0, current_render_id: current,
      created_at: now, updated_at: now, revision: 1,
    }).execute();
    for (const [id, replaced] of [[old, now], [current, null], [undeployed, null]] as const) {
      await db.insertInto('install_renders').values({
        id, install_id: installId, workspace_id: ws, package_version_id: 'pkv_x', semver: '1.0.0', content_hash: 'h', manifest: '{}',
        created_at: now, replaced_at: replaced,
      }).execute();
    }
    base = `/v1/installs/${installId}/preview_hostnames`;
  });
  after(() => t.close());

  test('provisioning with the pending render, the latest request pending, releasing and a DELETE that returns the running release', async () => {
    const notDeployed = await bindF('main', undeployed);
    assert.equal(notDeployed.status, 422);
    assert.equal(notDeployed.body.error.reason, 'RENDER_NOT_DEPLOYED');

    const first = await bindF('main', current);
    assert.equal(first.status, 202, first.text);
    const id = first.body.metadata.preview_hostname_id;
    let h = (await t.request('GET', `${base}/${id}`, as())).body;
    assert.equal(h.state, 'provisioning');
    assert.equal(h.binding.render_id, current);
    assert.equal(h.pending_render_id, current);
    assert.equal(h.pending_operation_id, first.body.id);
    assert.deepEqual((await t.request('GET', `${base}?state=provisioning`, as())).body.data.map((x: { id: string }) => x.id), [id]);
    assert.deepEqual((await t.request('GET', `${base}?state=active`, as())).body.data, []);

    const second = await bindF('main', old);
    assert.equal(second.status, 202);
    assert.equal(second.body.metadata.preview_hostname_id, id);
    h = (await t.request('GET', `${base}/${id}`, as())).body;
    assert.equal(h.pending_render_id, old, 'the latest request is the pending one');
    assert.equal(h.pending_operation_id, second.body.id);

    const del = await t.request('DELETE', `${base}/${id}`, as({ 'if-match': h.etag }));
    assert.equal(del.status, 202, del.text);
    h = (await t.request('GET', `${base}/${id}`, as())).body;
    assert.equal(h.state, 'releasing');
    assert.equal(h.pending_operation_id, del.body.id);
    assert.deepEqual((await t.request('GET', `${base}?state=releasing`, as())).body.data.map((x: { id: string }) => x.id), [id]);
    // While it runs, DELETE returns the same operation, whatever its if-match.
    const again = await t.request('DELETE', `${base}/${id}`, as({ 'if-match': '"12345"' }));
    assert.equal(again.status, 202);
    assert.equal(again.body.id, del.body.id);
    const rebind = await bindF('main', current);
    assert.equal(rebind.status, 422);
    assert.equal(rebind.body.error.reason, 'PREVIEW_HOSTNAME_RELEASING');
  });

  test('once a worker runs them: a cancelled first bind leaves nothing, a superseded one serves until the latest lands', async () => {
    const cancelled = await bindF('gone', current);
    assert.equal((await t.request('POST', `/v1/operations/${cancelled.body.id}:cancel`, as())).status, 202);
    // "kept": bound to current, then to old (cancelled); "moved": bound to current, then to old.
    const kept = [await bindF('kept', current), await bindF('kept', old)];
    const moved = [await bindF('moved', current), await bindF('moved', old)];
    assert.equal((await t.request('POST', `/v1/operations/${kept[1]!.body.id}:cancel`, as())).status, 202);

    const worker = await startRuntime({ ...t.services, config: { ...t.config, role: 'all' } }, createLogger(t.config));
    try {
      const ended = async (id: string) => (await t.request('POST', `/v1/operations/${id}:wait?timeout=30`, as())).body.state;
      assert.equal(await ended(cancelled.body.id), 'CANCELLED');
      assert.equal(await ended(kept[0]!.body.id), 'SUCCEEDED');
      assert.equal(await ended(kept[1]!.body.id), 'CANCELLED');
      for (const op of moved) assert.equal(await ended(op.body.id), 'SUCCEEDED');
    } finally {
      await worker.stop(2000);
    }
    assert.equal((await t.request('GET', `${base}/${cancelled.body.metadata.preview_hostname_id}`, as())).status, 404, 'never served: removed');
    const keptNow = (await t.request('GET', `${base}/${kept[0]!.body.metadata.preview_hostname_id}`, as())).body;
    assert.equal(keptNow.state, 'active');
    assert.equal(keptNow.binding.render_id, current, 'the cancelled rebind changed nothing');
    assert.equal(keptNow.pending_operation_id, null);
    const movedNow = (await t.request('GET', `${base}/${moved[0]!.body.metadata.preview_hostname_id}`, as())).body;
    assert.equal(movedNow.state, 'active');
    assert.equal(movedNow.binding.render_id, old, 'the latest request wins');
    assert.equal(movedNow.pending_operation_id, null);
  });
});
