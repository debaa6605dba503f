// Stage 1 of the composition root (src/system.ts): config's database opened, migrated and checked
// against the keys. A module of its own so that the operator commands' services (operator-services.ts)
// open it without loading the app.
import type { Logger } from 'pino';
import { ConfigError, type Config } from './config.js';
import { openDatabase, type DatabaseHandle } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { unopenableKeysProblem } from './modules/secrets/key-census.js';
import { keyringOf } from './platform/keyring.js';
import type { Tracing } from './platform/tracing.js';

/** Stage 1: config's database, migrated; a ConfigError (the handle closed) when the keys cannot open what it holds. */
export async function openSystemDatabase(config: Config, logger: Logger, tracing: Tracing | undefined): Promise<DatabaseHandle> {
  logger.info({ database: config.databaseUrl ? 'postgres' : 'sqlite', data_dir: config.dataDir }, 'starting: opening the database');
  const handle = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, ...(tracing ? { traceDialect: tracing.traceDialect } : {}) });
  try {
    const applied = await migrateToLatest(handle.db);
    if (applied.length) logger.info({ migrations: applied }, 'applied migrations');
    // A key that cannot open what the database holds would answer every read of it with 422: refuse
    // to start instead, saying which key is missing.
    const keyProblem = await unopenableKeysProblem(handle.db, keyringOf(config), config);
    if (keyProblem) throw new ConfigError(keyProblem);
  } catch (err) {
    await handle.close();
    throw err;
  }
  const tightened = [...config.dataDirNotes, ...handle.dataDirNotes];
  if (tightened.length) logger.warn({ paths: tightened }, 'the data directory or its files were readable by others: made owner only (0700/0600)');
  if (config.secretKeyGenerated && config.databaseUrl) {
    logger.warn('SVC_SECRET_KEY is not set: using a key generated in the data dir; every instance sharing this database needs the same key');
  }
  return handle;
}

