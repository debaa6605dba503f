// `svc installs logs` (issue 36) against a real `svc serve` and an install on the stand-in
// Kubernetes API server: `pod/container | line` for several containers, the bare lines for one,
// --since as a duration, --json, a usage error before any request, and -f following a line
// appended later until the install's deletion ends the stream.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { installNamespace } from '../src/drivers/cluster/driver.js';
import { parseSince } from '../src/cli/install-logs.js';
import { createTestDatabase, type TestDatabase } from './harness.js';
import { cliSession } from './cli-session.js';
import { readyStatus, standinKubeconfig, startK8sStandin, type K8sStandin } from './k8s-standin.js';
import { dbEnv, startSvc, type RunningSvc } from './processes.js';

const OWNER_TOKEN = 'CliOwner0Token0For0InstallLogs00'; // 32 characters of [A-Za-z0-9]

const MANIFEST = {
  routes: [{ route_key: 'web', service: { name: 'web', port: 80 } }],
  resources: [{
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' },
    spec: { selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } } },
  }],
};

describe('svc installs logs', () => {
  let db: TestDatabase;
  let server: RunningSvc;
  let k8s: K8sStandin;
  let dir: string;
  let ws: string;
  let install: string;
  let ns: string;

  const { cli, ok, api } = cliSession(() => ({ url: server.url, token: OWNER_TOKEN, ws, configHome: dir }));

  async function waitOp(id: string) {
    const res = await api('POST', `/v1/operations/${id}:wait?timeout=30`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.state, 'SUCCEEDED', res.text);
    return res.body;
  }

  before(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'svc-cli-logs-'));
    k8s = await startK8sStandin();
    k8s.objects.statusFor = readyStatus;
    server = await startSvc(dbEnv(db, { SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: OWNER_TOKEN }));
    const created = await fetch(`${server.url}/v1/workspaces`, {
      method: 'POST', headers: { authorization: `Bearer ${OWNER_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Logs' }),
    });
    ws = ((await created.json()) as { id: string }).id;
    const cluster = await api('POST', '/v1/clusters', { name: 'prod', provider: 'kubernetes', kubeconfig: standinKubeconfig(k8s.url) });
    assert.equal(cluster.status, 202, cluster.text);
    await waitOp(cluster.body.id);
    const pkg = await api('POST', '/v1/packages', { name: 'web' });
    const version = await api('POST', `/v1/packages/${pkg.body.id}/versions`, { semver: '1.0.0', input_schema: { type: 'object' }, manifest: MANIFEST });
    assert.equal(version.status, 201, version.text);
    const res = await api('POST', '/v1/installs', { package_id: pkg.body.id, package_version_pin: { kind: 'latest' }, cluster_id: cluster.body.owner_id });
    assert.equal(res.status, 202, res.text);
    install = (await waitOp(res.body.id)).response.install_id;
    ns = installNamespace(install);
    k8s.addPod(ns, 'web-6c8f9d7b5-k2m4p', ['web', 'proxy']);
    k8s.addPod(ns, 'web-6c8f9d7b5-q7r9s', ['web']);
    const t0 = Date.now() - 60_000;
    k8s.appendLog(ns, 'web-6c8f9d7b5-k2m4p', 'web', 'listening on :8080', new Date(t0));
    k8s.appendLog(ns, 'web-6c8f9d7b5-k2m4p', 'proxy', 'proxy ready', new Date(t0 + 1000));
    k8s.appendLog(ns, 'web-6c8f9d7b5-q7r9s', 'web', 'GET / 200', new Date(t0 + 2000));
    k8s.appendLog(ns, 'web-6c8f9d7b5-q7r9s', 'web', 'an old line', new Date(t0 - 3_600_000));
  });
  after(async () => {
    await server?.stop();
    await k8s?.close();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('the lines with their pod and container, the bare lines of one container, --since as a duration, --json', async () => {
    const all = ok(await cli(['installs', 'logs', install, '--since', '10m']));
    assert.equal(all.stdout, [
      'web-6c8f9d7b5-k2m4p/web | listening on :8080',
      'web-6c8f9d7b5-k2m4p/proxy | proxy ready',
      'web-6c8f9d7b5-q7r9s/web | GET / 200',
      '',
    ].join('\n'));
    const proxy = ok(await cli(['installs', 'logs', install, '--container', 'proxy']));
    assert.equal(proxy.stdout, 'proxy ready\n');
    const json = JSON.parse(ok(await cli(['installs', 'logs', install, '--tail', '1', '--container', 'proxy', '--json'])).stdout);
    assert.deepEqual(Object.keys(json).sort(), ['items', 'truncated']);
    assert.equal(json.items[0].pod, 'web-6c8f9d7b5-k2m4p');
    const withOld = ok(await cli(['installs', 'logs', install, '--container', 'web']));
    assert.match(withOld.stdout, /\| an old line\n/);

    const bad = await cli(['installs', 'logs', install, '--since', 'yesterday']);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--since/);
    const badTail = await cli(['installs', 'logs', install, '--tail', '0']);
    assert.equal(badTail.code, 2, badTail.stderr);
  });

  test('--since reads a duration back from now or a Unix time', () => {
    const now = Date.UTC(2026, 11, 8, 0, 0, 0);
    assert.equal(parseSince('10m', now), now / 1000 - 600);
    assert.equal(parseSince('2h', now), now / 1000 - 7200);
    assert.equal(parseSince('1765152000', now), 1765152000);
    assert.throws(() => parseSince('-5m', now), /--since/);
  });

  test('-f prints the lines appended later, until the install is deleted', async () => {
    const following = cli(['installs', 'logs', install, '-f', '--container', 'web', '--tail', '1']);
    for (let i = 0; i < 1000 && k8s.logs.openFollows < 2; i++) await sleep(10);
    assert.equal(k8s.logs.openFollows, 2, 'the server follows both pods\' web containers');
    k8s.appendLog(ns, 'web-6c8f9d7b5-q7r9s', 'web', 'GET /later 200');
    const current = await api('GET', `/v1/installs/${install}`);
    const del = await fetch(`${server.url}/v1/installs/${install}`, {
      method: 'DELETE', headers: { authorization: `Bearer ${OWNER_TOKEN}`, 'svc-context': ws, 'if-match': current.body.etag },
    });
    assert.equal(del.status, 202);
    const done = ok(await following);
    assert.match(done.stdout, /^web-6c8f9d7b5-q7r9s\/web \| GET \/later 200$/m);
    assert.match(done.stdout, /^web-6c8f9d7b5-k2m4p\/web \| listening on :8080$/m);
    assert.match(done.stderr, /the log stream ended \(install deleted\)/);
  });
});
