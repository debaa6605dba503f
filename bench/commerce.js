#!/usr/bin/env node
// `npm run bench:commerce`: the commerce budgets of issue 25, on SQLite (built dist/), with the local
// payment provider and the local cluster driver. Customers sign up, order, pay on the hosted
// checkout page (GET it for its CSRF token and cookie, POST the test card 4242 4242 4242 4242, follow
// the 303 to the return page) and wait for the delivered install, all over HTTP.
//
//   1. Latency: BENCH_ORDERS (20) customers one after another; the time from :submitConfiguration to
//      the draft's `done` (checkout session, payment, return page, order, install.create healthy).
//      Budget: median under 2 s.
//   2. The race: BENCH_RACERS (50) customers at once buy from one offer with max_uses 10, each paying
//      twice at once (a double click) and landing on the return page twice. Exactly 10 orders, no
//      session paid twice and no paid session without its order (read from the database).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { percentile, round } from './load.js';
import { ensureBuilt, freePort, RESULTS, roomyPlansFile, startProcess, stopProcess, waitUntilUp } from './processes.js';

const ORDERS = Number(process.env.BENCH_ORDERS ?? 20);
const RACERS = Number(process.env.BENCH_RACERS ?? 50);
const MAX_USES = 10;
const BUDGET = { medianMs: 2000 };
const TOKEN = randomBytes(24).toString('hex').slice(0, 32);
const SCHEMA = { type: 'object', properties: { greeting: { type: 'string', default: 'hello' }, replicas: { type: 'integer', default: 1 } }, additionalProperties: false };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One API call; answers its status and body (the refused ones are part of the race). */
async function call(base, method, path, token, body, headers = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function signUp(base, i) {
  const email = `customer-${i}-${randomBytes(3).toString('hex')}@bench.test`;
  await call(base, 'POST', '/v1/users', null, { email, password: 'bench customer password' });
  return (await call(base, 'POST', '/v1/auth/sessions', null, { email, password: 'bench customer password' })).body.token;
}

async function waitDraft(base, token, id, statuses) {
  for (let i = 0; i < 3000; i++) {
    const d = (await call(base, 'GET', `/v1/order_drafts/${id}`, token)).body;
    if (statuses.includes(d.status)) return d;
    await sleep(20);
  }
  throw new Error(`draft ${id} never reached ${statuses.join('|')}`);
}

/** Pays on the hosted page as a browser does; answers the HTTP status of the POST. */
async function payOnPage(base, url) {
  const page = await fetch(url);
  const html = await page.text();
  const cookie = (page.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!csrf) throw new Error(`no csrf token on ${url} (${page.status})`);
  const form = new URLSearchParams({ card_number: '4242 4242 4242 4242', expiry: '12 / 34', cvc: '123', csrf, action: 'pay' });
  const res = await fetch(url, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: base }, body: form });
  await res.text();
  if (res.status === 303) {
    const back = await fetch(new URL(res.headers.get('location'), base), { redirect: 'manual' });
    await back.text();
  }
  return res.status;
}

/** A customer's draft taken to `configure` in a new workspace. */
async function toConfigure(base, token, offerId) {
  const created = await call(base, 'POST', `/v1/offers/${offerId}/order_drafts`, token);
  if (created.status !== 201) return null;
  const picked = await call(base, 'POST', `/v1/order_drafts/${created.body.id}:selectWorkspace`, token, { kind: 'new', name: 'Bench customer' }, { 'if-match': created.body.etag });
  if (picked.status !== 200) throw new Error(`selectWorkspace -> ${picked.status} ${JSON.stringify(picked.body)}`);
  return waitDraft(base, token, created.body.id, ['configure']);
}

/** From :submitConfiguration to done; answers the milliseconds it took. */
async function buy(base, token, draft, { doubleClick = false } = {}) {
  const t0 = performance.now();
  const paying = await call(base, 'POST', `/v1/order_drafts/${draft.id}:submitConfiguration`, token, { field_values: { replicas: 2 } }, { 'if-match': draft.etag });
  if (paying.status !== 200) throw new Error(`submitConfiguration -> ${paying.status}`);
  const session = await call(base, 'POST', `/v1/order_drafts/${draft.id}/checkout_sessions`, token, undefined, { 'if-match': paying.body.etag });
  if (session.status !== 201) throw new Error(`checkout_sessions -> ${session.status} ${JSON.stringify(session.body)}`);
  const statuses = await Promise.all((doubleClick ? [1, 2] : [1]).map(() => payOnPage(base, session.body.url)));
  if (!statuses.includes(303)) throw new Error(`payment answered ${statuses.join(', ')}`);
  const done = await waitDraft(base, token, draft.id, ['done', 'terminated']);
  if (done.status !== 'done') throw new Error(`draft ${draft.id} ended ${done.termination_reason}`);
  return performance.now() - t0;
}

async function main() {
  ensureBuilt();
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-commerce-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    SVC_DATA_DIR: join(work, 'data'), SVC_SECRET_KEY: randomBytes(32).toString('hex'), SVC_PUBLIC_URL: base,
    // the customers sign up themselves (the default, closed, would take them only through an offer's link)
    SVC_SIGNUP: 'open',
    SVC_BOOTSTRAP_EMAIL: 'seller@bench.test', SVC_BOOTSTRAP_PASSWORD: 'bench seller password', SVC_BOOTSTRAP_TOKEN: TOKEN,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', PORT: String(port), HOST: '127.0.0.1', SVC_PLANS_FILE: await roomyPlansFile(work),
  };
  const proc = startProcess(['bin/svc.js', 'serve'], env, join(work, 'svc.log'));
  try {
    await waitUntilUp(`${base}/readyz`, proc);
    const ws = (await call(base, 'POST', '/v1/workspaces', TOKEN, { name: 'Bench shop' })).body.id;
    const ctx = { 'svc-context': ws };
    const pkg = (await call(base, 'POST', '/v1/packages', TOKEN, { name: 'hello' }, ctx)).body;
    await call(base, 'POST', `/v1/packages/${pkg.id}/versions`, TOKEN, { semver: '1.0.0', input_schema: SCHEMA, manifest: { routes: [{ route_key: 'web' }] } }, ctx);
    const offerOf = async (maxUses) => (await call(base, 'POST', '/v1/offers', TOKEN, {
      package_id: pkg.id, title: 'Hello, hosted', pricing: { currency: 'eur', unit_amount: 4900, interval: 'one_time' }, max_uses: maxUses,
      field_values: { greeting: { value: 'Hi from the bench', locked: true } },
    }, ctx)).body;

    // 1. Latency, one customer at a time.
    const open = await offerOf(null);
    const latencies = [];
    for (let i = 0; i < ORDERS; i++) {
      const token = await signUp(base, i);
      const draft = await toConfigure(base, token, open.id);
      latencies.push(await buy(base, token, draft));
    }
    latencies.sort((a, b) => a - b);
    const median = round(percentile(latencies, 50), 1);
    console.log(`latency: ${ORDERS} orders, :submitConfiguration to done median ${median} ms, p90 ${round(percentile(latencies, 90), 1)} ms, max ${round(latencies.at(-1), 1)} ms`);

    // 2. The race for 10 uses.
    const limited = await offerOf(MAX_USES);
    const tokens = await Promise.all(Array.from({ length: RACERS }, (_, i) => signUp(base, 1000 + i)));
    const r0 = performance.now();
    const outcomes = await Promise.all(tokens.map(async (token) => {
      const draft = await toConfigure(base, token, limited.id);
      if (!draft) return 'refused';
      await buy(base, token, draft, { doubleClick: true });
      return 'bought';
    }));
    const raceS = round((performance.now() - r0) / 1000, 2);
    const bought = outcomes.filter((o) => o === 'bought').length;
    const orders = (await call(base, 'GET', `/v1/orders?offer=${limited.id}&limit=100`, TOKEN, undefined, ctx)).body.data;
    const db = new Database(join(work, 'data', 'svc.db'), { readonly: true });
    const paidPerDraft = db.prepare(`select c.client_reference_id as draft, count(*) as n from local_checkouts c
      join order_drafts d on d.id = c.client_reference_id where d.offer_id = ? and c.status = 'complete' group by c.client_reference_id`).all(limited.id);
    const paidWithoutOrder = db.prepare(`select count(*) as n from checkout_sessions c join order_drafts d on d.id = c.draft_id
      where d.offer_id = ? and c.status = 'complete' and c.refunded_at is null
      and not exists (select 1 from orders o where o.order_draft_id = c.draft_id and o.payment_provider_checkout_id = c.provider_session_id)`).get(limited.id).n;
    db.close();
    const doubleCharged = paidPerDraft.filter((r) => r.n > 1).length;
    const delivered = orders.filter((o) => o.status === 'delivered').length;
    console.log(`race: ${RACERS} customers, ${bought} bought, ${orders.length} orders (${delivered} delivered) in ${raceS} s; ` +
      `sessions paid twice ${doubleCharged}, paid sessions without an order ${paidWithoutOrder}`);

    const result = {
      date: new Date().toISOString(), node: process.version,
      latency: { orders: ORDERS, median_ms: median, p90_ms: round(percentile(latencies, 90), 1), max_ms: round(latencies.at(-1), 1) },
      race: { customers: RACERS, max_uses: MAX_USES, bought, orders: orders.length, delivered, seconds: raceS, double_charged: doubleCharged, paid_without_order: paidWithoutOrder },
      budgets: BUDGET,
      pass: {
        latency: median < BUDGET.medianMs,
        exactly_max_uses: orders.length === MAX_USES && bought === MAX_USES && delivered === MAX_USES,
        no_double_charge: doubleCharged === 0 && paidPerDraft.length === MAX_USES,
        no_lost_payment: paidWithoutOrder === 0,
      },
    };
    writeFileSync(join(RESULTS, 'commerce.json'), `${JSON.stringify(result, null, 2)}\n`);
    const ok = Object.values(result.pass).every(Boolean);
    console.log(`${ok ? 'PASS' : 'FAIL'} (budgets: median under ${BUDGET.medianMs} ms; exactly ${MAX_USES} orders of ${RACERS} customers, none charged twice, none lost)`);
    process.exitCode = ok ? 0 : 1;
  } finally {
    await stopProcess(proc);
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
