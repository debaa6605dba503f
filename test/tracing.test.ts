// Tracing with OpenTelemetry (API.md 8.12, docs/observability.md) from a real `svc serve` process
// whose OTEL_EXPORTER_OTLP_ENDPOINT points at a stand-in OTLP/HTTP receiver here (a tiny HTTP
// server taking the exporter's POST /v1/traces, OTLP's JSON encoding): a request makes a server
// span, a child of the caller's `traceparent`, with the SQL statements it ran as its children; a
// job makes a job span with its workflow steps and their statements below; the exporter sends the
// configured headers and the resource names the service; and no secret (the bootstrap password and
// token, a secret's value, a token sent in a query string, the service key, the collector's key)
// appears anywhere in what was exported, nor the collector's key in the log.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, DIALECT, type TestDatabase } from './harness.js';
import { dbEnv, startSvc, svcCaller, type RunningSvc } from './processes.js';

const TOKEN = 'Tracing0Bootstrap0Token000000000';
const PASSWORD = 'tracing owner password 7f3c';
const SECRET_VALUE = 'sk_live_tracing_secret_value_91d2';
const QUERY_TOKEN = 'sk_svc_querystringtoken0123456789';
const COLLECTOR_KEY = 'collector-api-key-5b7e0d';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

interface AnyValue { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number }
interface OtlpSpan {
  traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number;
  attributes?: Array<{ key: string; value: AnyValue }>;
  status?: { code?: number };
}
interface Export { headers: IncomingMessage['headers']; body: string; resource: Record<string, unknown>; spans: OtlpSpan[] }

function valueOf(v: AnyValue): unknown {
  return v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue;
}
function attrs(list: Array<{ key: string; value: AnyValue }> | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));
}
const attr = (span: OtlpSpan, key: string) => attrs(span.attributes)[key];

/** The stand-in collector: every POST /v1/traces, decoded from OTLP JSON. */
async function startReceiver(): Promise<{ server: Server; url: string; exports: Export[]; paths: string[] }> {
  const exports: Export[] = [];
  const paths: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      const body = raw.toString('utf8');
      const parsed = JSON.parse(body) as { resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: AnyValue }> }; scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
      for (const rs of parsed.resourceSpans) {
        exports.push({ headers: req.headers, body, resource: attrs(rs.resource.attributes), spans: rs.scopeSpans.flatMap((s) => s.spans) });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return { server, url: `http://127.0.0.1:${address.port}`, exports, paths };
}

describe(`tracing with OpenTelemetry from svc serve (${DIALECT})`, () => {
  let db: TestDatabase;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let svc: RunningSvc;
  let env: Record<string, string>;
  const call = svcCaller(TOKEN);
  const spans = () => receiver.exports.flatMap((e) => e.spans);

  /** The exported spans once `found` finds what it looks for (the exporter sends every 100 ms). */
  async function until<T>(found: () => T | undefined, what: string): Promise<T> {
    for (let i = 0; i < 300; i++) {
      const hit = found();
      if (hit !== undefined) return hit;
      await sleep(50);
    }
    assert.fail(`no exported span: ${what}; spans: ${spans().map((s) => s.name).join(', ')}`);
  }

  before(async () => {
    db = await createTestDatabase();
    receiver = await startReceiver();
    env = dbEnv(db, {
      SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: PASSWORD, SVC_BOOTSTRAP_TOKEN: TOKEN,
      SVC_JOB_POLL_MS: '100', SVC_RETRY_BACKOFF_SCALE: '0.01',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${COLLECTOR_KEY}`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    });
    svc = await startSvc(env);
  });
  after(async () => {
    await svc?.stop();
    await new Promise((resolve) => receiver?.server.close(resolve));
    await db?.drop();
  });

  let workspace: string;

  test('a request makes a server span, child of the caller\'s traceparent, with its SQL statements as children', async () => {
    const created = await call(svc.url, 'POST', '/v1/workspaces', {
      body: { name: 'Traced' }, headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    workspace = created.body.id;
    const server = await until(() => spans().find((s) => s.traceId === TRACE_ID && s.name === 'POST /v1/workspaces'), 'POST /v1/workspaces');
    assert.equal(server.parentSpanId, CALLER_SPAN);
    assert.equal(server.kind, 2, 'SERVER');
    assert.equal(attr(server, 'http.route'), '/v1/workspaces');
    assert.equal(attr(server, 'http.request.method'), 'POST');
    assert.equal(attr(server, 'http.response.status_code'), 201);
    const sql = await until(() => {
      const children = spans().filter((s) => s.parentSpanId === server.spanId && attr(s, 'db.system.name') !== undefined);
      return children.some((s) => attr(s, 'db.operation.name') === 'insert' && attr(s, 'db.collection.name') === 'workspaces') ? children : undefined;
    }, 'the insert into workspaces under the request');
    for (const s of sql) {
      assert.equal(s.kind, 3, 'CLIENT');
      assert.equal(s.traceId, TRACE_ID);
      assert.equal(attr(s, 'db.system.name'), DIALECT === 'postgres' ? 'postgresql' : 'sqlite');
      const text = String(attr(s, 'db.query.text'));
      assert.ok(!text.includes('Traced'), `values are parameters, not in the text: ${text}`);
    }
    assert.equal(receiver.exports[0]!.resource['service.name'], 'svc');
    assert.match(String(receiver.exports[0]!.resource['service.version']), /^\d+\.\d+\.\d+/);
    assert.equal(receiver.exports[0]!.resource['deployment.environment.name'], 'test');
    assert.equal(receiver.exports[0]!.headers.authorization, `Bearer ${COLLECTOR_KEY}`);
    assert.ok(receiver.paths.every((p) => p.startsWith('POST /v1/traces application/json')), receiver.paths.join('\n'));
    // The access log line of the traced request carries the trace's id.
    const line = await svc.waitForLog((l) => l.msg === 'request completed' && (l.req as { url?: string } | undefined)?.url === '/v1/workspaces' && l.trace_id === TRACE_ID);
    assert.equal(typeof line.span_id, 'string');
  });

  test('a query string\'s values never reach a span, nor a secret\'s value', async () => {
    const secret = await call(svc.url, 'POST', '/v1/secrets', { headers: { 'svc-context': workspace }, body: { name: 'traced', value: SECRET_VALUE } });
    assert.equal(secret.status, 201, JSON.stringify(secret.body));
    const listed = await call(svc.url, 'GET', `/v1/secrets?limit=5&access_token=${QUERY_TOKEN}`, { headers: { 'svc-context': workspace } });
    // refused (400: the route takes no such parameter), and traced all the same
    assert.equal(listed.status, 400, JSON.stringify(listed.body));
    const get = await until(() => spans().find((s) => s.name === 'GET /v1/secrets'), 'GET /v1/secrets');
    assert.equal(attr(get, 'url.path'), '/v1/secrets');
    assert.equal(attr(get, 'http.response.status_code'), 400);
    await until(() => spans().find((s) => s.name === 'POST /v1/secrets'), 'POST /v1/secrets');
  });

  test('a job makes a job span, with its workflow steps (and their statements) below it; a failed attempt is an error span', async () => {
    // read_capabilities fails once (a test hook of the local cluster), then succeeds on its retry
    const op = await call(svc.url, 'POST', '/v1/clusters', {
      headers: { 'svc-context': workspace }, body: { name: 'traced', local: { faults: [{ action: 'capabilities', fail_times: 1 }] } },
    });
    assert.equal(op.status, 202, JSON.stringify(op.body));
    const done = await call(svc.url, 'POST', `/v1/operations/${op.body.id}:wait?timeout=30`, { headers: { 'svc-context': workspace } });
    assert.equal(done.body.state, 'SUCCEEDED', JSON.stringify(done.body));
    const steps = await until(() => {
      const jobs = spans().filter((s) => s.name === 'job operation' && attr(s, 'svc.operation.id') === op.body.id);
      const found = spans().filter((s) => s.name.startsWith('step ') && jobs.some((j) => j.spanId === s.parentSpanId));
      return found.some((s) => attr(s, 'svc.step.outcome') === 'failed') && found.some((s) => s.name === 'step cluster.create.activate') ? found : undefined;
    }, 'the job\'s steps, a failed attempt among them');
    const jobs = spans().filter((s) => s.name === 'job operation' && attr(s, 'svc.operation.id') === op.body.id);
    assert.equal(jobs.length, 2, 'the first run and the retry');
    for (const job of jobs) {
      assert.equal(job.parentSpanId ?? '', '', 'a job is the root of its trace');
      assert.equal(attr(job, 'svc.job.kind'), 'operation');
      assert.equal(typeof attr(job, 'svc.job.id'), 'string');
    }
    for (const step of steps) assert.equal(attr(step, 'svc.operation.id'), op.body.id);
    const attempts = steps.filter((s) => s.name === 'step cluster.create.read_capabilities');
    const failed = attempts.find((s) => attr(s, 'svc.step.outcome') === 'failed')!;
    assert.equal(failed.status?.code, 2, 'ERROR');
    assert.equal(attr(failed, 'error.type'), 'StepError');
    assert.equal(attr(failed, 'svc.step.attempt'), 1);
    const retried = attempts.find((s) => attr(s, 'svc.step.outcome') === 'completed')!;
    assert.equal(attr(retried, 'svc.step.attempt'), 2);
    assert.notEqual(retried.status?.code, 2);
    await until(() => spans().find((s) => attr(s, 'db.system.name') !== undefined && steps.some((st) => st.spanId === s.parentSpanId)), 'a statement under a step');
    assert.ok(!receiver.exports.some((e) => e.body.includes('injected fault')), 'a step\'s error message is not exported');
  });

  test('stopping exports the last spans; no secret appears in anything exported, nor the collector\'s key in the log', async () => {
    const before = spans().length;
    assert.equal((await call(svc.url, 'GET', '/v1/workspaces')).status, 200);
    const { code } = await svc.stop();
    assert.equal(code, 0);
    assert.ok(spans().length > before, 'the spans of the last request were exported at shutdown');
    assert.ok(spans().some((s) => s.name === 'GET /v1/workspaces'));
    const exported = receiver.exports.map((e) => e.body).join('\n');
    for (const [name, value] of Object.entries({ PASSWORD, TOKEN, SECRET_VALUE, QUERY_TOKEN, COLLECTOR_KEY, SVC_SECRET_KEY: env.SVC_SECRET_KEY! })) {
      assert.ok(!exported.includes(value), `${name} was exported`);
    }
    const log = JSON.stringify(svc.logs) + svc.stderr();
    assert.ok(!log.includes(COLLECTOR_KEY), 'the collector\'s key reached the log');
    assert.ok(svc.logs.some((l) => l.msg === 'tracing: exporting spans (OTLP over HTTP)' && l.endpoint === receiver.url));
  });
});
