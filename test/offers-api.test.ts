// Offers through HTTP (API.md 8.7): create (201, Location, ETag, the link, idempotent replay,
// exactly one of package_id / package_version_id, field_values against the version's schema, bad
// bodies change nothing), list with filters and signed cursors, get, patch with if-match until a
// draft uses the offer, archive and restore (audited), roles and tenancy, the public :resolve, and
// the computed status (expired by the clock, redeemed by uses). The use counters the orders module
// calls are exercised on the real database.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { countOrder, findOfferById, returnOfferUse, takeOfferUse } from '../src/modules/offers/offers.repo.js';
import { mergeFieldValues } from '../src/modules/offers/offer-values.js';
import { createOfferService } from '../src/modules/offers/offers.service.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

const SCHEMA = {
  type: 'object',
  properties: {
    replicas: { type: 'integer', minimum: 1, maximum: 10, default: 1 },
    greeting: { type: 'string', maxLength: 50 },
    plan: { type: 'string', enum: ['small', 'large'] },
    extra: { type: 'object' },
  },
  required: ['greeting', 'plan'],
  additionalProperties: false,
};
const PRICING = { currency: 'eur', unit_amount: 4900, interval: 'month' };
const RESOLVED_KEYS = [
  'offer_id', 'short_hash', 'title', 'package', 'pricing', 'commercial_mode', 'compute_mode', 'seller', 'customer_display_name', 'notes',
  'input_schema', 'expires_at', 'restricted', 'redeemable',
].sort();

describe('offers API', () => {
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let stranger: TestUser;
  let ws: string;
  let strangerWs: string;
  let pkgId: string;
  let versionId: string;
  const as = (user: TestUser, method: string, url: string, opts: { body?: unknown; headers?: Record<string, string>; context?: string } = {}) =>
    t.request(method, url, { token: user.token, headers: { 'svc-context': opts.context ?? ws, ...opts.headers }, ...(opts.body !== undefined ? { body: opts.body } : {}) });
  const body = (extra: Record<string, unknown> = {}) => ({ package_id: pkgId, title: 'Hello, hosted', pricing: PRICING, ...extra });
  async function offer(extra: Record<string, unknown> = {}) {
    const res = await as(owner, 'POST', '/v1/offers', { body: body(extra) });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  const count = async () => (await as(owner, 'GET', '/v1/offers?limit=100')).body.data.length as number;
  const actions = async (id: string) => (await as(owner, 'GET', `/v1/audit_events?resource_id=${id}`)).body.data.map((e: { action: string }) => e.action).sort();

  before(async () => {
    t = await startTestApp({ SVC_ROLE: 'api' });
    owner = await t.user('owner');
    member = await t.user('member');
    stranger = await t.user('stranger');
    ws = (await t.workspace(owner, 'ACME')).id;
    await t.addMember(owner, ws, member, 'member');
    strangerWs = (await t.workspace(stranger, 'Other')).id;
    pkgId = (await as(owner, 'POST', '/v1/packages', { body: { name: 'hello' } })).body.id;
    const v = await as(owner, 'POST', `/v1/packages/${pkgId}/versions`, { body: { semver: '1.0.0', input_schema: SCHEMA, manifest: { routes: [{ route_key: 'web' }] } } });
    assert.equal(v.status, 201, v.text);
    versionId = v.body.id;
    assert.equal((await as(owner, 'POST', `/v1/packages/${pkgId}/versions`, { body: { semver: '1.1.0', input_schema: SCHEMA, manifest: { routes: [{ route_key: 'web' }] } } })).status, 201);
  });
  afterEach(() => {
    clock.offsetMs = 0;
  });
  after(() => t.close());

  test('an admin makes an offer: 201 with Location, ETag, the link, defaults, and an audit event; a replay answers the same offer', async () => {
    const res = await as(owner, 'POST', '/v1/offers', {
      body: body({ field_values: { greeting: { value: 'Hi ACME', locked: true }, replicas: { value: 2, locked: false } }, allowed_emails: ['A@Example.com', 'a@example.com', 'b@example.com'], customer: { display_name: 'Globex' } }),
      headers: { 'idempotency-key': 'offer-1' },
    });
    assert.equal(res.status, 201, res.text);
    const o = res.body;
    assert.match(o.id, /^ofr_[0-9a-z]{26}$/);
    assert.equal(res.headers.location, `/v1/offers/${o.id}`);
    assert.equal(res.headers.etag, `"${o.etag}"`);
    assert.match(o.short_hash, /^[0-9A-Za-z]{8}$/);
    assert.equal(o.url, `http://svc.test/i/${o.short_hash}`);
    assert.equal(o.html_url, `http://svc.test/offers/${o.id}`);
    assert.deepEqual(
      { ws: o.workspace_id, pkg: o.package_id, pkv: o.package_version_id, mode: o.commercial_mode, compute: o.compute, max: o.max_uses, ttl: o.order_ttl_minutes, status: o.status, uses: o.uses, orders: o.orders_count },
      { ws, pkg: pkgId, pkv: null, mode: 'paid', compute: { mode: 'platform' }, max: 1, ttl: 120, status: 'active', uses: 0, orders: 0 },
    );
    assert.deepEqual(o.allowed_emails, ['a@example.com', 'b@example.com']);
    assert.deepEqual(o.customer, { display_name: 'Globex' });
    assert.equal(o.created_by, owner.id);
    const before = await count();
    const replay = await as(owner, 'POST', '/v1/offers', {
      body: body({ field_values: { greeting: { value: 'Hi ACME', locked: true }, replicas: { value: 2, locked: false } }, allowed_emails: ['A@Example.com', 'a@example.com', 'b@example.com'], customer: { display_name: 'Globex' } }),
      headers: { 'idempotency-key': 'offer-1' },
    });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body.id, o.id);
    assert.equal(replay.headers.location, `/v1/offers/${o.id}`);
    assert.equal(await count(), before);
    const reused = await as(owner, 'POST', '/v1/offers', { body: body({ title: 'other' }), headers: { 'idempotency-key': 'offer-1' } });
    assert.equal(reused.status, 422);
    assert.deepEqual(await actions(o.id), ['offer.create']);
  });

  test('an offer of one version: package_version_id kept, its package filled in', async () => {
    const o = await offer({ package_id: undefined, package_version_id: versionId, field_values: { plan: { value: 'small', locked: true } } });
    assert.equal(o.package_version_id, versionId);
    assert.equal(o.package_id, pkgId);
  });

  test('bad bodies are 400 (or 422) and change nothing', async () => {
    const before = await count();
    const otherPkg = (await as(stranger, 'POST', '/v1/packages', { body: { name: 'theirs' }, context: strangerWs })).body.id;
    const bare = (await as(owner, 'POST', '/v1/packages', { body: { name: 'unreleased' } })).body.id;
    const cases: [Record<string, unknown>, number, string?, string?][] = [
      [{ package_version_id: versionId }, 400, undefined, 'body.package_version_id'],
      [{ package_id: undefined }, 400, undefined, 'body.package_id'],
      [{ package_id: otherPkg }, 400, 'PACKAGE_NOT_FOUND', 'body.package_id'],
      [{ package_id: 'pkg_nope' }, 400, 'PACKAGE_NOT_FOUND'],
      [{ package_id: undefined, package_version_id: 'pkv_01kaxq3m7y0c9v8t6r5p4n3m2k' }, 400, 'VERSION_NOT_FOUND', 'body.package_version_id'],
      [{ package_id: bare }, 422, 'VERSION_NOT_FOUND'],
      [{ field_values: { replicas: { value: 50, locked: false } } }, 400, 'VALUES_INVALID', 'body.field_values.replicas'],
      [{ field_values: { nope: { value: 1, locked: true } } }, 400, 'VALUES_INVALID', 'body.field_values.nope'],
      [{ field_values: { plan: { value: 'huge', locked: true } } }, 400, 'VALUES_INVALID', 'body.field_values.plan'],
      [{ field_values: { extra: { value: { $secret: 'sec_01kaxq3m7y0c9v8t6r5p4n3m2k' }, locked: true } } }, 400, 'SECRET_REF_NOT_ALLOWED', 'body.field_values.extra'],
      [{ field_values: { extra: { value: { blob: 'x'.repeat(17_000) }, locked: true } } }, 400, 'VALUES_TOO_LARGE', 'body.field_values.extra'],
      [{ field_values: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, { value: 1, locked: false }])) }, 400],
      [{ field_values: { greeting: { value: 'x' } } }, 400],
      [{ expires_at: clock.now() - 1 }, 400, undefined, 'body.expires_at'],
      [{ allowed_emails: [] }, 400],
      [{ allowed_emails: ['not an email'] }, 400],
      [{ max_uses: 0 }, 400],
      [{ order_ttl_minutes: 1441 }, 400],
      [{ pricing: { ...PRICING, currency: 'gbp' } }, 400],
      [{ title: '' }, 400],
      [{ notes: 'n'.repeat(501) }, 400],
      [{ surprise: true }, 400],
    ];
    for (const [extra, status, reason, field] of cases) {
      const res = await as(owner, 'POST', '/v1/offers', { body: body(extra) });
      assert.equal(res.status, status, `${JSON.stringify(extra).slice(0, 120)}: ${res.text.slice(0, 300)}`);
      if (reason) assert.equal(res.body.error.reason, reason, res.text.slice(0, 300));
      if (field) assert.ok(res.body.error.field_violations?.some((v: { field: string }) => v.field === field), res.text.slice(0, 300));
    }
    // A value nested past the depth bound is refused before anything walks it further.
    let deep: unknown = 1;
    for (let i = 0; i < 80; i++) deep = { d: deep };
    const res = await as(owner, 'POST', '/v1/offers', { body: body({ field_values: { extra: { value: deep, locked: false } } }) });
    assert.equal(res.status, 400, res.text.slice(0, 300));
    assert.equal(await count(), before);
  });

  test('the keys a customer fills in may be left out; present ones must match', async () => {
    const o = await offer({ field_values: { greeting: { value: 'Hey', locked: false } } });
    assert.deepEqual(o.field_values, { greeting: { value: 'Hey', locked: false } });
  });

  test('list: newest first, filters, and cursors bound to the filters', async () => {
    const pkg2 = (await as(owner, 'POST', '/v1/packages', { body: { name: 'second' } })).body.id;
    assert.equal((await as(owner, 'POST', `/v1/packages/${pkg2}/versions`, { body: { semver: '0.1.0', input_schema: { type: 'object' }, manifest: { routes: [{ route_key: 'web' }] } } })).status, 201);
    const made = [await offer({ package_id: pkg2 }), await offer({ package_id: pkg2 }), await offer({ package_id: pkg2 })];
    const first = await as(member, 'GET', `/v1/offers?package_id=${pkg2}&limit=2`);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.data.map((o: { id: string }) => o.id), [made[2].id, made[1].id]);
    assert.equal(first.body.has_more, true);
    const second = await as(member, 'GET', `/v1/offers?package_id=${pkg2}&limit=2&cursor=${first.body.next_cursor}`);
    assert.deepEqual(second.body.data.map((o: { id: string }) => o.id), [made[0].id]);
    assert.equal(second.body.has_more, false);
    assert.equal(second.body.next_cursor, null);
    const otherFilter = await as(member, 'GET', `/v1/offers?limit=2&cursor=${first.body.next_cursor}`);
    assert.equal(otherFilter.status, 400);
    assert.equal(otherFilter.body.error.reason, 'INVALID_CURSOR');
    assert.equal((await as(member, 'GET', '/v1/offers?status=gone')).status, 400);
    assert.equal((await as(member, 'GET', '/v1/offers?limit=101')).status, 400);
    const archived = await as(owner, 'DELETE', `/v1/offers/${made[1].id}`, { headers: { 'if-match': made[1].etag } });
    assert.equal(archived.status, 200, archived.text);
    const byStatus = async (status: string) => (await as(member, 'GET', `/v1/offers?package_id=${pkg2}&status=${status}`)).body.data.map((o: { id: string }) => o.id);
    assert.deepEqual(await byStatus('archived'), [made[1].id]);
    assert.deepEqual(await byStatus('active'), [made[2].id, made[0].id]);
    assert.ok(await takeOfferUse(t.services.db, made[0].id, clock.now()));
    assert.deepEqual(await byStatus('redeemed'), [made[0].id]);
    assert.deepEqual(await byStatus('active'), [made[2].id]);
    assert.deepEqual(await byStatus('expired'), []);
  });

  test('get: any member; another tenant and a wrong prefix are 404', async () => {
    const o = await offer();
    const read = await as(member, 'GET', `/v1/offers/${o.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.headers.etag, `"${o.etag}"`);
    assert.deepEqual(read.body, o);
    assert.equal((await as(stranger, 'GET', `/v1/offers/${o.id}`, { context: strangerWs })).status, 404);
    assert.equal((await as(stranger, 'PATCH', `/v1/offers/${o.id}`, { context: strangerWs, body: { title: 'x' }, headers: { 'if-match': o.etag } })).status, 404);
    assert.equal((await as(stranger, 'DELETE', `/v1/offers/${o.id}`, { context: strangerWs, headers: { 'if-match': o.etag } })).status, 404);
    assert.equal((await as(stranger, 'GET', '/v1/offers', { context: strangerWs })).body.data.length, 0);
    assert.equal((await as(owner, 'GET', '/v1/offers/pkg_01kaxq3m7y0c9v8t6r5p4n3m2k')).status, 404);
    assert.equal((await as(stranger, 'GET', `/v1/offers/${o.id}`)).status, 403, 'a svc-context the caller is not a member of');
  });

  test('a member reads but may not write', async () => {
    const o = await offer();
    assert.equal((await as(member, 'POST', '/v1/offers', { body: body() })).status, 403);
    assert.equal((await as(member, 'PATCH', `/v1/offers/${o.id}`, { body: { title: 'x' }, headers: { 'if-match': o.etag } })).status, 403);
    assert.equal((await as(member, 'DELETE', `/v1/offers/${o.id}`, { headers: { 'if-match': o.etag } })).status, 403);
    assert.equal((await as(member, 'POST', `/v1/offers/${o.id}:undelete`, { headers: { 'if-match': o.etag } })).status, 403);
    assert.equal((await as(member, 'GET', `/v1/offers/${o.id}`)).body.etag, o.etag, 'nothing changed');
  });

  test('patch: if-match required and checked; values checked; refused once a draft used the offer', async () => {
    const o = await offer({ max_uses: 2, order_ttl_minutes: 30 });
    const missing = await as(owner, 'PATCH', `/v1/offers/${o.id}`, { body: { title: 'New' } });
    assert.equal(missing.status, 400, missing.text);
    const changed = await as(owner, 'PATCH', `/v1/offers/${o.id}`, {
      body: { title: 'New', pricing: { currency: 'usd', unit_amount: 0, interval: 'one_time' }, notes: 'see you', allowed_emails: ['X@Y.test'], customer: { display_name: 'G', external_id: 'crm-1' } },
      headers: { 'if-match': `"${o.etag}"` },
    });
    assert.equal(changed.status, 200, changed.text);
    assert.notEqual(changed.body.etag, o.etag);
    assert.equal(changed.body.order_ttl_minutes, 30, 'members left out keep their values');
    assert.equal(changed.headers.etag, `"${changed.body.etag}"`);
    assert.deepEqual([changed.body.title, changed.body.pricing.unit_amount, changed.body.notes, changed.body.allowed_emails, changed.body.customer], ['New', 0, 'see you', ['x@y.test'], { display_name: 'G', external_id: 'crm-1' }]);
    const stale = await as(owner, 'PATCH', `/v1/offers/${o.id}`, { body: { title: 'Stale' }, headers: { 'if-match': o.etag } });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.metadata.etag, changed.body.etag);
    for (const bad of [{ field_values: { replicas: { value: 0, locked: true } } }, { expires_at: 5 }, {}, { package_id: pkgId }]) {
      const res = await as(owner, 'PATCH', `/v1/offers/${o.id}`, { body: bad, headers: { 'if-match': changed.body.etag } });
      assert.equal(res.status, 400, `${JSON.stringify(bad)}: ${res.text}`);
    }
    const cleared = await as(owner, 'PATCH', `/v1/offers/${o.id}`, { body: { notes: null, customer: null, allowed_emails: null, max_uses: null }, headers: { 'if-match': '*' } });
    assert.equal(cleared.status, 200, cleared.text);
    assert.deepEqual([cleared.body.notes, cleared.body.customer, cleared.body.allowed_emails, cleared.body.max_uses], [null, null, null, null]);
    assert.ok(await takeOfferUse(t.services.db, o.id, clock.now()));
    const current = (await as(owner, 'GET', `/v1/offers/${o.id}`)).body;
    assert.equal(current.uses, 1);
    assert.notEqual(current.etag, cleared.body.etag, 'a use taken is a write');
    const inUse = await as(owner, 'PATCH', `/v1/offers/${o.id}`, { body: { title: 'Too late' }, headers: { 'if-match': current.etag } });
    assert.equal(inUse.status, 422, inUse.text);
    assert.equal(inUse.body.error.reason, 'OFFER_IN_USE');
    // giving the use back does not make the offer changeable again: a draft claimed it once
    assert.ok(await returnOfferUse(t.services.db, o.id));
    const back = (await as(owner, 'GET', `/v1/offers/${o.id}`)).body;
    assert.equal(back.uses, 0);
    assert.equal((await as(owner, 'PATCH', `/v1/offers/${o.id}`, { body: { title: 'Still no' }, headers: { 'if-match': back.etag } })).body.error.reason, 'OFFER_IN_USE');
    assert.deepEqual(await actions(o.id), ['offer.create', 'offer.update', 'offer.update']);
  });

  test('the use counters: a use is taken only while one is free and the offer live; returned never below 0; orders counted', async () => {
    const db = t.services.db;
    const o = await offer({ max_uses: 2 });
    const now = clock.now();
    assert.deepEqual([await takeOfferUse(db, o.id, now), await takeOfferUse(db, o.id, now), await takeOfferUse(db, o.id, now)], [true, true, false]);
    let row = (await findOfferById(db, o.id))!;
    assert.deepEqual([row.uses_held, row.drafts_count], [2, 2]);
    assert.equal((await as(owner, 'GET', `/v1/offers/${o.id}`)).body.status, 'redeemed');
    await countOrder(db, o.id);
    assert.ok(await returnOfferUse(db, o.id));
    assert.ok(await returnOfferUse(db, o.id));
    assert.equal(await returnOfferUse(db, o.id), false);
    row = (await findOfferById(db, o.id))!;
    assert.deepEqual([row.uses_held, row.orders_count], [0, 1]);
    const later = await offer({ expires_at: now + 60, max_uses: null });
    assert.ok(await takeOfferUse(db, later.id, now));
    assert.equal(await takeOfferUse(db, later.id, now + 60), false, 'expired');
    const archived = await as(owner, 'DELETE', `/v1/offers/${later.id}`, { headers: { 'if-match': '*' } });
    assert.equal(archived.status, 200);
    assert.equal(await takeOfferUse(db, later.id, now), false, 'archived');
    assert.equal(await takeOfferUse(db, 'ofr_01kaxq3m7y0c9v8t6r5p4n3m2k', now), false, 'unknown');
  });

  test('concurrent claims take exactly max_uses uses', async () => {
    const o = await offer({ max_uses: 5 });
    const db = t.services.db;
    const taken = await Promise.all(Array.from({ length: 20 }, () => db.transaction().execute((tx) => takeOfferUse(tx, o.id, clock.now()))));
    assert.equal(taken.filter(Boolean).length, 5);
    const row = (await findOfferById(db, o.id))!;
    assert.deepEqual([row.uses_held, row.drafts_count], [5, 5]);
  });

  test('archive (200, archived) and restore, audited; an archived offer cannot be changed or resolved', async () => {
    const o = await offer();
    assert.equal((await as(owner, 'DELETE', `/v1/offers/${o.id}`)).status, 400, 'if-match required');
    assert.equal((await as(owner, 'DELETE', `/v1/offers/${o.id}`, { headers: { 'if-match': '999' } })).status, 409);
    const archived = await as(owner, 'DELETE', `/v1/offers/${o.id}`, { headers: { 'if-match': o.etag } });
    assert.equal(archived.status, 200, archived.text);
    assert.equal(archived.body.status, 'archived');
    assert.ok(archived.body.archived_at > 0);
    assert.equal(archived.headers.etag, `"${archived.body.etag}"`);
    const again = await as(owner, 'DELETE', `/v1/offers/${o.id}`, { headers: { 'if-match': archived.body.etag } });
    assert.equal(again.status, 200);
    assert.equal(again.body.etag, archived.body.etag, 'archiving twice changes nothing');
    const patched = await as(owner, 'PATCH', `/v1/offers/${o.id}`, { body: { title: 'x' }, headers: { 'if-match': archived.body.etag } });
    assert.equal(patched.status, 422);
    assert.equal(patched.body.error.reason, 'OFFER_ARCHIVED');
    assert.equal((await t.request('GET', `/v1/offers:resolve?short_hash=${o.short_hash}`)).status, 404);
    const restored = await as(owner, 'POST', `/v1/offers/${o.id}:undelete`, { headers: { 'if-match': archived.body.etag } });
    assert.equal(restored.status, 200, restored.text);
    assert.equal(restored.body.status, 'active');
    assert.equal(restored.body.archived_at, null);
    assert.equal((await as(owner, 'POST', `/v1/offers/${o.id}%3Aundelete`, { headers: { 'if-match': restored.body.etag } })).status, 200, 'the colon percent-encoded');
    assert.equal((await t.request('GET', `/v1/offers:resolve?short_hash=${o.short_hash}`)).status, 200);
    assert.deepEqual(await actions(o.id), ['offer.create', 'offer.delete', 'offer.undelete']);
  });

  test('archiving calls offerWithdrawn in its own transaction: it sees the archive, and its failure undoes it', async () => {
    const o = await offer();
    const seen: (number | null)[] = [];
    let fail = false;
    const offers = createOfferService({
      db: t.services.db, cursors: t.services.cursors, publicUrl: 'http://svc.test',
      offerWithdrawn: async (tx, offerId) => {
        seen.push((await findOfferById(tx, offerId))!.archived_at);
        if (fail) throw new Error('drafts could not be ended');
      },
    });
    const scope = { workspaceId: ws, role: 'owner' as const, actorId: owner.id };
    fail = true;
    await assert.rejects(offers.setOfferArchived(scope, o.id, null, true), /drafts could not be ended/);
    assert.equal((await findOfferById(t.services.db, o.id))!.archived_at, null, 'rolled back');
    assert.deepEqual(await actions(o.id), ['offer.create']);
    fail = false;
    const archived = await offers.setOfferArchived(scope, o.id, null, true);
    assert.equal(archived.status, 'archived');
    assert.equal(seen.length, 2);
    assert.ok(seen.every((at) => at !== null));
    await offers.setOfferArchived(scope, o.id, null, false);
    assert.equal(seen.length, 2, 'restoring withdraws nothing');
  });

  test('resolve: no credential, only what a customer may see, locked keys out of the schema', async () => {
    const o = await offer({
      field_values: { plan: { value: 'large', locked: true }, replicas: { value: 3, locked: false } },
      allowed_emails: ['vip@example.com'], internal_note: 'discount for Globex', notes: 'Welcome', customer: { display_name: 'Globex', external_id: 'crm-9' },
    });
    for (const url of [`/v1/offers:resolve?short_hash=${o.short_hash}`, `/v1/offers%3Aresolve?short_hash=${o.short_hash}`, `/v1/offers%3aresolve?short_hash=${o.short_hash}`]) {
      const res = await t.request('GET', url);
      assert.equal(res.status, 200, `${url}: ${res.text}`);
      assert.deepEqual(Object.keys(res.body).sort(), RESOLVED_KEYS);
    }
    const r = (await t.request('GET', `/v1/offers:resolve?short_hash=${o.short_hash}`)).body;
    assert.deepEqual(
      { id: r.offer_id, title: r.title, pkg: r.package, seller: r.seller, who: r.customer_display_name, notes: r.notes, restricted: r.restricted, redeemable: r.redeemable },
      { id: o.id, title: 'Hello, hosted', pkg: { name: 'hello', version: '1.1.0' }, seller: { workspace_name: 'ACME' }, who: 'Globex', notes: 'Welcome', restricted: true, redeemable: true },
    );
    assert.deepEqual(Object.keys(r.input_schema.properties).sort(), ['extra', 'greeting', 'replicas']);
    assert.deepEqual(r.input_schema.required, ['greeting']);
    assert.equal(r.input_schema.properties.replicas.default, 3, 'an unlocked pre-fill is the default');
    const text = JSON.stringify(r);
    for (const hidden of ['discount', 'vip@', 'crm-9', 'large', 'uses', 'internal_note', 'allowed_emails']) assert.ok(!text.includes(hidden), hidden);
    const pinned = await offer({ package_id: undefined, package_version_id: versionId });
    assert.equal((await t.request('GET', `/v1/offers:resolve?short_hash=${pinned.short_hash}`)).body.package.version, '1.0.0');
    assert.ok(await takeOfferUse(t.services.db, pinned.id, clock.now()));
    assert.equal((await t.request('GET', `/v1/offers:resolve?short_hash=${pinned.short_hash}`)).body.redeemable, false, 'redeemed: still shown, not redeemable');
    const unknown = await t.request('GET', '/v1/offers:resolve?short_hash=ZZZZZZZZ');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'NOT_FOUND');
    assert.equal((await t.request('GET', '/v1/offers:resolve?short_hash=short')).status, 400);
    assert.equal((await t.request('GET', '/v1/offers:resolve')).status, 400);
  });

  test('computed status: expired by the clock (resolve 404, list filter), archived over expired', async () => {
    const o = await offer({ expires_at: clock.now() + 3600 });
    assert.equal((await as(owner, 'GET', `/v1/offers/${o.id}`)).body.status, 'active');
    clock.offsetMs += 3601 * 1000;
    const read = (await as(owner, 'GET', `/v1/offers/${o.id}`)).body;
    assert.equal(read.status, 'expired');
    assert.ok((await as(owner, 'GET', '/v1/offers?status=expired')).body.data.some((x: { id: string }) => x.id === o.id));
    assert.equal((await t.request('GET', `/v1/offers:resolve?short_hash=${o.short_hash}`)).status, 404);
    const extended = await as(owner, 'PATCH', `/v1/offers/${o.id}`, { body: { expires_at: clock.now() + 60 }, headers: { 'if-match': read.etag } });
    assert.equal(extended.status, 200, extended.text);
    assert.equal(extended.body.status, 'active');
    clock.offsetMs += 61 * 1000;
    const archived = await as(owner, 'DELETE', `/v1/offers/${o.id}`, { headers: { 'if-match': extended.body.etag } });
    assert.equal(archived.body.status, 'archived');
  });

  test('mergeFieldValues: pre-fills, the customer over them, locked ones fixed, the whole schema required', async () => {
    const version = (await t.services.db.selectFrom('package_versions').select(['id', 'input_schema']).where('id', '=', versionId).executeTakeFirst())!;
    const offerValues = { plan: { value: 'large', locked: true }, replicas: { value: 3, locked: false } };
    assert.deepEqual(mergeFieldValues(version, offerValues, { greeting: 'hi' }), { plan: 'large', replicas: 3, greeting: 'hi' });
    assert.deepEqual(mergeFieldValues(version, offerValues, { greeting: 'hi', replicas: 5, plan: 'large' }), { plan: 'large', replicas: 5, greeting: 'hi' });
    assert.deepEqual(mergeFieldValues(version, { plan: { value: 'small', locked: true } }, { greeting: 'hi' }), { plan: 'small', greeting: 'hi', replicas: 1 }, 'defaults applied');
    const reasonOf = (f: () => unknown) => {
      try {
        f();
        return 'accepted';
      } catch (err) {
        const { reason, fieldViolations } = (err as { options: { reason?: string; fieldViolations?: { field: string }[] } }).options;
        return `${reason}:${fieldViolations?.[0]?.field}`;
      }
    };
    assert.equal(reasonOf(() => mergeFieldValues(version, offerValues, { greeting: 'hi', plan: 'small' })), 'VALUE_LOCKED:body.field_values.plan');
    assert.equal(reasonOf(() => mergeFieldValues(version, offerValues, {})), 'VALUES_INVALID:body.field_values.greeting');
    assert.equal(reasonOf(() => mergeFieldValues(version, offerValues, { greeting: 'hi', replicas: 11 }, 'body.configuration')), 'VALUES_INVALID:body.configuration.replicas');
  });
});
