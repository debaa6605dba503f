// Installs whose values reference secrets (issue 11, scope 5), on the local driver and on the
// Kubernetes stand-in: the reference is checked at create and update (roles, existence, state,
// where it may stand), the render holds only the reference and the version it resolved to, the
// worker reads the value at deploy (audited), the local driver records an HMAC and the stand-in
// receives a Secret the workload refers to; a version destroyed meanwhile fails the deploy.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { installNamespace } from '../src/drivers/cluster/driver.js';
import { secretDigest } from '../src/drivers/cluster/local.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { InstallFixtures, type Caller } from './installs-fixtures.js';
import { readyStatus, standinKubeconfig, startK8sStandin, type K8sStandin } from './k8s-standin.js';
import { assertError, SecretsApi } from './secrets-fixtures.js';

const SCHEMA = {
  type: 'object',
  properties: {
    db: { type: 'object', properties: { password: { type: 'string', minLength: 30, format: 'uri' } }, additionalProperties: false },
    replicas: { type: 'integer', default: 1 },
    greeting: { type: 'string', default: 'hi' },
  },
  additionalProperties: false,
};
const CONTAINER = {
  name: 'app', image: 'app:1',
  env: [{ name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: '{{ secret.name }}', key: '{{ secret.key.db.password }}' } } }, { name: 'GREETING', value: '{{ values.greeting }}' }],
};
const MANIFEST = {
  routes: [{ route_key: 'web' }],
  resources: [{
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'app' },
    spec: { replicas: '{{ values.replicas }}', selector: { matchLabels: { app: 'app' } }, template: { metadata: { labels: { app: 'app' } }, spec: { containers: [CONTAINER] } } },
  }],
};
/** The same package, but writing the password into an environment value as text. */
const INLINE = structuredClone(MANIFEST);
INLINE.resources[0]!.spec.template.spec.containers[0]!.env[1] = { name: 'GREETING', value: 'pw={{ values.db.password }}' };

describe('installs with secret references', () => {
  let t: TestApp;
  let fx: InstallFixtures;
  let owner: TestUser;
  let member: TestUser;
  let ws: string;
  let api: SecretsApi;
  let me: Caller;
  let asMember: Caller;
  let pkgId: string;
  let inlinePkg: string;
  let clusterId: string;
  let secretId: string;
  let k8s: K8sStandin;

  const refValues = (ref: Record<string, unknown>) => ({ db: { password: ref } });
  const install = (c: Caller, pkg: string, values: unknown, cluster = clusterId) =>
    fx.createInstall(c, { package_id: pkg, package_version_pin: { kind: 'latest' }, cluster_id: cluster, initial_values: values });

  before(async () => {
    t = await startTestApp();
    fx = new InstallFixtures(t);
    owner = await t.user('owner');
    member = await t.user('member');
    ws = (await t.workspace(owner, 'Deploys')).id;
    await t.addMember(owner, ws, member, 'member');
    me = { user: owner, ws };
    asMember = { user: member, ws };
    api = new SecretsApi(t, { token: owner.token, ws });
    pkgId = await fx.pkg(me);
    await fx.version(me, pkgId, '1.0.0', MANIFEST, SCHEMA);
    inlinePkg = await fx.pkg(me);
    await fx.version(me, inlinePkg, '1.0.0', INLINE, SCHEMA);
    clusterId = await fx.cluster(me);
    secretId = (await api.create({ name: 'db password', value: 'first-password' })).id;
    k8s = await startK8sStandin();
  });
  after(async () => {
    await k8s.close();
    await t.close();
  });

  test('local driver: the render holds the reference, the driver an HMAC, the audit log the read', async () => {
    const op = await fx.healthyInstall(me, pkgId, clusterId, refValues({ $secret: secretId }));
    const installId = op.owner_id;
    const got = await fx.getInstall(me, installId);
    assert.deepEqual(got.body.values.db, { password: { $secret: secretId } }, 'the install keeps the reference as given');
    const render = await api.call('GET', `/v1/installs/${installId}/renders/${op.response.render_id}`);
    const v1 = (await api.call('GET', `/v1/secrets/${secretId}/versions`)).body.data[0];
    assert.deepEqual(render.body.manifest.secret, { name: 'svc-secrets', refs: [{ key: 'db.password', secret_id: secretId, version_id: v1.id, version_number: 1 }] });
    assert.deepEqual(render.body.manifest.resources[0].spec.template.spec.containers[0].env[0].valueFrom, { secretKeyRef: { name: 'svc-secrets', key: 'db.password' } });
    assert.ok(!render.text.includes('first-password'));

    const digestKey = t.services.keyring.deriveKey('local-secret-digest');
    const row = await t.services.db.selectFrom('local_deployments').selectAll().where('install_id', '=', installId).executeTakeFirstOrThrow();
    assert.equal(row.secret_digest, secretDigest(digestKey, { name: 'svc-secrets', data: { 'db.password': 'first-password' } }));

    const reads = (await api.call('GET', `/v1/audit_events?action=secret.version.access&resource_id=${v1.id}`)).body.data;
    assert.equal(reads.length, 1);
    assert.deepEqual([reads[0].actor, reads[0].request_id], [{ type: 'user', id: owner.id, name: null, email: owner.email }, null]);
    assert.deepEqual(reads[0].metadata, {
      secret_id: secretId, version_number: '1', via: 'install.deploy', install_id: installId, operation_id: op.id, render_id: op.response.render_id,
    });

    // A new version and an update: the new render pins version 2; the digest follows the value.
    await api.addVersion(secretId, 'second-password');
    const etag = got.body.etag;
    const upd = await t.request('PATCH', `/v1/installs/${installId}`, fx.opts(me, { headers: { 'if-match': etag }, body: { values: { ...got.body.values, replicas: 2 } } }));
    assert.equal(upd.status, 202, upd.text);
    const done = await fx.waitOp(me, upd.body.id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    const second = await api.call('GET', `/v1/installs/${installId}/renders/${done.response.render_id}`);
    assert.equal(second.body.manifest.secret.refs[0].version_number, 2);
    assert.notEqual(second.body.content_hash, render.body.content_hash);
    const after = await t.services.db.selectFrom('local_deployments').selectAll().where('install_id', '=', installId).executeTakeFirstOrThrow();
    assert.equal(after.secret_digest, secretDigest(digestKey, { name: 'svc-secrets', data: { 'db.password': 'second-password' } }));
  });

  test('members may not set or keep references (403); refusals change nothing', async () => {
    assertError(await install(asMember, pkgId, refValues({ $secret: secretId })), 403, 'PERMISSION_DENIED', 'SECRET_REF_FORBIDDEN');
    const existing = (await fx.listAll(me)).find((i) => i.package_id === pkgId)!;
    const etag = (await fx.getInstall(me, existing.id)).body.etag;
    const res = await t.request('PATCH', `/v1/installs/${existing.id}`, fx.opts(asMember, { headers: { 'if-match': etag }, body: { package_version_pin: { kind: 'latest' } } }));
    assertError(res, 403, 'PERMISSION_DENIED', 'SECRET_REF_FORBIDDEN');
    // Without references a member installs as before.
    assert.equal((await install(asMember, pkgId, { replicas: 1 })).status, 202);
  });

  test('bad references are 400 naming the field: unknown, malformed, unreadable, wrongly placed or written as text', async () => {
    const other = await t.workspace(owner, 'Other');
    const foreign = await new SecretsApi(t, { token: owner.token, ws: other.id }).create({ name: 'foreign', value: 'x' });
    const disabled = await api.create({ name: 'disabled', value: 'x' });
    await api.move(disabled.id, (await api.call('GET', `/v1/secrets/${disabled.id}/versions`)).body.data[0].id, 'disable');
    const deleted = await api.create({ name: 'deleted', value: 'x' });
    await api.call('DELETE', `/v1/secrets/${deleted.id}`, { headers: { 'if-match': deleted.etag } });
    const field = 'body.initial_values.db.password';
    const cases: [unknown, string][] = [
      [refValues({ $secret: foreign.id }), 'SECRET_REF_INVALID'],
      [refValues({ $secret: 'sec_nope' }), 'SECRET_REF_INVALID'],
      [refValues({ $secret: secretId, version: 0 }), 'SECRET_REF_INVALID'],
      [refValues({ $secret: secretId, version: 9 }), 'SECRET_REF_INVALID'],
      [refValues({ $secret: secretId, version: 'no-such-alias' }), 'SECRET_REF_INVALID'],
      [refValues({ $secret: secretId, extra: true }), 'SECRET_REF_INVALID'],
      [refValues({ $secret: disabled.id }), 'SECRET_REF_INVALID'],
      [refValues({ $secret: deleted.id }), 'SECRET_REF_INVALID'],
    ];
    const before = (await fx.listAll(me)).length;
    for (const [values, reason] of cases) {
      const res = await install(me, pkgId, values);
      assertError(res, 400, 'INVALID_ARGUMENT', reason);
      assert.equal(res.body.error.field_violations[0].field, field, res.text);
    }
    const typed = await install(me, pkgId, { replicas: { $secret: secretId } });
    assertError(typed, 400, 'INVALID_ARGUMENT', 'VALUES_INVALID');
    assert.match(typed.body.error.field_violations[0].description, /secret reference stands for a string/);
    const inline = await install(me, inlinePkg, refValues({ $secret: secretId }));
    assertError(inline, 400, 'INVALID_ARGUMENT', 'SECRET_REF_INVALID');
    assert.match(inline.body.error.message, /\{\{ secret\.key\.db\.password \}\}/);
    assert.equal((await fx.listAll(me)).length, before, 'no install was created');
    // A number and an alias name versions too.
    const etag = (await api.get(secretId)).body.etag;
    await api.call('PATCH', `/v1/secrets/${secretId}`, { headers: { 'if-match': etag }, body: { version_aliases: { stable: 1 } } });
    for (const version of [1, 'stable']) {
      const op = await fx.healthyInstall(me, pkgId, clusterId, refValues({ $secret: secretId, version }));
      const render = await api.call('GET', `/v1/installs/${op.owner_id}/renders/${op.response.render_id}`);
      assert.equal(render.body.manifest.secret.refs[0].version_number, 1);
    }
  });

  test('a version destroyed while a deploy retries fails the deploy, naming the version, never the value', async () => {
    const s = await api.create({ name: 'short-lived', value: 'short-lived-value' });
    const slow = await fx.cluster(me, [{ action: 'deploy', fail_times: 1, latency_ms: 300 }]);
    const res = await install(me, pkgId, refValues({ $secret: s.id }), slow);
    assert.equal(res.status, 202, res.text);
    // The first apply has read the value and waits on the simulated cluster: destroy the version then.
    let applying = false;
    for (let i = 0; i < 500 && !applying; i++) {
      applying = (await fx.getOp(me, res.body.id)).steps.some((st: { name: string; status: string }) => st.name === 'apply' && st.status === 'running');
      if (!applying) await sleep(5);
    }
    assert.ok(applying, 'the apply step ran');
    const v = (await api.call('GET', `/v1/secrets/${s.id}/versions`)).body.data[0];
    await api.move(s.id, v.id, 'destroy');
    const done = await fx.waitOp(me, res.body.id);
    assert.equal(done.state, 'FAILED', JSON.stringify(done));
    assert.match(done.error.message, new RegExp(`secret ${s.id} version .*destroyed`));
    assert.ok(!JSON.stringify(done).includes('short-lived-value'));
  });

  test('kubernetes stand-in: the install\'s Secret is applied before the workload that refers to it', async () => {
    const created = await t.request('POST', '/v1/clusters', fx.opts(me, { body: { name: 'k8s', provider: 'kubernetes', kubeconfig: standinKubeconfig(k8s.url) } }));
    assert.equal(created.status, 202, created.text);
    assert.equal((await fx.waitOp(me, created.body.id)).state, 'SUCCEEDED');
    k8s.objects.statusFor = readyStatus;
    k8s.requests.length = 0;
    const res = await install(me, pkgId, refValues({ $secret: secretId, version: 'latest' }), created.body.owner_id);
    assert.equal(res.status, 202, res.text);
    const done = await fx.waitOp(me, res.body.id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    const ns = installNamespace(res.body.owner_id);
    const applied = k8s.objects.get('v1', 'Secret', ns, 'svc-secrets')!;
    assert.ok(applied, 'the stand-in received the Secret');
    assert.equal(applied.type, 'Opaque');
    assert.deepEqual(applied.data, { 'db.password': Buffer.from('second-password').toString('base64') });
    assert.equal((applied.metadata as { labels: Record<string, string> }).labels['svc.dev/install-id'], res.body.owner_id);
    const deployment = k8s.objects.get('apps/v1', 'Deployment', ns, 'app')! as { spec: { template: { spec: { containers: { env: unknown[] }[] } } } };
    assert.deepEqual(deployment.spec.template.spec.containers[0]!.env[0], { name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 'svc-secrets', key: 'db.password' } } });
    const patches = k8s.requests.filter((r) => r.method === 'PATCH').map((r) => r.path);
    assert.deepEqual(patches.slice(0, 3), [`/api/v1/namespaces/${ns}`, `/api/v1/namespaces/${ns}/secrets/svc-secrets`, `/apis/apps/v1/namespaces/${ns}/deployments/app`]);
    const render = await api.call('GET', `/v1/installs/${res.body.owner_id}/renders/${done.response.render_id}`);
    assert.ok(!render.text.includes('second-password') && !render.text.includes(Buffer.from('second-password').toString('base64')));
  });
});
