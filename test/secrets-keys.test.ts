// Key rotation over one database run by the service under successive keys (API.md 8.1): values
// written under key A are read after switching to key B with A in SVC_PREVIOUS_SECRET_KEYS, also
// the kubeconfigs and signing keys sealed before the keyring existed; without A they do not open;
// `rotate-keys` interrupted halfway resumes, two runs at once count each row once, the command
// prints what it re-wrapped, and afterwards everything opens under B alone.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import { encrypt, deriveKey } from '../src/platform/crypto.js';
import { newId } from '../src/platform/ids.js';
import { keyringOf } from '../src/platform/keyring.js';
import { rotateKeys } from '../src/modules/secrets/rotate-keys.js';
import { createTestDatabase, startTestApp, type TestApp, type TestDatabase, type TestUser } from './harness.js';
import { dbEnv, runSvc } from './processes.js';
import { standinKubeconfig, startK8sStandin, type K8sStandin } from './k8s-standin.js';
import { assertError, SecretsApi } from './secrets-fixtures.js';

const KEY_A = randomBytes(32).toString('hex');
const KEY_B = randomBytes(32).toString('hex');
const VERSIONS = 12;
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

describe('key rotation', () => {
  let database: TestDatabase;
  let standin: K8sStandin;
  let owner: TestUser;
  let ws: string;
  let secretId: string;
  let clusterId: string;
  let client: { id: string; client_secret: string };
  const values: string[] = [];

  /** The service over the shared database with these keys; closed by the caller. */
  const run = (env: Record<string, string>) => startTestApp(env, { database });
  const withKeys = (current: string, previous?: string) => ({ SVC_SECRET_KEY: current, ...(previous ? { SVC_PREVIOUS_SECRET_KEYS: previous } : {}) });

  async function using<T>(env: Record<string, string>, fn: (t: TestApp, api: SecretsApi) => Promise<T>): Promise<T> {
    const t = await run(env);
    try {
      return await fn(t, new SecretsApi(t, { token: owner.token, ws }));
    } finally {
      await t.close();
    }
  }

  /** Every value reads back, the kubeconfig opens (a refresh succeeds) and a JWT is signed. */
  async function everythingOpens(t: TestApp, api: SecretsApi): Promise<void> {
    for (let n = 1; n <= values.length; n++) assert.equal(await api.value(secretId, String(n)), values[n - 1], `version ${n}`);
    const op = await api.call('POST', `/v1/clusters/${clusterId}/capabilities:refresh`);
    assert.equal(op.status, 202, op.text);
    const done = await api.call('POST', `/v1/operations/${op.body.id}:wait?timeout=30`);
    assert.equal(done.body.state, 'SUCCEEDED', done.text);
    const token = await t.request('POST', '/oauth/token', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: form({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.client_secret }),
    });
    assert.equal(token.status, 200, token.text);
  }

  const keyIdOf = (key: string) => keyringOf({ secretKey: Buffer.from(key, 'hex'), previousSecretKeys: [] }).currentKeyId;

  before(async () => {
    database = await createTestDatabase();
    standin = await startK8sStandin();
    const t = await run(withKeys(KEY_A));
    try {
      owner = await t.user('owner');
      ws = (await t.workspace(owner, 'Keys')).id;
      const api = new SecretsApi(t, { token: owner.token, ws });
      for (let i = 0; i < VERSIONS; i++) values.push(`value-${i}-${randomBytes(6).toString('hex')}`);
      secretId = (await api.create({ name: 'rotated', value: values[0] })).id;
      for (const v of values.slice(1)) await api.addVersion(secretId, v);
      // A kubeconfig and a signing key as the service stored them before the keyring existed.
      const now = Math.floor(Date.now() / 1000);
      clusterId = newId('cluster');
      await t.services.db.insertInto('clusters').values({
        id: clusterId, workspace_id: ws, name: 'legacy', state: 'active', provider: 'kubernetes', reconciling: 0, options: '{}',
        kubeconfig_sealed: encrypt(deriveKey(Buffer.from(KEY_A, 'hex'), 'kubeconfig'), standinKubeconfig(standin.url)),
        capabilities: null, capabilities_observed_at: null, created_at: now, updated_at: now, revision: 1, node_count: 0,
      }).execute();
      const pair = await generateKeyPair('EdDSA', { extractable: true });
      await t.services.db.insertInto('signing_keys').values({
        id: newId('signingKey'), algorithm: 'EdDSA', public_jwk: JSON.stringify(await exportJWK(pair.publicKey)),
        private_jwk_sealed: encrypt(deriveKey(Buffer.from(KEY_A, 'hex'), 'signing-key'), JSON.stringify(await exportJWK(pair.privateKey))),
        created_at: 0,
      }).execute();
      const created = await api.call('POST', '/v1/oauth_clients', { body: { name: 'ci' } });
      assert.equal(created.status, 201, created.text);
      client = created.body;
      await everythingOpens(t, api);
    } finally {
      await t.close();
    }
  });
  after(async () => {
    await standin.close();
    await database.drop();
  });

  test('under key B with A as previous, everything written under A opens; new values are sealed under B', async () => {
    await using(withKeys(KEY_B, KEY_A), async (t, api) => {
      await everythingOpens(t, api);
      const v = await api.addVersion(secretId, 'written-under-b');
      values.push('written-under-b');
      const row = await t.services.db.selectFrom('secret_versions').select('key_id').where('id', '=', v.id).executeTakeFirstOrThrow();
      assert.equal(row.key_id, keyIdOf(KEY_B));
    });
  });

  test('under key B alone, before rotation, values sealed under A do not open (422 naming the key settings, no 500)', async () => {
    await using(withKeys(KEY_B), async (_t, api) => {
      const unreadable = await api.access(secretId, '1');
      assertError(unreadable, 422, 'FAILED_PRECONDITION', 'VALUE_UNREADABLE');
      assert.match(unreadable.body.error.message, /the key it was sealed with is not among the service's keys \(SVC_SECRET_KEY, SVC_PREVIOUS_SECRET_KEYS\)/);
      assert.equal(await api.value(secretId, 'latest'), 'written-under-b');
    });
  });

  test('a rotation stopped after its first batch resumes; two runs at once count each row once; the command prints its counts', async () => {
    await using(withKeys(KEY_B, KEY_A), async (t) => {
      const keyring = keyringOf(t.config);
      const stop = new Error('stopped after one batch');
      await assert.rejects(rotateKeys(t.services.db, keyring, { batchSize: 3, onBatch: () => { throw stop; } }), stop);
      const counts = async () => {
        const rows = await t.services.db.selectFrom('secret_versions').select('key_id').where('secret_id', '=', secretId).execute();
        return { a: rows.filter((r) => r.key_id === keyIdOf(KEY_A)).length, b: rows.filter((r) => r.key_id === keyIdOf(KEY_B)).length };
      };
      assert.deepEqual(await counts(), { a: VERSIONS - 3, b: 4 }, 'the first batch committed, the rest did not run');
      // The values re-wrapped so far, and those not yet, all open meanwhile.
      const api = new SecretsApi(t, { token: owner.token, ws });
      assert.equal(await api.value(secretId, '1'), values[0]);
      assert.equal(await api.value(secretId, String(VERSIONS)), values[VERSIONS - 1]);

      const [x, y] = await Promise.all([
        rotateKeys(t.services.db, keyring, { batchSize: 2 }),
        rotateKeys(t.services.db, keyring, { batchSize: 5 }),
      ]);
      assert.equal(x['secret versions']!.rewrapped + y['secret versions']!.rewrapped, VERSIONS - 3);
      assert.equal(x['cluster kubeconfigs']!.rewrapped + y['cluster kubeconfigs']!.rewrapped, 1);
      assert.equal(x['signing keys']!.rewrapped + y['signing keys']!.rewrapped, 1, 'the legacy signing key (the oldest, so the one in use)');
      assert.deepEqual(await counts(), { a: 0, b: VERSIONS + 1 });
      const cluster = await t.services.db.selectFrom('clusters').select('kubeconfig_sealed').where('id', '=', clusterId).executeTakeFirstOrThrow();
      assert.match(cluster.kubeconfig_sealed!, new RegExp(`^k1\\.${keyIdOf(KEY_B)}\\.`));
    });
    const again = await runSvc(['admin', 'rotate-keys'], dbEnv(database, withKeys(KEY_B, KEY_A)));
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, new RegExp(`rotating to key ${keyIdOf(KEY_B)} \\(previous keys: ${keyIdOf(KEY_A)}\\)`));
    assert.match(again.stdout, /secret versions: 0 re-wrapped\ncluster kubeconfigs: 0 re-wrapped\nsigning keys: 0 re-wrapped\n/);
  });

  test('after rotate-keys, key A can go: everything opens under B alone', async () => {
    await using(withKeys(KEY_B), async (t, api) => {
      await everythingOpens(t, api);
    });
    // A run that meets a value none of its keys open says so and fails.
    const wrong = await runSvc(['admin', 'rotate-keys', '--batch-size', '50'], dbEnv(database, withKeys(KEY_A)));
    assert.equal(wrong.code, 1);
    assert.match(wrong.stdout, new RegExp(`secret versions: 0 re-wrapped, ${VERSIONS + 1} could not be opened with any configured key`));
    assert.match(wrong.stderr, /add the key they were sealed with/);
    const usage = await runSvc(['admin', 'rotate-keys', '--batch-size', '0'], dbEnv(database, withKeys(KEY_B)));
    assert.equal(usage.code, 2);
  });
});
