// Shared steps of the commerce tests (API.md 8.7): a seller with a package and an offer, a customer,
// and the wizard driven through HTTP, waiting for the service-driven phases by reading the draft.
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../src/db/schema.js';
import { DIALECT, type TestApp, type TestUser } from './harness.js';

export const SCHEMA = {
  type: 'object',
  properties: {
    greeting: { type: 'string', maxLength: 50, default: 'hello' },
    replicas: { type: 'integer', minimum: 1, maximum: 10, default: 1 },
  },
  additionalProperties: false,
};

export interface Seller {
  user: TestUser;
  ws: string;
  pkgId: string;
  versionId: string;
}

export async function makeSeller(t: TestApp, name = 'seller'): Promise<Seller> {
  const user = await t.user(name);
  const ws = (await t.workspace(user, `${name} shop`)).id;
  const h = { token: user.token, headers: { 'svc-context': ws } };
  const pkg = await t.request('POST', '/v1/packages', { ...h, body: { name: 'hello' } });
  assert.equal(pkg.status, 201, pkg.text);
  const v = await t.request('POST', `/v1/packages/${pkg.body.id}/versions`, {
    ...h, body: { semver: '1.0.0', input_schema: SCHEMA, manifest: { routes: [{ route_key: 'web' }] } },
  });
  assert.equal(v.status, 201, v.text);
  return { user, ws, pkgId: pkg.body.id, versionId: v.body.id };
}

export async function makeOffer(t: TestApp, seller: Seller, extra: Record<string, unknown> = {}) {
  const res = await t.request('POST', '/v1/offers', {
    token: seller.user.token, headers: { 'svc-context': seller.ws },
    body: {
      package_id: seller.pkgId, title: 'Hello, hosted', pricing: { currency: 'eur', unit_amount: 4900, interval: 'one_time' },
      field_values: { greeting: { value: 'Hi from ACME', locked: true } }, ...extra,
    },
  });
  assert.equal(res.status, 201, res.text);
  return res.body as { id: string; short_hash: string; etag: string; url: string };
}

/** A customer's call: their user credential, no svc-context. */
export function customer(t: TestApp, user: TestUser) {
  return (method: string, url: string, opts: { body?: unknown; etag?: string; headers?: Record<string, string> } = {}) =>
    t.request(method, url, {
      token: user.token,
      headers: { ...(opts.etag !== undefined ? { 'if-match': opts.etag } : {}), ...opts.headers },
      ...(opts.body !== undefined ? { body: opts.body } : {}),
    });
}

/** Reads the draft (as `user`) until `done(draft)` holds; fails with the last state after ~30 s. */
export async function waitDraft(t: TestApp, user: TestUser, id: string, done: (d: any) => boolean, what = 'the draft to move on'): Promise<any> {
  let last: any;
  for (let i = 0; i < 600; i++) {
    last = (await customer(t, user)('GET', `/v1/order_drafts/${id}`)).body;
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
}

export const inStatus = (...statuses: string[]) => (d: { status: string }) => statuses.includes(d.status);

/** The customer starts a draft and takes it to `configure` in a new workspace. */
export async function draftToConfigure(t: TestApp, user: TestUser, offerId: string, workspaceName = 'Customer'): Promise<any> {
  const as = customer(t, user);
  const created = await as('POST', `/v1/offers/${offerId}/order_drafts`);
  assert.equal(created.status, 201, created.text);
  const picked = await as('POST', `/v1/order_drafts/${created.body.id}:selectWorkspace`, { etag: created.body.etag, body: { kind: 'new', name: workspaceName } });
  assert.equal(picked.status, 200, picked.text);
  return waitDraft(t, user, created.body.id, inStatus('configure', 'compute_bootstrap', 'terminated'), 'configure');
}

/**
 * Faults for the clusters order drafts register (named `order-…`): the compute phase registers its
 * cluster with no options, so a trigger gives those rows the local driver's documented fault
 * options (`local.faults`, as POST /v1/clusters takes them) at insert. Answers the function that
 * removes the trigger. Works on both dialects; the driver reads the options at each step.
 */
export async function faultOrderClusters(db: Kysely<Database>, faults: Array<{ action: string; fail_times?: number; latency_ms?: number }>): Promise<() => Promise<void>> {
  const options = JSON.stringify({ faults: faults.map((f) => ({ fail_times: 0, latency_ms: 0, ...f })) }).replace(/'/g, "''");
  if (DIALECT === 'postgres') {
    await sql.raw(`CREATE OR REPLACE FUNCTION order_cluster_faults() RETURNS trigger AS $$ BEGIN NEW.options := '${options}'; RETURN NEW; END $$ LANGUAGE plpgsql`).execute(db);
    await sql.raw(`CREATE TRIGGER order_cluster_faults BEFORE INSERT ON clusters FOR EACH ROW WHEN (NEW.name LIKE 'order-%') EXECUTE FUNCTION order_cluster_faults()`).execute(db);
    return async () => {
      await sql.raw('DROP TRIGGER IF EXISTS order_cluster_faults ON clusters').execute(db);
    };
  }
  await sql.raw(`CREATE TRIGGER order_cluster_faults AFTER INSERT ON clusters WHEN NEW.name LIKE 'order-%' BEGIN UPDATE clusters SET options = '${options}' WHERE id = NEW.id; END`).execute(db);
  return async () => {
    await sql.raw('DROP TRIGGER IF EXISTS order_cluster_faults').execute(db);
  };
}
