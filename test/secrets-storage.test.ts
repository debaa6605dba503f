// Where secret values may and may not be (API.md 8.1): after a lifecycle that writes, reads,
// destroys and deploys values, no plaintext value is in any file of the SQLite data dir, in any
// PostgreSQL table read raw, in any list, or in a trace-level log. A ciphertext or wrapped key
// copied onto another version's row does not open, and a destroyed version's bytes leave the file.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import pino from 'pino';
import { Keyring, KeyringError } from '../src/platform/keyring.js';
import { REDACT_PATHS } from '../src/server.js';
import { DIALECT, startTestApp, type TestApp, type TestUser } from './harness.js';
import { InstallFixtures } from './installs-fixtures.js';
import { assertError, SecretsApi } from './secrets-fixtures.js';

const secret = (label: string) => `PLAIN-${label}-${randomBytes(8).toString('hex')}`;
const SCHEMA = { type: 'object', properties: { password: { type: 'string', minLength: 8, pattern: '^[a-z]+$' } }, required: ['password'], additionalProperties: false };
const MANIFEST = {
  routes: [{ route_key: 'web' }],
  resources: [{
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'app' },
    spec: { template: { spec: { containers: [{ name: 'app', image: 'app:1', env: [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: '{{ secret.name }}', key: '{{ secret.key.password }}' } } }] }] } } },
  }],
};

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

describe('no plaintext secret value at rest, in lists or in logs', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;
  let api: SecretsApi;
  const logLines: string[] = [];
  const plaintexts: string[] = [];
  const listings: string[] = [];
  /** ciphertexts of a destroyed version and of a force-deleted secret's versions */
  const shredded: string[] = [];

  before(async () => {
    const sink = new Writable({ write(chunk, _enc, done) { logLines.push(String(chunk)); done(); } });
    t = await startTestApp({}, { logger: pino({ level: 'trace', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink) });
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Storage')).id;
    api = new SecretsApi(t, { token: owner.token, ws });
    for (const label of ['first', 'second', 'destroyed', 'deployed', 'rejected', 'idempotent']) plaintexts.push(secret(label));
    const [first, second, destroyed, deployed, rejected, idempotent] = plaintexts as [string, string, string, string, string, string];

    const s = await api.create({ name: 'app db', value: first, comment: 'initial' });
    const created = await api.call('POST', '/v1/secrets', { headers: { 'idempotency-key': randomUUID() }, body: { name: 'keyed', value: idempotent } });
    assert.equal(created.status, 201, created.text);
    await api.addVersion(s.id, second);
    const gone = await api.addVersion(s.id, destroyed);
    assert.equal(await api.value(s.id, gone.id), destroyed);
    const ciphertextsOf = async (column: 'id' | 'secret_id', id: string) =>
      (await t.services.db.selectFrom('secret_versions').select('ciphertext').where(column, '=', id).execute()).map((r) => r.ciphertext!);
    shredded.push(...(await ciphertextsOf('id', gone.id)));
    await api.move(s.id, gone.id, 'destroy');
    const forced = await api.create({ name: 'forced', value: secret('forced') });
    await api.addVersion(forced.id, secret('forced-2'));
    shredded.push(...(await ciphertextsOf('secret_id', forced.id)));
    assert.equal((await api.call('DELETE', `/v1/secrets/${forced.id}?force=true`, { headers: { 'if-match': forced.etag } })).status, 204);
    // Refused requests carrying a value: an unknown field, a wrong type next to it.
    assertError(await api.call('POST', `/v1/secrets/${s.id}/versions`, { body: { value: rejected, nope: 1 } }), 400, 'INVALID_ARGUMENT');
    assertError(await api.call('POST', '/v1/secrets', { body: { name: 5, value: rejected } }), 400, 'INVALID_ARGUMENT');

    // A deploy on the local driver that resolves a reference in the worker.
    const ref = await api.create({ name: 'deploy password', value: deployed });
    const fx = new InstallFixtures(t);
    const caller = { user: owner, ws };
    const pkgId = await fx.pkg(caller);
    await fx.version(caller, pkgId, '1.0.0', MANIFEST, SCHEMA);
    await fx.healthyInstall(caller, pkgId, await fx.cluster(caller), { password: { $secret: ref.id } });

    for (const url of ['/v1/secrets?limit=100', `/v1/secrets/${s.id}/versions`, '/v1/audit_events?limit=100', '/v1/installs', '/v1/operations?limit=100']) {
      const res = await api.call('GET', url);
      assert.equal(res.status, 200, res.text);
      listings.push(res.text);
    }
    const install = JSON.parse(listings[3]!).data[0];
    listings.push((await api.call('GET', `/v1/installs/${install.id}`)).text);
    listings.push((await api.call('GET', `/v1/installs/${install.id}/renders/${install.current_render_id}`)).text);
  });
  after(() => t.close());

  const leaks = (text: string) => plaintexts.filter((p) => text.includes(p) || text.includes(Buffer.from(p).toString('base64')));

  test('every table, read raw, holds no plaintext value', async () => {
    const tables = (await t.services.db.introspection.getTables()).map((x) => x.name);
    assert.ok(tables.includes('secret_versions') && tables.includes('audit_events') && tables.includes('idempotency_keys'));
    for (const table of tables) {
      const { rows } = await sql`select * from ${sql.table(table)}`.execute(t.services.db);
      assert.deepEqual(leaks(JSON.stringify(rows)), [], `table ${table}`);
    }
    const digest = await t.services.db.selectFrom('local_deployments').select('secret_digest').executeTakeFirstOrThrow();
    assert.match(digest.secret_digest!, /^[0-9a-f]{64}$/, 'the local driver recorded an HMAC of the secret it applied');
  });

  test('no file of the SQLite data dir holds a plaintext value, nor the ciphertext of a removed version', { skip: DIALECT !== 'sqlite' && 'SQLite only' }, async () => {
    // The write-ahead log keeps old page images until a checkpoint: fold it in, then look at every byte.
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(t.services.db);
    const files = filesUnder(t.config.dataDir);
    assert.ok(files.some((f) => f.endsWith('svc.db')));
    for (const file of files) {
      const bytes = readFileSync(file);
      for (const p of plaintexts) assert.equal(bytes.includes(Buffer.from(p)), false, `${file} contains a plaintext value`);
      // secure_delete: the bytes of removed rows were zeroed, not left in the pages' free space.
      for (const c of shredded) assert.equal(bytes.includes(Buffer.from(c)), false, `${file} still holds a removed version's ciphertext`);
    }
  });

  test('lists, gets and renders carry no value; the render holds the reference', () => {
    for (const text of listings) assert.deepEqual(leaks(text), []);
    const render = JSON.parse(listings.at(-1)!);
    assert.equal(render.manifest.secret.name, 'svc-secrets');
    assert.deepEqual(render.manifest.secret.refs.map((r: { key: string; version_number: number }) => [r.key, r.version_number]), [['password', 1]]);
  });

  test('a trace-level log of all of it holds no value', () => {
    const text = logLines.join('');
    assert.ok(text.includes('request completed') && text.length > 10_000, 'the logger captured the requests');
    assert.deepEqual(leaks(text), []);
  });

  test('a ciphertext or wrapped key copied onto another version\'s row does not open', async () => {
    const one = await api.create({ name: 'source', value: secret('source') });
    const other = await api.create({ name: 'target', value: secret('target') });
    // Both read once first, so their data keys are in the keyring's cache when the rows are swapped.
    assert.ok((await api.value(one.id, '1')).startsWith('PLAIN-source-'));
    assert.ok((await api.value(other.id, '1')).startsWith('PLAIN-target-'));
    const rows = await t.services.db.selectFrom('secret_versions').selectAll().where('secret_id', 'in', [one.id, other.id]).execute();
    const src = rows.find((r) => r.secret_id === one.id)!;
    const dst = rows.find((r) => r.secret_id === other.id)!;
    const moves = [
      { key_id: src.key_id, wrapped_key: src.wrapped_key, ciphertext: src.ciphertext },
      { ciphertext: src.ciphertext },
      { wrapped_key: src.wrapped_key },
    ];
    for (const set of moves) {
      await t.services.db.updateTable('secret_versions').set(set).where('id', '=', dst.id).execute();
      const moved = await api.access(other.id, dst.id);
      assertError(moved, 422, 'FAILED_PRECONDITION', 'VALUE_UNREADABLE');
      assert.match(moved.body.error.message, /does not open: it was altered or copied from elsewhere/, 'the row is blamed, not a key setting');
      await t.services.db.updateTable('secret_versions').set({ key_id: dst.key_id, wrapped_key: dst.wrapped_key, ciphertext: dst.ciphertext }).where('id', '=', dst.id).execute();
    }
    assert.ok((await api.value(other.id, dst.id)).startsWith('PLAIN-target-'));
    assert.ok((await api.value(one.id, src.id)).startsWith('PLAIN-source-'));
  });
});

describe('the keyring\'s cache of unwrapped data keys', () => {
  const master = randomBytes(32);
  const values = ['first value', 'second value', 'third value'];

  test('evicted and expired keys are unwrapped again: every open gives its own value', () => {
    for (const cache of [{ entries: 1 }, { entries: 2 }, { ttlMs: 0 }, { entries: 0 }, {}]) {
      const keyring = new Keyring(master, [], cache);
      const sealed = values.map((v, i) => keyring.sealEnvelope(v, `ctx:${i}`));
      for (let round = 0; round < 3; round++) {
        for (const i of [0, 1, 2, 0, 2, 1]) assert.equal(keyring.openEnvelope(sealed[i]!, `ctx:${i}`).toString('utf8'), values[i], JSON.stringify(cache));
      }
    }
  });

  test('a cached key still authenticates what it opens: tampered ciphertext and another place are refused', () => {
    const keyring = new Keyring(master);
    const e = keyring.sealEnvelope('the value', 'ctx:a');
    assert.equal(keyring.openEnvelope(e, 'ctx:a').toString('utf8'), 'the value'); // its data key is cached now
    const raw = Buffer.from(e.ciphertext, 'base64url');
    raw[raw.length - 1]! ^= 1;
    assert.throws(() => keyring.openEnvelope({ ...e, ciphertext: raw.toString('base64url') }, 'ctx:a'), KeyringError);
    assert.throws(() => keyring.openEnvelope(e, 'ctx:b'), KeyringError);
    const other = keyring.sealEnvelope('another value', 'ctx:a');
    assert.throws(() => keyring.openEnvelope({ ...e, ciphertext: other.ciphertext }, 'ctx:a'), KeyringError);
    assert.equal(keyring.openEnvelope(e, 'ctx:a').toString('utf8'), 'the value');
  });

  test('a wrapped key that failed to open its value is not cached', () => {
    const keyring = new Keyring(master);
    const e = keyring.sealEnvelope('kept', 'ctx:c');
    const other = keyring.sealEnvelope('other', 'ctx:c');
    // The data key of e opens, but not other's ciphertext; it must not now be served for other's key id + wrapped key.
    assert.throws(() => keyring.openEnvelope({ ...e, ciphertext: other.ciphertext }, 'ctx:c'), KeyringError);
    assert.equal(keyring.openEnvelope(other, 'ctx:c').toString('utf8'), 'other');
    assert.equal(keyring.openEnvelope(e, 'ctx:c').toString('utf8'), 'kept');
  });
});
