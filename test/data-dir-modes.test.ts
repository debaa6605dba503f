// The data directory and what the service keeps there (the SQLite database with its -wal and
// -shm files, the generated secret key) are owner only: the directory 0700, the files 0600,
// whatever the umask allows. Modes found more open (an older version made the database 0644) are
// tightened at start and `svc serve` logs a warning naming them.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { DIALECT } from './harness.js';
import { startSvc } from './processes.js';

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe(`data directory modes (${DIALECT} run; the files are SQLite's and the key's)`, () => {
  let root: string;
  let umask: number;

  before(() => {
    root = mkdtempSync(join(tmpdir(), 'svc-modes-'));
    // The usual umask, under which files are created 0644 and directories 0755 unless asked otherwise.
    umask = process.umask(0o022);
  });
  after(() => {
    process.umask(umask);
    rmSync(root, { recursive: true, force: true });
  });

  /** Opens SQLite in `dir` as the service does, writes through it (so -wal and -shm exist), and closes it. */
  async function useDatabase(dir: string): Promise<string[]> {
    const handle = openDatabase({ databaseUrl: null, dataDir: dir });
    try {
      await migrateToLatest(handle.db);
      // Still open: the -wal and -shm files exist now.
      for (const name of ['svc.db', 'svc.db-wal', 'svc.db-shm']) assert.equal(modeOf(join(dir, name)), '600', name);
      return handle.dataDirNotes;
    } finally {
      await handle.close();
    }
  }

  test('a new data dir is 0700 and the database, its -wal and -shm files and the generated key are 0600', async () => {
    const dir = join(root, 'fresh', 'data');
    const config = loadConfig({ SVC_DATA_DIR: dir, SVC_PUBLIC_URL: 'http://svc.test' });
    assert.equal(config.secretKeyGenerated, true);
    assert.deepEqual(config.dataDirNotes, []);
    assert.equal(modeOf(dir), '700');
    assert.equal(modeOf(join(dir, 'secret.key')), '600');
    assert.deepEqual(await useDatabase(dir), []);
    assert.equal(modeOf(dir), '700');
  });

  test('SQLite alone (the key given in SVC_SECRET_KEY) creates the dir 0700 and the database 0600', async () => {
    const dir = join(root, 'sqlite-only');
    assert.deepEqual(await useDatabase(dir), []);
    assert.equal(modeOf(dir), '700');
    assert.equal(existsSync(join(dir, 'secret.key')), false);
  });

  test('modes found too open are tightened at start, and each is reported', async () => {
    const dir = join(root, 'old');
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    await useDatabase(dir);
    chmodSync(join(dir, 'svc.db'), 0o644);
    writeFileSync(join(dir, 'secret.key'), `${'ab'.repeat(32)}\n`, { mode: 0o644 });
    chmodSync(dir, 0o755);

    const config = loadConfig({ SVC_DATA_DIR: dir, SVC_PUBLIC_URL: 'http://svc.test' });
    assert.equal(config.secretKey.toString('hex'), 'ab'.repeat(32));
    assert.equal(config.dataDirNotes.length, 3, config.dataDirNotes.join('\n'));
    assert.ok(config.dataDirNotes.some((n) => n.startsWith(`${join(dir, 'svc.db')}: mode 644`)));
    assert.equal(modeOf(dir), '700');
    assert.equal(modeOf(join(dir, 'svc.db')), '600');
    assert.equal(modeOf(join(dir, 'secret.key')), '600');

    // Opening the database alone (the key given in SVC_SECRET_KEY) tightens too.
    chmodSync(join(dir, 'svc.db'), 0o664);
    const notes = await useDatabase(dir);
    assert.deepEqual(notes.map((n) => n.split(':')[0]), [join(dir, 'svc.db')]);
  });

  test('svc serve over a data dir with a 0644 database tightens it and logs a warning naming it', { timeout: 240_000 }, async () => {
    const dir = join(root, 'served');
    await useDatabase(dir);
    chmodSync(join(dir, 'svc.db'), 0o644);
    const svc = await startSvc({ SVC_DATA_DIR: dir });
    try {
      const warning = await svc.waitForLog((l) => String(l.msg).includes('made owner only'));
      assert.ok(JSON.stringify(warning.paths).includes(join(dir, 'svc.db')), JSON.stringify(warning));
      assert.equal(modeOf(join(dir, 'svc.db')), '600');
      assert.equal(modeOf(join(dir, 'secret.key')), '600');
      assert.equal(modeOf(dir), '700');
    } finally {
      await svc.stop();
    }
  });
});
