// The wizard's verbs (API.md 8.7) where they must refuse: every verb in every phase it does not
// belong to answers 422 WRONG_PHASE and changes nothing; a stale etag is 409 ABORTED with the
// current etag in metadata; a missing if-match is 400; bad bodies are 400 and change nothing; the
// seller's members read drafts without field_values and may cancel, but never act as the customer;
// another tenant and another customer see nothing; :begin + :claim; EMAIL_NOT_ALLOWED,
// OFFER_NOT_REDEEMABLE, and an existing workspace where the customer is only a member.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { customer, draftToConfigure, inStatus, makeOffer, makeSeller, waitDraft, type Seller } from './commerce-fixtures.js';
import { roomyPlans } from './plans-fixtures.js';

type Draft = { id: string; status: string; etag: string; [k: string]: any };

/** Each verb of the customer, with a body that is valid wherever the verb belongs. */
const VERBS: Record<string, { path: (id: string) => string; body?: unknown; phases: string[] }> = {
  selectWorkspace: { path: (id) => `/v1/order_drafts/${id}:selectWorkspace`, body: { kind: 'new', name: 'Never made' }, phases: ['workspace'] },
  createWorkerBootstrap: { path: (id) => `/v1/order_drafts/${id}:createWorkerBootstrap`, body: {}, phases: ['compute_bootstrap'] },
  submitConfiguration: { path: (id) => `/v1/order_drafts/${id}:submitConfiguration`, body: { field_values: {} }, phases: ['configure', 'payment'] },
  checkout: { path: (id) => `/v1/order_drafts/${id}/checkout_sessions`, phases: ['payment'] },
  cancel: { path: (id) => `/v1/order_drafts/${id}:cancel`, phases: ['auth', 'workspace', 'compute', 'compute_bootstrap', 'configure', 'payment'] },
};
/** A repeated :cancel of a draft already ending answers it as it is, whatever etag the retry carries. */
const IDEMPOTENT = { verb: 'cancel', phases: ['cleaning_up', 'terminated'] };

describe('order drafts: the wizard refuses what does not belong', () => {
  let t: TestApp;
  let seller: Seller;
  let buyer: TestUser;
  let as: ReturnType<typeof customer>;
  const sellerOpts = () => ({ token: seller.user.token, headers: { 'svc-context': seller.ws } });

  before(async () => {
    t = await startTestApp(roomyPlans());
    seller = await makeSeller(t);
    buyer = await t.user('buyer');
    as = customer(t, buyer);
  });
  after(() => t.close());

  const read = async (id: string): Promise<Draft> => (await as('GET', `/v1/order_drafts/${id}`)).body;

  /** The customer's drafts in every stable phase. */
  async function draftsByPhase(): Promise<Record<string, Draft>> {
    const paid = await makeOffer(t, seller, { max_uses: null });
    const byo = await makeOffer(t, seller, { max_uses: null, compute: { mode: 'bring_your_own' } });
    const free = await makeOffer(t, seller, { max_uses: null, commercial_mode: 'non_billable_test' });
    const workspace = (await as('POST', `/v1/offers/${paid.id}/order_drafts`)).body;
    const configure = await draftToConfigure(t, buyer, paid.id);
    const inPayment = await draftToConfigure(t, buyer, paid.id);
    const payment = (await as('POST', `/v1/order_drafts/${inPayment.id}:submitConfiguration`, { etag: inPayment.etag, body: { field_values: {} } })).body;
    const bootstrap = await draftToConfigure(t, buyer, byo.id);
    assert.equal(bootstrap.status, 'compute_bootstrap', JSON.stringify(bootstrap));
    const toFinish = await draftToConfigure(t, buyer, free.id);
    await as('POST', `/v1/order_drafts/${toFinish.id}:submitConfiguration`, { etag: toFinish.etag, body: { field_values: {} } });
    const done = await waitDraft(t, buyer, toFinish.id, inStatus('done', 'terminated'));
    const toEnd = (await as('POST', `/v1/offers/${paid.id}/order_drafts`)).body;
    await as('POST', `/v1/order_drafts/${toEnd.id}:cancel`, { etag: toEnd.etag });
    const terminated = await waitDraft(t, buyer, toEnd.id, inStatus('terminated'));
    const drafts = { workspace, configure, payment, compute_bootstrap: bootstrap, done, terminated };
    for (const [phase, d] of Object.entries(drafts)) assert.equal(d.status, phase, JSON.stringify(d));
    return drafts;
  }

  test('every verb in every phase it does not belong to: 422 WRONG_PHASE, nothing changed; a stale etag: 409 with the etag', async () => {
    const drafts = await draftsByPhase();
    const workspacesBefore = (await as('GET', '/v1/workspaces')).body.data.length;
    for (const [phase, draft] of Object.entries(drafts)) {
      for (const [verb, v] of Object.entries(VERBS)) {
        const current = await read(draft.id);
        if (verb === IDEMPOTENT.verb && IDEMPOTENT.phases.includes(phase)) {
          const again = await as('POST', v.path(draft.id), { etag: String(Number(current.etag) + 7) });
          assert.equal(again.status, 200, again.text);
          assert.equal(again.body.etag, current.etag);
        } else if (v.phases.includes(phase)) {
          // Right phase, stale etag: 409 naming the current etag, and the draft unchanged.
          const stale = await as('POST', v.path(draft.id), { etag: String(Number(current.etag) + 7), ...(v.body ? { body: v.body } : {}) });
          assert.equal(stale.status, 409, `${verb} in ${phase} with a stale etag: ${stale.text}`);
          assert.equal(stale.body.error.code, 'ABORTED');
          assert.equal(stale.body.error.metadata.etag, current.etag);
        } else {
          const res = await as('POST', v.path(draft.id), { etag: current.etag, ...(v.body ? { body: v.body } : {}) });
          assert.equal(res.status, 422, `${verb} in ${phase}: ${res.text}`);
          assert.equal(res.body.error.reason, 'WRONG_PHASE');
          assert.equal(res.body.error.metadata.status, phase);
        }
        const after = await read(draft.id);
        assert.equal(after.etag, current.etag, `${verb} in ${phase} changed the draft`);
        assert.equal(after.status, phase);
        // Without if-match: 400 whatever the phase.
        const bare = await as('POST', v.path(draft.id), v.body ? { body: v.body } : {});
        assert.equal(bare.status, 400, `${verb} without if-match: ${bare.text}`);
        assert.equal(bare.body.error.code, 'INVALID_ARGUMENT');
        assert.match(JSON.stringify(bare.body.error.field_violations), /if-match/);
      }
    }
    assert.equal((await as('GET', '/v1/workspaces')).body.data.length, workspacesBefore, 'no workspace was made by a refused selectWorkspace');
  });

  test('the seller\'s members read drafts without field_values and may cancel, but never act as the customer', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null });
    const draft = await draftToConfigure(t, buyer, offer.id);
    const member = await t.user('clerk');
    await t.addMember(seller.user, seller.ws, member, 'member');
    const memberOpts = (extra: Record<string, string> = {}) => ({ token: member.token, headers: { 'svc-context': seller.ws, ...extra } });
    const noValues = (d: Record<string, unknown>) => {
      assert.equal(d.field_values, undefined, JSON.stringify(d));
      assert.equal(d.locked_keys, undefined, JSON.stringify(d));
    };
    const one = await t.request('GET', `/v1/order_drafts/${draft.id}`, memberOpts());
    assert.equal(one.status, 200, one.text);
    noValues(one.body);
    for (const url of ['/v1/order_drafts', `/v1/order_drafts?offer=${offer.id}`, `/v1/order_drafts?offer=${offer.id}&status=configure`]) {
      const list = await t.request('GET', url, memberOpts());
      assert.equal(list.status, 200, list.text);
      assert.ok(list.body.data.some((d: Draft) => d.id === draft.id), url);
      list.body.data.forEach(noValues);
    }
    // An API token of the seller's workspace: the seller's view too.
    const token = await t.apiToken(seller.user, seller.ws);
    noValues((await t.request('GET', `/v1/order_drafts/${draft.id}`, { token: token.token })).body);
    // The customer's verbs: with the seller's context (not the customer) or without it (not theirs).
    for (const [verb, v] of Object.entries(VERBS)) {
      if (verb === 'cancel') continue;
      const withContext = await t.request('POST', v.path(draft.id), { ...memberOpts({ 'if-match': draft.etag }), ...(v.body ? { body: v.body } : {}) });
      assert.ok([400, 403, 404].includes(withContext.status), `${verb} by a seller member: ${withContext.status} ${withContext.text}`);
      const asUser = await t.request('POST', v.path(draft.id), { token: member.token, headers: { 'if-match': draft.etag }, ...(v.body ? { body: v.body } : {}) });
      assert.equal(asUser.status, 404, `${verb} by a seller member without context: ${asUser.text}`);
    }
    assert.equal((await read(draft.id)).etag, draft.etag, 'nothing changed');
    // :cancel by a seller member: revoked, answered as the seller sees it.
    const cancelled = await t.request('POST', `/v1/order_drafts/${draft.id}:cancel`, memberOpts({ 'if-match': draft.etag }));
    assert.equal(cancelled.status, 200, cancelled.text);
    noValues(cancelled.body);
    const ended = await waitDraft(t, buyer, draft.id, inStatus('terminated'));
    assert.equal(ended.termination_reason, 'revoked');
    const again = await t.request('POST', `/v1/order_drafts/${draft.id}:cancel`, memberOpts({ 'if-match': '*' }));
    assert.equal(again.status, 200, 'idempotent');
    noValues(again.body);
  });

  test('another tenant and another customer see nothing of drafts and orders', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null, commercial_mode: 'non_billable_test' });
    const configure = await draftToConfigure(t, buyer, offer.id);
    await as('POST', `/v1/order_drafts/${configure.id}:submitConfiguration`, { etag: configure.etag, body: { field_values: {} } });
    const done = await waitDraft(t, buyer, configure.id, inStatus('done', 'terminated'));
    assert.equal(done.status, 'done');
    const other = await makeSeller(t, 'rival');
    const rival = { token: other.user.token, headers: { 'svc-context': other.ws } };
    const stranger = customer(t, await t.user('stranger'));
    assert.equal((await t.request('GET', `/v1/order_drafts/${done.id}`, rival)).status, 404);
    assert.equal((await t.request('GET', `/v1/orders/${done.order.id}`, rival)).status, 404);
    assert.equal((await t.request('POST', `/v1/order_drafts/${done.id}:cancel`, { ...rival, headers: { ...rival.headers, 'if-match': '*' } })).status, 404);
    assert.deepEqual((await t.request('GET', `/v1/order_drafts?offer=${offer.id}`, rival)).body.data, []);
    assert.deepEqual((await t.request('GET', '/v1/orders', rival)).body.data, []);
    assert.equal((await stranger('GET', `/v1/order_drafts/${done.id}`)).status, 404);
    assert.equal((await stranger('GET', `/v1/orders/${done.order.id}`)).status, 404);
    assert.equal((await stranger('POST', `/v1/order_drafts/${done.id}:cancel`, { etag: '*' })).status, 404);
    assert.deepEqual((await stranger('GET', '/v1/order_drafts')).body.data, []);
    assert.deepEqual((await stranger('GET', '/v1/orders')).body.data, []);
    // The customer, with a workspace of theirs as context, is not the seller: 404.
    assert.equal((await as('GET', `/v1/order_drafts/${done.id}`, { headers: { 'svc-context': done.workspace_id } })).status, 404);
    // The seller's own view of that order carries no values.
    const sellerOrder = await t.request('GET', `/v1/orders/${done.order.id}`, sellerOpts());
    assert.equal(sellerOrder.status, 200);
    assert.equal(sellerOrder.body.field_values, undefined);
  });

  test(':begin signed out, then :claim with its token (a wrong token is 404); claiming takes a use', async () => {
    const offer = await makeOffer(t, seller, { max_uses: 1 });
    const begun = await t.request('POST', '/v1/order_drafts:begin', { body: { short_hash: offer.short_hash } });
    assert.equal(begun.status, 201, begun.text);
    assert.equal(begun.body.order_draft.status, 'auth');
    assert.match(begun.body.claim_token, /^odc_/);
    assert.equal(begun.body.order_draft.field_values, undefined);
    assert.equal((await t.request('POST', '/v1/order_drafts:begin', { body: { short_hash: 'zzzzzzzz' } })).status, 404);
    const id = begun.body.order_draft.id;
    const uses = async () => (await t.request('GET', `/v1/offers/${offer.id}`, sellerOpts())).body.uses;
    assert.equal(await uses(), 0, 'a draft begun signed out holds no use');
    // Nobody reads it without the token, not even the one who will claim it.
    assert.equal((await as('GET', `/v1/order_drafts/${id}`)).status, 404);
    const wrong = await as('POST', `/v1/order_drafts/${id}:claim`, { etag: begun.body.order_draft.etag, body: { claim_token: `odc_${'x'.repeat(40)}` } });
    assert.equal(wrong.status, 404, wrong.text);
    const stale = await as('POST', `/v1/order_drafts/${id}:claim`, { etag: '99', body: { claim_token: begun.body.claim_token } });
    assert.equal(stale.status, 409, stale.text);
    assert.equal(stale.body.error.metadata.etag, begun.body.order_draft.etag);
    assert.equal((await as('POST', `/v1/order_drafts/${id}:claim`, { body: { claim_token: begun.body.claim_token } })).status, 400);
    const claimed = await as('POST', `/v1/order_drafts/${id}:claim`, { etag: begun.body.order_draft.etag, body: { claim_token: begun.body.claim_token } });
    assert.equal(claimed.status, 200, claimed.text);
    assert.equal(claimed.body.status, 'workspace');
    assert.equal(claimed.body.user_id, buyer.id);
    assert.equal(await uses(), 1);
    // The token is spent: a second claim (by anyone) is 404.
    const thief = customer(t, await t.user('thief'));
    assert.equal((await thief('POST', `/v1/order_drafts/${id}:claim`, { etag: claimed.body.etag, body: { claim_token: begun.body.claim_token } })).status, 404);
    // A second draft begun now cannot be claimed: the offer's only use is taken.
    const second = (await t.request('POST', '/v1/order_drafts:begin', { body: { short_hash: offer.short_hash } })).body;
    const full = await thief('POST', `/v1/order_drafts/${second.order_draft.id}:claim`, { etag: second.order_draft.etag, body: { claim_token: second.claim_token } });
    assert.equal(full.status, 422, full.text);
    assert.equal(full.body.error.reason, 'OFFER_NOT_REDEEMABLE');
    // A begun draft whose offer is archived ends; claiming it then is 422 WRONG_PHASE.
    const o = (await t.request('GET', `/v1/offers/${offer.id}`, sellerOpts())).body;
    assert.equal((await t.request('DELETE', `/v1/offers/${offer.id}`, { ...sellerOpts(), headers: { ...sellerOpts().headers, 'if-match': o.etag } })).status, 200);
    const ended = (await t.request('GET', `/v1/order_drafts/${second.order_draft.id}`, sellerOpts())).body;
    assert.equal(ended.status, 'terminated', JSON.stringify(ended));
    assert.equal(ended.termination_reason, 'offer_expired');
    const late = await thief('POST', `/v1/order_drafts/${second.order_draft.id}:claim`, { etag: ended.etag, body: { claim_token: second.claim_token } });
    assert.equal(late.status, 422, late.text);
    assert.equal(late.body.error.reason, 'WRONG_PHASE');
  });

  test('bad configurations are 400 and change nothing: a locked key with another value, values failing the schema', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null });
    const draft = await draftToConfigure(t, buyer, offer.id);
    const submit = (field_values: unknown) => as('POST', `/v1/order_drafts/${draft.id}:submitConfiguration`, { etag: draft.etag, body: { field_values } });
    const locked = await submit({ greeting: 'something else' });
    assert.equal(locked.status, 400, locked.text);
    assert.equal(locked.body.error.reason, 'VALUE_LOCKED');
    assert.equal(locked.body.error.field_violations[0].field, 'body.field_values.greeting');
    for (const bad of [{ replicas: 0 }, { replicas: 'two' }, { unknown_key: 1 }, { replicas: { $secret: 'x' } }]) {
      const res = await submit(bad);
      assert.equal(res.status, 400, `${JSON.stringify(bad)}: ${res.text}`);
      assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
    }
    for (const body of [{}, { field_values: 'x' }, { field_values: {}, extra: 1 }]) {
      const res = await as('POST', `/v1/order_drafts/${draft.id}:submitConfiguration`, { etag: draft.etag, body });
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
    }
    const bad = await as('POST', `/v1/order_drafts/${draft.id}:selectWorkspace`, { etag: draft.etag, body: { kind: 'elsewhere' } });
    assert.equal(bad.status, 400);
    const after = await read(draft.id);
    assert.equal(after.etag, draft.etag);
    assert.deepEqual(after.field_values, draft.field_values);
    // The same locked value is accepted.
    const same = await submit({ greeting: 'Hi from ACME', replicas: 2 });
    assert.equal(same.status, 200, same.text);
    assert.equal(same.body.status, 'payment');
  });

  test('EMAIL_NOT_ALLOWED; an archived or expired offer is OFFER_NOT_REDEEMABLE; an existing workspace where the customer is only a member is 403', async () => {
    const closed = await makeOffer(t, seller, { allowed_emails: ['someone.else@example.test'] });
    const refused = await as('POST', `/v1/offers/${closed.id}/order_drafts`);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.error.reason, 'EMAIL_NOT_ALLOWED');
    const open = await makeOffer(t, seller, { allowed_emails: [buyer.email.toUpperCase()] });
    assert.equal((await as('POST', `/v1/offers/${open.id}/order_drafts`)).status, 201, 'emails compare without case');

    const archived = await makeOffer(t, seller);
    await t.request('DELETE', `/v1/offers/${archived.id}`, { ...sellerOpts(), headers: { ...sellerOpts().headers, 'if-match': archived.etag } });
    const late = await as('POST', `/v1/offers/${archived.id}/order_drafts`);
    assert.equal(late.status, 422, late.text);
    assert.equal(late.body.error.reason, 'OFFER_NOT_REDEEMABLE');

    const { clock } = await import('../src/platform/clock.js');
    const expiring = await makeOffer(t, seller, { expires_at: clock.now() + 60 });
    clock.offsetMs = 120_000;
    try {
      const expired = await as('POST', `/v1/offers/${expiring.id}/order_drafts`);
      assert.equal(expired.status, 422, expired.text);
      assert.equal(expired.body.error.reason, 'OFFER_NOT_REDEEMABLE');
    } finally {
      clock.offsetMs = 0;
    }

    const offer = await makeOffer(t, seller, { max_uses: null });
    const draft = (await as('POST', `/v1/offers/${offer.id}/order_drafts`)).body;
    const owner = await t.user('owner');
    const theirs = await t.workspace(owner, 'Not mine');
    await t.addMember(owner, theirs.id, buyer, 'member');
    const member = await as('POST', `/v1/order_drafts/${draft.id}:selectWorkspace`, { etag: draft.etag, body: { kind: 'existing', workspace_id: theirs.id } });
    assert.equal(member.status, 403, member.text);
    assert.equal(member.body.error.reason, 'ROLE_TOO_LOW');
    const stranger = await t.workspace(owner, 'Not a member');
    const outside = await as('POST', `/v1/order_drafts/${draft.id}:selectWorkspace`, { etag: draft.etag, body: { kind: 'existing', workspace_id: stranger.id } });
    assert.equal(outside.status, 403, outside.text);
    assert.equal((await read(draft.id)).etag, draft.etag, 'nothing changed');
    // As admin there it works.
    const admin = await t.workspace(owner, 'Admin of');
    await t.addMember(owner, admin.id, buyer, 'admin');
    const ok = await as('POST', `/v1/order_drafts/${draft.id}:selectWorkspace`, { etag: draft.etag, body: { kind: 'existing', workspace_id: admin.id } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.workspace_id, admin.id);
    assert.equal(ok.body.status, 'compute');
  });
});
