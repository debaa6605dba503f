// Stages 1 and 2 of the composition root (src/system.ts): config's database opened, migrated and
// checked against the keys, then the services over it. A module of its own so that an operator
// command (`svc admin users`, `mail`, `workspaces set-plan`: no request served, no job run) gets
// its services without loading the app, whose routes were more than half of what each one cost.
import type { Logger } from 'pino';
import { ConfigError, type Config } from './config.js';
import { openDatabase, type DatabaseHandle } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { loadStripeProvider } from './drivers/payments/registry.js';
import { unopenableKeysProblem } from './modules/secrets/key-census.js';
import { createInProcessApi, type InProcessApiBinding } from './platform/in-process-api.js';
import { keyringOf } from './platform/keyring.js';
import { createLogger } from './platform/logging.js';
import type { Tracing } from './platform/tracing.js';
import { createServices, type Services, type ServicesDeps } from './services.js';

/** Stage 1: config's database, migrated; a ConfigError (the handle closed) when the keys cannot open what it holds. */
async function openSystemDatabase(config: Config, logger: Logger, tracing: Tracing | undefined): Promise<DatabaseHandle> {
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

export interface SystemServicesOptions {
  /** an open, migrated database its owner closes; without it config's is opened (stage 1) and returned as `owned` */
  database?: Pick<DatabaseHandle, 'db' | 'dialect'>;
  /** the process log; without it one at config's level and format */
  logger?: Logger;
  tracing?: Tracing;
  paymentDelivery?: ServicesDeps['paymentDelivery'];
}

export interface SystemServices {
  logger: Logger;
  database: Pick<DatabaseHandle, 'db' | 'dialect'>;
  /** the database opened here, which the caller closes; null when it was given */
  owned: DatabaseHandle | null;
  services: Services;
  /** the API the services call in-process, unserved until the composition root binds it to its app */
  inProcess: InProcessApiBinding;
}

/** Stages 1 and 2: the database (config's, opened here, or the one given) and the services over it. */
export async function openSystemServices(config: Config, opts: SystemServicesOptions = {}): Promise<SystemServices> {
  const logger = opts.logger ?? createLogger(config.logLevel, undefined, { format: config.observability.logFormat });
  const owned = opts.database ? null : await openSystemDatabase(config, logger, opts.tracing);
  const database = opts.database ?? owned!;
  try {
    const inProcess = createInProcessApi();
    const services = createServices({
      db: database.db, dialect: database.dialect, config, logger, api: inProcess.api, stripe: await loadStripeProvider(config),
      ...(opts.paymentDelivery ? { paymentDelivery: opts.paymentDelivery } : {}),
    });
    return { logger, database, owned, services, inProcess };
  } catch (err) {
    await owned?.close();
    throw err;
  }
}
