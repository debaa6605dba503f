// Issue 21, "Rotating the key": the service refuses to start with a key that cannot open what the
// database holds (exit 2, naming the key ids and the setting), found without opening any value;
// `svc admin rotate-keys` finishing with everything under the new key writes that key into the
// data dir's key file (when there is one holding another key), so the README's steps end with a
// plain `svc serve` that reads every value. Through the real `svc serve` and `svc admin`.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { CompiledQuery, sql, type CompiledQuery as Compiled } from 'kysely';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { keyCensus } from '../src/modules/secrets/key-census.js';
import { KUBECONFIG_SEAL } from '../src/modules/clusters/clusters.repo.js';
import { newId } from '../src/platform/ids.js';
import { keyringOf } from '../src/platform/keyring.js';
import { databasesDroppedAfter, DIALECT, startTestApp, type TestDatabase, type TestUser } from './harness.js';
import { runSvc, startSvc, svcCaller } from './processes.js';
import { SecretsApi } from './secrets-fixtures.js';

const keyIdOf = (key: string) => keyringOf({ secretKey: Buffer.from(key, 'hex'), previousSecretKeys: [] }).currentKeyId;
const newKey = () => randomBytes(32).toString('hex');

/** The environment of `svc` over this database: its data dir, the PostgreSQL URL if any, and `keys` (no key: the key file). */
const envOf = (db: TestDatabase, keys: Record<string, string> = {}) => ({
  SVC_DATA_DIR: db.dataDir, ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}), ...keys,
});

/** Writes a user, a workspace and a secret under `keys` (SVC_SECRET_KEY '' : the key file); returns the owner and the secret. */
async function seed(db: TestDatabase, keys: Record<string, string>, name: string): Promise<{ owner: TestUser; ws: string; secretId: string }> {
  const t = await startTestApp(keys, { database: db });
  try {
    const owner = await t.user('owner');
    const ws = (await t.workspace(owner, name)).id;
    const secret = await new SecretsApi(t, { token: owner.token, ws }).create({ name, value: `${name}-value` });
    return { owner, ws, secretId: secret.id };
  } finally {
    await t.close();
  }
}

describe('the key at start, and the key file after a rotation', () => {
  const database = databasesDroppedAfter();

  test('an empty database starts with any key', async () => {
    const db = await database();
    const svc = await startSvc(envOf(db, { SVC_SECRET_KEY: newKey() }));
    assert.equal((await svc.stop()).code, 0);
  });

  test('svc serve refuses to start (exit 2) when values are sealed under a key it was not given, naming the key ids and what to set', async () => {
    const db = await database();
    const A = newKey();
    const B = newKey();
    const { owner, ws, secretId } = await seed(db, { SVC_SECRET_KEY: A }, 'under-a');

    const refused = await runSvc(['serve'], { ...envOf(db, { SVC_SECRET_KEY: B }), PORT: '0', SVC_PREVIEW_PORT: '0' });
    assert.equal(refused.code, 2, refused.stderr);
    assert.doesNotMatch(refused.stdout, /svc listening/);
    assert.match(refused.stderr, new RegExp(`secret versions: 1 sealed under key ${keyIdOf(A)}`));
    assert.match(refused.stderr, new RegExp(`SVC_SECRET_KEY \\(from the environment\\) has key id ${keyIdOf(B)}; SVC_PREVIOUS_SECRET_KEYS is not set`));
    assert.match(refused.stderr, new RegExp(`Start with the key of id ${keyIdOf(A)} as SVC_SECRET_KEY, or add it to SVC_PREVIOUS_SECRET_KEYS`));
    assert.match(refused.stderr, /SVC_LOST_KEY_IDS/);

    // With A as a previous key it starts and reads the value; a lost key named by id starts too.
    const svc = await startSvc(envOf(db, { SVC_SECRET_KEY: B, SVC_PREVIOUS_SECRET_KEYS: A }));
    try {
      const read = await svcCaller(owner.token)(svc.url, 'POST', `/v1/secrets/${secretId}/versions/latest:access`, { headers: { 'svc-context': ws } });
      assert.equal(read.status, 200, JSON.stringify(read.body));
      assert.equal(read.body.value, 'under-a-value');
    } finally {
      await svc.stop();
    }
    const lost = await startSvc(envOf(db, { SVC_SECRET_KEY: B, SVC_LOST_KEY_IDS: keyIdOf(A) }));
    await lost.stop();
    assert.throws(() => loadConfig(envOf(db, { SVC_SECRET_KEY: B, SVC_LOST_KEY_IDS: 'not-a-key-id' })), /SVC_LOST_KEY_IDS must list key ids of 16 hex characters/);

    // The key in the environment and no key file (production): a rotation has no file to write.
    const rotated = await runSvc(['admin', 'rotate-keys'], envOf(db, { SVC_SECRET_KEY: B, SVC_PREVIOUS_SECRET_KEYS: A }));
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.doesNotMatch(rotated.stdout, /secret\.key/);
    assert.equal(existsSync(join(db.dataDir, 'secret.key')), false, 'no key file is created');
    const alone = await startSvc(envOf(db, { SVC_SECRET_KEY: B }));
    await alone.stop();
  });

  test('the README rotation: after rotate-keys with the keys in the environment, a plain svc serve (key file) starts with the new key and reads everything', async () => {
    const db = await database();
    const file = join(db.dataDir, 'secret.key');
    // 0. A service without SVC_SECRET_KEY: its key is generated into the data dir.
    const first = await seed(db, { SVC_SECRET_KEY: '' }, 'under-old');
    const OLD = readFileSync(file, 'utf8').trim();
    const NEW = newKey();
    // 1. The service runs with the new key and the old one as previous, and writes under the new key.
    const second = await seed(db, { SVC_SECRET_KEY: NEW, SVC_PREVIOUS_SECRET_KEYS: OLD }, 'under-new');

    // Without the rotation, a plain start would use the old key from the file: it refuses and says so.
    const trap = await runSvc(['serve'], envOf(db));
    assert.equal(trap.code, 2, trap.stderr);
    assert.match(trap.stderr, new RegExp(`SVC_SECRET_KEY \\(read from ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, as SVC_SECRET_KEY is not set\\) has key id ${keyIdOf(OLD)}`));
    assert.match(trap.stderr, new RegExp(`secret versions: 1 sealed under key ${keyIdOf(NEW)}`));
    assert.match(trap.stderr, /`svc admin rotate-keys` writes it to the key file/);

    // 2. The rotation re-wraps everything and then writes the new key into the file, atomically and owner only.
    const rotated = await runSvc(['admin', 'rotate-keys'], envOf(db, { SVC_SECRET_KEY: NEW, SVC_PREVIOUS_SECRET_KEYS: OLD }));
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /secret versions: 1 re-wrapped/);
    assert.match(rotated.stdout, new RegExp(`secret\\.key: now holds the current key ${keyIdOf(NEW)} \\(it held key ${keyIdOf(OLD)}\\)`));
    assert.equal(readFileSync(file, 'utf8'), `${NEW}\n`);
    assert.equal(statSync(file).mode & 0o777, 0o600);

    // 3. A plain start uses the new key and every value opens.
    const svc = await startSvc(envOf(db));
    try {
      for (const s of [first, second]) {
        const read = await svcCaller(s.owner.token)(svc.url, 'POST', `/v1/secrets/${s.secretId}/versions/latest:access`, { headers: { 'svc-context': s.ws } });
        assert.equal(read.status, 200, JSON.stringify(read.body));
      }
    } finally {
      await svc.stop();
    }
    // Again with nothing left to move: the file already holds the key, nothing is written.
    const again = await runSvc(['admin', 'rotate-keys'], envOf(db, { SVC_SECRET_KEY: NEW }));
    assert.equal(again.code, 0, again.stderr);
    assert.doesNotMatch(again.stdout, /now holds/);
  });

  test('a rotation that leaves values it cannot open does not touch the key file', async () => {
    const db = await database();
    const file = join(db.dataDir, 'secret.key');
    await seed(db, { SVC_SECRET_KEY: '' }, 'under-file-key');
    const held = readFileSync(file, 'utf8');
    const failed = await runSvc(['admin', 'rotate-keys'], envOf(db, { SVC_SECRET_KEY: newKey() }));
    assert.equal(failed.code, 1);
    assert.match(failed.stdout, /1 could not be opened with any configured key/);
    assert.equal(readFileSync(file, 'utf8'), held);
  });

  test('the start check reads key ids from indexes: one probe per distinct key and one count per key, whatever the number of values', async () => {
    const db = await database();
    const A = newKey();
    const B = newKey();
    const seeded = await seed(db, { SVC_SECRET_KEY: A }, 'census');
    const t = await startTestApp({ SVC_SECRET_KEY: B, SVC_PREVIOUS_SECRET_KEYS: A }, { database: db });
    try {
      const api = new SecretsApi(t, { token: seeded.owner.token, ws: seeded.ws });
      for (let i = 0; i < 30; i++) await api.addVersion(seeded.secretId, `v${i}`);
      const now = Math.floor(Date.now() / 1000);
      for (const [i, sealed] of ['k1', 'k1', 'v1'].entries()) {
        const id = newId('cluster');
        const value = sealed === 'k1' ? keyringOf(t.config).seal('kubeconfig', KUBECONFIG_SEAL.context(id)) : 'v1.legacy.form.value';
        await t.services.db.insertInto('clusters').values({
          id, workspace_id: seeded.ws, name: `c${i}`, state: 'active', provider: 'kubernetes', reconciling: 0, options: '{}', kubeconfig_sealed: value,
          capabilities: null, capabilities_observed_at: null, created_at: now, updated_at: now, revision: 1, node_count: 0,
        }).execute();
      }
    } finally {
      await t.close();
    }
    const queries: Compiled[] = [];
    const handle = openDatabase({ databaseUrl: db.databaseUrl, dataDir: db.dataDir, poolSize: 1, log: (e) => { if (e.level === 'query') queries.push(e.query); } });
    try {
      const census = await keyCensus(handle.db);
      const signingKeys = census.filter((c) => c.what === 'signing keys').length;
      assert.deepEqual(census.filter((c) => c.what !== 'signing keys').map((c) => [c.what, c.keyId, c.count]).sort(), [
        ['cluster kubeconfigs', keyIdOf(B), 2],
        ['secret versions', keyIdOf(A), 1],
        ['secret versions', keyIdOf(B), 30],
      ].sort());
      // Per kind: (distinct keys + 1) probes and one count per key; 31 versions cost what 2 would.
      // Two-factor secrets: none here, one probe.
      assert.equal(queries.length, (2 + 1 + 2) + (1 + 1 + 1) + (signingKeys + 1 + signingKeys) + 1);
      const probes = [...queries];
      await sql`analyze`.execute(handle.db);
      for (const q of probes) {
        const plan = await handle.db.connection().execute(async (c) => {
          if (DIALECT === 'postgres') await sql`set enable_seqscan = off`.execute(c);
          const explain = DIALECT === 'postgres' ? 'explain (format json) ' : 'explain query plan ';
          const res = await c.executeQuery(CompiledQuery.raw(explain + q.sql, [...q.parameters]));
          if (DIALECT === 'postgres') await sql`reset enable_seqscan`.execute(c);
          return JSON.stringify(res.rows);
        });
        assert.match(plan, /secret_versions_key_id_idx|clusters_kubeconfig_key_idx|signing_keys_key_idx|user_totp_secret_key_idx/, `${q.sql}\n${plan}`);
        assert.doesNotMatch(plan, /Seq Scan|"SCAN /, `${q.sql}\n${plan}`);
      }
    } finally {
      await handle.close();
    }
  });
});
