// `svc serve`: open the database, migrate, bootstrap the first user, listen, and drain on SIGTERM.
import type { DestinationStream } from 'pino';
import { createLogger as createProcessLogger } from './platform/logging.js';
import { buildApp } from './app.js';
import { ConfigError, type Config } from './config.js';
import { openDatabase, type DatabaseHandle } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { createServices, type Services } from './services.js';
import { startRuntime } from './jobs/runtime.js';
import { unopenableKeysProblem } from './modules/secrets/key-census.js';
import { keyringOf } from './platform/keyring.js';
import { createPreviewRouter } from './modules/preview-hostnames/preview-router.js';
import { portsProblem } from './platform/ports.js';

export { REDACT_PATHS } from './platform/logging.js';

export function createLogger(config: Config, destination?: DestinationStream) {
  return createProcessLogger(config.logLevel, destination);
}

/** First-start owner account (idempotent): SVC_BOOTSTRAP_EMAIL/PASSWORD and optional SVC_BOOTSTRAP_TOKEN. */
export async function bootstrapOwner(services: Services): Promise<string | null> {
  const b = services.config.bootstrap;
  if (!b) return null;
  const { user } = await services.users.ensureUser({ email: b.email, password: b.password });
  if (b.token) await services.sessions.ensureSessionToken(user.id, b.token);
  return user.id;
}

export interface RunningServer {
  url: string;
  services: Services;
  stop(): Promise<void>;
}

export async function startServer(config: Config, opts: { handleSignals?: boolean } = {}): Promise<RunningServer> {
  const logger = createLogger(config);
  const serves = config.role !== 'worker';
  const problem = await portsProblem(config.host, [
    { setting: 'PORT', port: config.port },
    ...(serves ? [{ setting: 'SVC_PREVIEW_PORT', port: config.preview.port }] : []),
  ]);
  if (problem) throw new ConfigError(problem);
  logger.info({ database: config.databaseUrl ? 'postgres' : 'sqlite', data_dir: config.dataDir }, 'starting: opening the database');
  const handle: DatabaseHandle = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const applied = await migrateToLatest(handle.db);
  if (applied.length) logger.info({ migrations: applied }, 'applied migrations');
  // A key that cannot open what the database holds would answer every read of it with 422: refuse
  // to start instead, saying which key is missing (see modules/secrets/key-census.ts).
  const keyProblem = await unopenableKeysProblem(handle.db, keyringOf(config), config);
  if (keyProblem) {
    await handle.close();
    throw new ConfigError(keyProblem);
  }
  const tightened = [...config.dataDirNotes, ...handle.dataDirNotes];
  if (tightened.length) logger.warn({ paths: tightened }, 'the data directory or its files were readable by others: made owner only (0700/0600)');
  if (config.secretKeyGenerated && config.databaseUrl) {
    logger.warn('SVC_SECRET_KEY is not set: using a key generated in the data dir; every instance sharing this database needs the same key');
  }
  const services = createServices({ db: handle.db, dialect: handle.dialect, config });
  const bootstrapUser = await bootstrapOwner(services);
  if (bootstrapUser) logger.info({ user_id: bootstrapUser }, 'bootstrap owner ready');
  else if (!(await services.users.anyUserExists())) {
    // A fresh install has no way in until a user exists: say how, once, at start.
    logger.warn(
      'no user exists yet: create one with `svc admin create-user --email you@example.com --password \'at least 8 characters\'` ' +
        '(bin/svc in a checkout; the same SVC_DATA_DIR or DATABASE_URL), or start with SVC_BOOTSTRAP_EMAIL and SVC_BOOTSTRAP_PASSWORD set',
    );
  }

  logger.info('starting: workers and routes');
  const runtime = await startRuntime(services, logger);
  const { app, beginShutdown } = await buildApp({ services, logger });
  // The preview router answers for install URLs and preview hostnames on its own port.
  const previewRouter = !serves ? null : createPreviewRouter({ db: handle.db, domain: config.preview.domain, logger, limits: config.http });
  if (previewRouter) {
    const previewUrl = await previewRouter.listen(config.preview.port, config.host);
    logger.info({ url: previewUrl, domain: config.preview.domain }, 'preview router listening');
  }
  // The sandbox's workers (about 100 ms and ~35 MB each) start at the first run, or here when asked.
  if (serves && config.sandbox.prewarm) await services.snippetRunner.warm();
  const url = await app.listen({ port: config.port, host: config.host });
  // The one line a person reads to know the service is up and where (tests and scripts read `url`).
  const serving = serves ? 'web app and API' : 'worker: probes and metrics only';
  logger.info({ url, database: handle.dialect, role: config.role, worker_id: runtime.workerId }, `svc listening on ${url} (${serving})`);

  const purge = setInterval(() => {
    services.idempotency.purgeExpired().catch((err) => logger.warn({ err }, 'idempotency purge failed'));
  }, 10 * 60 * 1000);
  purge.unref();

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      logger.info('shutting down: draining in-flight requests');
      beginShutdown();
      clearInterval(purge);
      // The in-process machine agents call the API: they stop before it does.
      await runtime.localCompute.stop();
      const force = setTimeout(() => {
        logger.warn('grace period over; closing remaining connections');
        app.server.closeAllConnections();
        previewRouter?.server.closeAllConnections();
      }, config.shutdownGraceMs);
      force.unref();
      // Stops accepting, waits for in-flight requests, closes idle keep-alive sockets.
      await Promise.all([app.close(), previewRouter?.close()]);
      clearTimeout(force);
      // Running steps drain within the grace period; the rest are handed back to other workers.
      await runtime.stop(config.shutdownGraceMs);
      await handle.close();
      logger.info('stopped');
    })();
    return stopping;
  };

  if (opts.handleSignals) {
    const onSignal = (signal: string) => {
      logger.info({ signal }, 'signal received');
      stop().then(() => process.exit(0), (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      });
    };
    process.once('SIGTERM', () => onSignal('SIGTERM'));
    process.once('SIGINT', () => onSignal('SIGINT'));
  }
  return { url, services, stop };
}
