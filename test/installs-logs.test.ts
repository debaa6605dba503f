// An install's logs (issue 36) through HTTP on a listening server: on the local cluster, the lines
// of its simulated steps (read, and followed across an update until the install is deleted); on a
// Kubernetes cluster (the stand-in API server), the lines of its pods' containers read from
// `pods/log` with their pod and container, filtered by container, tail and since, and followed as
// Server-Sent Events, the stand-in seeing its requests end when the client goes. Bad parameters,
// another workspace's install, a cluster that refuses or fails, and the cap on open streams.
import assert from 'node:assert/strict';
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { installNamespace } from '../src/drivers/cluster/driver.js';
import { createKubernetesDriver } from '../src/drivers/cluster/kubernetes.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { InstallFixtures, type Caller } from './installs-fixtures.js';
import { STANDIN_SERVER_CERT, readyStatus, standinKubeconfig, startK8sStandin, type K8sStandin } from './k8s-standin.js';

interface SseEvent {
  event: string;
  data: any;
}

/** A request whose answer is read as it comes: its status, and its events when it is an event stream. */
interface Open {
  status: number;
  headers: IncomingHttpHeaders;
  events: SseEvent[];
  text: () => string;
  ended: Promise<void>;
  /** resolves with the first event matching `pred` (seen already or to come) */
  waitFor(pred: (e: SseEvent) => boolean, what: string): Promise<SseEvent>;
  close(): void;
}

function open(port: number, path: string, headers: Record<string, string>): Promise<Open> {
  return new Promise((resolve, reject) => {
    let text = '';
    let buffer = '';
    const events: SseEvent[] = [];
    const waiters: Array<() => void> = [];
    let endedResolve!: () => void;
    const ended = new Promise<void>((r) => { endedResolve = r; });
    const req: ClientRequest = httpRequest({ port, host: '127.0.0.1', method: 'GET', path, headers, agent: false }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
        buffer += d;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event !== undefined) events.push({ event, data: data !== undefined ? JSON.parse(data) : undefined });
        }
        for (const w of waiters.splice(0)) w();
      });
      res.on('error', () => undefined);
      res.on('close', () => {
        endedResolve();
        for (const w of waiters.splice(0)) w();
      });
      const o: Open = {
        status: res.statusCode!, headers: res.headers, events, text: () => text, ended,
        async waitFor(pred, what) {
          for (;;) {
            const found = events.find(pred);
            if (found) return found;
            if (res.complete || res.destroyed) throw new Error(`the stream ended without ${what}: ${text}`);
            await new Promise<void>((r) => waiters.push(r));
          }
        },
        close: () => req.destroy(),
      };
      resolve(o);
    });
    req.on('error', (err) => (text ? undefined : reject(err)));
    req.end();
  });
}

/** Waits until `check` holds (polling), failing with `what` after ~10 s. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await check()) return;
    await sleep(10);
  }
  assert.fail(`timed out waiting until ${what}`);
}

const K8S_MANIFEST = {
  routes: [{ route_key: 'web', service: { name: 'web', port: 80 } }],
  resources: [
    {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', labels: { app: 'web' } },
      spec: {
        replicas: 2, selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }, { name: 'proxy', image: 'envoy:1.31' }] } },
      },
    },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] } },
  ],
};
const LOCAL_MANIFEST = {
  routes: [{ route_key: 'web' }],
  resources: [
    {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'hello' },
      spec: { replicas: '{{ values.replicas }}', template: { spec: { containers: [{ name: 'hello', image: 'hello:1.0' }] } } },
    },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { a: 'b' } },
  ],
};
const SCHEMA = { type: 'object', properties: { replicas: { type: 'integer', minimum: 1, maximum: 5, default: 1 } }, additionalProperties: false };

describe('install logs', () => {
  let t: TestApp;
  let f: InstallFixtures;
  let port: number;
  let alice: TestUser;
  let carol: TestUser;
  let A: Caller;
  let B: Caller;
  let k8s: K8sStandin;
  let localCluster: string;
  let kubeCluster: string;
  let kubeInstall: string;
  let ns: string;

  const auth = (c: Caller) => ({ authorization: `Bearer ${c.user.token}`, 'svc-context': c.ws });
  const logs = (c: Caller, id: string, query = '') => t.request('GET', `/v1/installs/${id}/logs${query}`, f.opts(c));
  const follow = (c: Caller, id: string, query = '') => open(port, `/v1/installs/${id}/logs?follow=true${query}`, { ...auth(c), accept: 'text/event-stream' });

  before(async () => {
    // Two long-lived requests per credential: the third stream is refused.
    t = await startTestApp({ SVC_LONG_REQUESTS_PER_PRINCIPAL: '2' });
    // A cluster refusing to give its logs is a 502 on purpose.
    t.allowedServerStatuses.add(502);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
    f = new InstallFixtures(t);
    alice = await t.user('alice');
    carol = await t.user('carol');
    A = { user: alice, ws: (await t.workspace(alice, 'A')).id };
    B = { user: carol, ws: (await t.workspace(carol, 'B')).id };
    localCluster = await f.cluster(A);

    k8s = await startK8sStandin();
    k8s.objects.statusFor = readyStatus;
    const reg = await t.request('POST', '/v1/clusters', f.opts(A, { body: { name: 'prod', provider: 'kubernetes', kubeconfig: standinKubeconfig(k8s.url) } }));
    assert.equal(reg.status, 202, reg.text);
    assert.equal((await f.waitOp(A, reg.body.id)).state, 'SUCCEEDED');
    kubeCluster = reg.body.owner_id;
    const pkg = await f.pkg(A);
    await f.version(A, pkg, '1.0.0', K8S_MANIFEST, SCHEMA);
    kubeInstall = (await f.healthyInstall(A, pkg, kubeCluster)).owner_id;
    ns = installNamespace(kubeInstall);
    // The Deployment's pods, as its controller would create them (in place of the stand-in
    // controller's, so the test knows their names and containers); the first has two containers.
    k8s.objects.deletePods(ns);
    k8s.addPod(ns, 'web-7d9c5b6f4-abcde', ['web', 'proxy'], { app: 'web' });
    k8s.addPod(ns, 'web-7d9c5b6f4-fghij', ['web'], { app: 'web' });
    const t0 = Date.UTC(2026, 11, 7, 12, 0, 0);
    k8s.appendLog(ns, 'web-7d9c5b6f4-abcde', 'web', 'a1 starting', new Date(t0));
    k8s.appendLog(ns, 'web-7d9c5b6f4-fghij', 'web', 'b1 starting', new Date(t0 + 500));
    k8s.appendLog(ns, 'web-7d9c5b6f4-abcde', 'proxy', 'p1 proxy up', new Date(t0 + 1000));
    k8s.appendLog(ns, 'web-7d9c5b6f4-abcde', 'web', 'a2 listening on :8080', new Date(t0 + 2000));
    k8s.appendLog(ns, 'web-7d9c5b6f4-fghij', 'web', 'b2 listening on :8080', new Date(t0 + 3000));
    k8s.appendLog(ns, 'web-7d9c5b6f4-fghij', 'web', `b3 ${'x'.repeat(20_000)}`, new Date(t0 + 4000));
  });
  after(async () => {
    await t?.close();
    await k8s?.close();
  });

  test('the local cluster: the lines of its simulated steps, filtered, followed across an update until the install is deleted', async () => {
    const pkg = await f.pkg(A);
    await f.version(A, pkg, '1.0.0', LOCAL_MANIFEST, SCHEMA);
    const created = await f.healthyInstall(A, pkg, localCluster, { replicas: 2 });
    const id: string = created.owner_id;
    const renderId: string = created.response.render_id;

    const res = await logs(A, id);
    assert.equal(res.status, 200, res.text);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.equal(res.body.truncated, false);
    const lines = res.body.items as Array<{ time: number; timestamp: string; pod: string; container: string; line: string }>;
    const applied = lines.find((l) => l.pod === 'svc-local-cluster' && l.container === 'driver' && l.line.startsWith('applied'));
    assert.ok(applied, res.text);
    assert.equal(applied.line, `applied render ${renderId} to namespace ${installNamespace(id)}: 2 object(s) (deployment/hello, configmap/cfg)`);
    assert.equal(applied.time, Math.floor(Date.parse(applied.timestamp) / 1000));
    const started = lines.filter((l) => l.container === 'hello');
    assert.equal(started.length, 2, 'one line per simulated replica');
    for (const l of started) {
      assert.match(l.pod, /^hello-[b-z2-9]{10}-[b-z2-9]{5}$/);
      assert.equal(l.line, 'container hello started from hello:1.0 (simulated: no workload runs on the local cluster)');
    }
    assert.notEqual(started[0]!.pod, started[1]!.pod);
    assert.ok(lines.some((l) => l.line === `render ${renderId} ready: 2 object(s) ready`), res.text);
    for (let i = 1; i < lines.length; i++) assert.ok(lines[i - 1]!.timestamp <= lines[i]!.timestamp, 'oldest first');

    const only = await logs(A, id, '?container=hello&tail=1');
    assert.equal(only.status, 200, only.text);
    assert.deepEqual(only.body.items.map((l: { pod: string }) => l.pod).sort(), started.map((l) => l.pod).sort(), 'the last line of each pod container');
    const future = await logs(A, id, `?since=${Math.floor(Date.now() / 1000) + 3600}`);
    assert.deepEqual(future.body.items, []);

    const stream = await follow(A, id, '&container=driver');
    assert.equal(stream.status, 200, stream.text());
    assert.match(String(stream.headers['content-type']), /^text\/event-stream/);
    await stream.waitFor((e) => e.event === 'line' && e.data.line === applied.line, 'the lines written before');
    const install = await f.getInstall(A, id);
    const update = await t.request('PATCH', `/v1/installs/${id}`, f.opts(A, { body: { values: { replicas: 1 } }, headers: { 'if-match': install.body.etag } }));
    assert.equal(update.status, 202, update.text);
    const updated = await f.waitOp(A, update.body.id);
    const next = await stream.waitFor((e) => e.event === 'line' && e.data.line.startsWith(`applied render ${updated.response.render_id}`), 'the update\'s lines');
    assert.deepEqual(Object.keys(next.data).sort(), ['container', 'line', 'pod', 'time', 'timestamp']);
    assert.ok(stream.events.filter((e) => e.event === 'line').every((e) => e.data.container === 'driver'), 'the filter holds while following');

    const del = await t.request('DELETE', `/v1/installs/${id}`, f.opts(A, { headers: { 'if-match': (await f.getInstall(A, id)).body.etag } }));
    assert.equal(del.status, 202, del.text);
    const end = await stream.waitFor((e) => e.event === 'end', 'its end');
    assert.equal(end.data.reason, 'install_deleted');
    await stream.ended;
    await f.waitOp(A, del.body.id);
    const gone = await logs(A, id);
    assert.equal(gone.status, 404, gone.text);
    assert.equal(gone.body.error.code, 'NOT_FOUND');
  });

  test('kubernetes: the lines of the pods\' containers from pods/log, by time, with container, tail and since', async () => {
    const res = await logs(A, kubeInstall);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.truncated, false);
    const items = res.body.items as Array<{ time: number; timestamp: string; pod: string; container: string; line: string }>;
    assert.deepEqual(items.map((l) => `${l.pod}/${l.container} ${l.line.slice(0, 22)}`), [
      'web-7d9c5b6f4-abcde/web a1 starting',
      'web-7d9c5b6f4-fghij/web b1 starting',
      'web-7d9c5b6f4-abcde/proxy p1 proxy up',
      'web-7d9c5b6f4-abcde/web a2 listening on :8080',
      'web-7d9c5b6f4-fghij/web b2 listening on :8080',
      `web-7d9c5b6f4-fghij/web b3 ${'x'.repeat(19)}`,
    ]);
    assert.equal(items[0]!.time, Date.UTC(2026, 11, 7, 12, 0, 0) / 1000);
    assert.match(items[0]!.timestamp, /^2026-12-07T12:00:00\.\d{1,9}Z$/);
    // A line over 16 KiB is cut, saying how long it was.
    const long = items[5]!.line;
    assert.ok(Buffer.byteLength(long) < 16_384 + 40, `${long.length}`);
    assert.match(long, / \[\.\.\. cut: 20003 bytes\]$/);
    // The stand-in was asked as kubectl asks: per container, with timestamps and the tail.
    const asked = k8s.requests.filter((r) => r.path.endsWith('/log'));
    assert.deepEqual(asked.map((r) => `${r.path.split('/')[6]}/${r.query.container}`).sort(), ['web-7d9c5b6f4-abcde/proxy', 'web-7d9c5b6f4-abcde/web', 'web-7d9c5b6f4-fghij/web']);
    for (const r of asked) {
      assert.equal(r.query.timestamps, 'true');
      assert.equal(r.query.tailLines, '200');
      assert.equal(r.authorization, `Bearer ${'standin-token-0123456789abcdef'}`);
    }

    const proxy = await logs(A, kubeInstall, '?container=proxy');
    assert.deepEqual(proxy.body.items.map((l: { line: string }) => l.line), ['p1 proxy up']);
    const tail = await logs(A, kubeInstall, '?container=web&tail=1');
    assert.deepEqual(tail.body.items.map((l: { pod: string; line: string }) => `${l.pod} ${l.line.slice(0, 2)}`), ['web-7d9c5b6f4-abcde a2', 'web-7d9c5b6f4-fghij b3']);
    const since = await logs(A, kubeInstall, `?since=${Date.UTC(2026, 11, 7, 12, 0, 2) / 1000}`);
    assert.deepEqual(since.body.items.map((l: { line: string }) => l.line.slice(0, 2)), ['a2', 'b2', 'b3']);
    assert.equal(k8s.requests.filter((r) => r.path.endsWith('/log')).at(-1)!.query.sinceTime, '2026-12-07T12:00:02Z');
    const none = await logs(A, kubeInstall, '?container=nothere');
    assert.deepEqual(none.body, { items: [], truncated: false });
  });

  test('kubernetes: follow gets the lines appended after connecting; closing the client ends the requests to the cluster', async () => {
    const stream = await follow(A, kubeInstall, '&container=web&tail=1');
    assert.equal(stream.status, 200, stream.text());
    await until(() => k8s.logs.openFollows === 2, 'the stand-in holds a follow per pod');
    assert.deepEqual(k8s.requests.filter((r) => r.query.follow === 'true').map((r) => r.query.container), ['web', 'web']);
    await stream.waitFor((e) => e.event === 'line' && e.data.line.startsWith('b3'), 'the tail');
    k8s.appendLog(ns, 'web-7d9c5b6f4-abcde', 'web', 'a3 GET / 200');
    k8s.appendLog(ns, 'web-7d9c5b6f4-abcde', 'proxy', 'p2 not followed');
    k8s.appendLog(ns, 'web-7d9c5b6f4-fghij', 'web', 'b4 GET /healthz 200');
    const a3 = await stream.waitFor((e) => e.event === 'line' && e.data.line === 'a3 GET / 200', 'a line appended later');
    assert.equal(a3.data.pod, 'web-7d9c5b6f4-abcde');
    assert.equal(a3.data.container, 'web');
    await stream.waitFor((e) => e.event === 'line' && e.data.line === 'b4 GET /healthz 200', 'the other pod\'s line');
    assert.ok(!stream.events.some((e) => e.data?.line === 'p2 not followed'));

    const closedBefore = k8s.logs.closedFollows;
    stream.close();
    await until(() => k8s.logs.openFollows === 0, 'the stand-in sees its follows closed');
    assert.equal(k8s.logs.closedFollows, closedBefore + 2);
  });

  test('a stream ends when every container\'s log ended', async () => {
    const stream = await follow(A, kubeInstall, '&container=proxy');
    await until(() => k8s.logs.openFollows === 1, 'the stand-in holds the follow');
    // What the API server does when a pod goes: the log's response ends.
    k8s.logs.close();
    const end = await stream.waitFor((e) => e.event === 'end', 'its end');
    assert.equal(end.data.reason, 'streams_closed');
  });

  test('rights are decided as the stream goes: a member removed from the workspace, or a revoked token, ends it (access_revoked)', async () => {
    const dave = await t.user('dave');
    const added = await t.request('POST', `/v1/workspaces/${A.ws}/members`, f.opts(A, { body: { email: dave.email, role: 'member' } }));
    assert.equal(added.status, 201, added.text);
    const D: Caller = { user: dave, ws: A.ws };
    const stream = await follow(D, kubeInstall, '&container=proxy');
    assert.equal(stream.status, 200, stream.text());
    await until(() => k8s.logs.openFollows >= 1, 'the stand-in holds the follow');
    const removed = await t.request('DELETE', `/v1/workspaces/${A.ws}/members/${dave.id}`, f.opts(A));
    assert.ok(removed.status === 204 || removed.status === 200, removed.text);
    const end = await stream.waitFor((e) => e.event === 'end', 'its end');
    assert.equal(end.data.reason, 'access_revoked');
    await stream.ended;
    assert.equal((await logs(D, kubeInstall)).status, 403, 'and a new request is refused');

    // An API token of the workspace, revoked while it follows.
    const made = await t.request('POST', '/v1/api_tokens', f.opts(A, { body: { name: 'logs reader', role: 'member' } }));
    assert.equal(made.status, 201, made.text);
    const viaToken = await open(port, `/v1/installs/${kubeInstall}/logs?follow=true&container=proxy`, { authorization: `Bearer ${made.body.token}`, accept: 'text/event-stream' });
    assert.equal(viaToken.status, 200, viaToken.text());
    const revoked = await t.request('DELETE', `/v1/api_tokens/${made.body.id}`, f.opts(A));
    assert.ok(revoked.status === 204 || revoked.status === 200, revoked.text);
    const tokenEnd = await viaToken.waitFor((e) => e.event === 'end', 'its end');
    assert.equal(tokenEnd.data.reason, 'access_revoked');
  });

  test('past the cap of open streams: 429 in the error shape, and a slot comes back when one closes', async () => {
    const first = await follow(A, kubeInstall);
    const second = await follow(A, kubeInstall);
    assert.equal(first.status, 200);
    assert.equal(second.status, 200);
    const third = await follow(A, kubeInstall);
    await third.ended;
    assert.equal(third.status, 429, third.text());
    const body = JSON.parse(third.text());
    assert.equal(body.error.code, 'RESOURCE_EXHAUSTED');
    assert.equal(body.error.reason, 'TOO_MANY_LONG_REQUESTS');
    // A read without follow ends at once: it takes no slot.
    assert.equal((await logs(A, kubeInstall, '?tail=1&follow=false')).status, 200);
    first.close();
    second.close();
    let again: Open | undefined;
    await until(async () => {
      again?.close();
      again = await follow(A, kubeInstall);
      return again.status === 200;
    }, 'a slot is free again');
    again!.close();
  });

  test('bad parameters are 400 naming the field; another workspace\'s install and an unknown id are 404', async () => {
    for (const [query, field] of [
      ['?tail=0', 'tail'], ['?tail=5001', 'tail'], ['?tail=ten', 'tail'], ['?since=-1', 'since'], ['?since=1.5', 'since'],
      ['?container=Bad_Name', 'container'], [`?container=${'a'.repeat(64)}`, 'container'], ['?follow=maybe', 'follow'], ['?lines=3', ''],
    ] as const) {
      const res = await logs(A, kubeInstall, query);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.equal(res.body.error.code, 'INVALID_ARGUMENT', query);
      if (field) assert.ok(JSON.stringify(res.body.error).includes(field), `${query}: ${res.text}`);
    }
    const other = await logs(B, kubeInstall);
    assert.equal(other.status, 404, other.text);
    assert.equal(other.body.error.code, 'NOT_FOUND');
    const otherFollow = await follow(B, kubeInstall);
    await otherFollow.ended;
    assert.equal(otherFollow.status, 404, otherFollow.text());
    assert.equal((await logs(A, 'inst_01kaxq3m7y0c9v8t6r5p4n3m2k')).status, 404);
  });

  test('a cluster that refuses is 502, one that fails is 503, each with its reason', async () => {
    k8s.objects.forbidden.add('pods');
    try {
      const res = await logs(A, kubeInstall);
      assert.equal(res.status, 502, res.text);
      assert.equal(res.body.error.reason, 'CLUSTER_ERROR');
      assert.match(res.body.error.message, /access forbidden \(HTTP 403\)/);
      const stream = await follow(A, kubeInstall);
      await stream.ended;
      assert.equal(stream.status, 502, stream.text());
    } finally {
      k8s.objects.forbidden.delete('pods');
    }
    k8s.failRemaining = 1;
    const res = await logs(A, kubeInstall);
    assert.equal(res.status, 503, res.text);
    assert.equal(res.body.error.reason, 'CLUSTER_UNREACHABLE');
    assert.equal(res.headers['retry-after'], '10');
    assert.ok(!res.text.includes('standin-token'), 'no credential in the error');
  });

  test('a cluster that does not answer is 503 after the driver\'s timeout, never a hang', async () => {
    // The service's driver with a short timeout (10 s by default), against pods/log requests never answered.
    const drivers = t.services.clusterDrivers;
    const real = drivers.get('kubernetes')!;
    drivers.set('kubernetes', createKubernetesDriver({ requestTimeoutMs: 300 }));
    k8s.logs.stall = true;
    try {
      const res = await logs(A, kubeInstall);
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.error.reason, 'CLUSTER_UNREACHABLE');
      assert.match(res.body.error.message, /did not answer within 0\.3 s/);
      const stream = await follow(A, kubeInstall);
      await stream.ended;
      assert.equal(stream.status, 503, stream.text());
      await until(() => k8s.requests.filter((r) => r.path.endsWith('/log')).length > 0 && k8s.logs.stalledOpen === 0, 'the abandoned requests are closed');
    } finally {
      k8s.logs.stall = false;
      drivers.set('kubernetes', real);
    }
  });

  test('over TLS with a client certificate: the logs are read with the kubeconfig\'s CA and certificate', async () => {
    const tls = await startK8sStandin({ https: true });
    try {
      tls.objects.statusFor = readyStatus;
      const kubeconfig = standinKubeconfig(tls.url, { caData: Buffer.from(STANDIN_SERVER_CERT).toString('base64'), token: null, clientCertificate: true });
      const reg = await t.request('POST', '/v1/clusters', f.opts(A, { body: { name: 'tls', provider: 'kubernetes', kubeconfig } }));
      assert.equal(reg.status, 202, reg.text);
      assert.equal((await f.waitOp(A, reg.body.id)).state, 'SUCCEEDED');
      const pkg = await f.pkg(A);
      await f.version(A, pkg, '1.0.0', K8S_MANIFEST, SCHEMA);
      const id: string = (await f.healthyInstall(A, pkg, reg.body.owner_id)).owner_id;
      tls.objects.deletePods(installNamespace(id));
      tls.addPod(installNamespace(id), 'web-5f6d7c8b9-tlsok', ['web']);
      tls.appendLog(installNamespace(id), 'web-5f6d7c8b9-tlsok', 'web', 'served over mutual TLS');
      const res = await logs(A, id);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.items.map((l: { pod: string; line: string }) => `${l.pod} ${l.line}`), ['web-5f6d7c8b9-tlsok served over mutual TLS']);
      const asked = tls.requests.filter((r) => r.path.includes('/pods'));
      assert.ok(asked.length >= 2 && asked.every((r) => r.clientCertCn === 'svc-test-client' && r.authorization === undefined), JSON.stringify(asked));
    } finally {
      await tls.close();
    }
  });
});
