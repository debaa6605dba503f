// `svc serve`: open the database, migrate, bootstrap the first user, listen, and drain on SIGTERM.
import { hostname } from 'node:os';
import type { DestinationStream, Logger } from 'pino';
import { createLogger as createProcessLogger } from './platform/logging.js';
import type { Tracing } from './platform/tracing.js';
import { svcVersion } from './platform/version.js';
import { ConfigError, type Config } from './config.js';
import type { Services } from './services.js';
import { createSystem } from './system.js';
import { createPreviewRouter, type PreviewRouter } from './modules/preview-hostnames/preview-router.js';
import { portsProblem } from './platform/ports.js';
import { serveMetrics } from './modules/system/metrics.js';

export { REDACT_PATHS } from './platform/logging.js';

export function createLogger(config: Config, destination?: DestinationStream, tracing?: Tracing | null) {
  return createProcessLogger(config.logLevel, destination, {
    format: config.observability.logFormat,
    ...(tracing ? { mixin: () => tracing.logFields() } : {}),
  });
}

/**
 * Tracing when an OTLP endpoint is configured, else null. The OpenTelemetry SDK and its
 * instrumentations are imported here and only then: a service without tracing loads none of them.
 */
async function startTracing(config: Config): Promise<Tracing | null> {
  if (!config.observability.tracing) return null;
  const { startTracing: start } = await import('./platform/otel.js');
  return start(config.observability.tracing, { version: svcVersion(), instanceId: `${hostname()}:${process.pid}` });
}

/** First-start owner account (idempotent): SVC_BOOTSTRAP_EMAIL/PASSWORD and optional SVC_BOOTSTRAP_TOKEN. */
export async function bootstrapOwner(services: Services): Promise<string | null> {
  const b = services.config.bootstrap;
  if (!b) return null;
  const { user } = await services.users.ensureUser({ email: b.email, password: b.password });
  if (b.token) await services.sessions.ensureSessionToken(user.id, b.token);
  return user.id;
}

/**
 * The preview router of these services: it reads hostnames from the database and reaches clusters
 * through the clusters module's service (connection details decrypted and cached there).
 */
export function previewRouterOf(services: Services, logger?: Logger): PreviewRouter {
  const { config } = services;
  return createPreviewRouter({
    db: services.db, domain: config.preview.domain, limits: config.http, proxy: config.preview.proxy, publicUrl: config.publicUrl,
    connectionOf: services.clusters.connectionOf, ...(logger ? { logger } : {}),
  });
}

export interface RunningServer {
  url: string;
  services: Services;
  stop(): Promise<void>;
}

export async function startServer(config: Config, opts: { handleSignals?: boolean } = {}): Promise<RunningServer> {
  const tracing = await startTracing(config);
  const logger = createLogger(config, undefined, tracing);
  if (tracing) {
    tracing.reportTo(logger);
    // the collector's origin only: the URL may hold credentials, the headers a key
    logger.info({ endpoint: new URL(config.observability.tracing!.tracesUrl).origin }, 'tracing: exporting spans (OTLP over HTTP)');
  }
  const serves = config.role !== 'worker';
  const ports = [{ setting: 'PORT', port: config.port }, ...(serves ? [{ setting: 'SVC_PREVIEW_PORT', port: config.preview.port }] : [])];
  const metricsAt = config.metrics.address;
  const metricsPort = metricsAt ? { setting: 'SVC_METRICS_ADDRESS', port: metricsAt.port } : null;
  const problem = metricsPort && metricsAt!.host === config.host
    ? await portsProblem(config.host, [...ports, metricsPort])
    : (await portsProblem(config.host, ports)) ?? (metricsPort ? await portsProblem(metricsAt!.host, [metricsPort], 'SVC_METRICS_ADDRESS') : null);
  if (problem) {
    await tracing?.shutdown();
    throw new ConfigError(problem);
  }
  // The database (migrated, its keys checked), the services, the app and the runtime (src/system.ts).
  const system = await createSystem(config, { logger, ...(tracing ? { tracing } : {}) }).catch(async (err: unknown) => {
    await tracing?.shutdown();
    throw err;
  });
  const { services, app, beginShutdown, runtime } = system;
  const bootstrapUser = await bootstrapOwner(services);
  if (bootstrapUser) logger.info({ user_id: bootstrapUser }, 'bootstrap owner ready');
  else if (!(await services.users.anyUserExists())) {
    // A fresh install has no way in until a user exists: say how, once, at start.
    logger.warn(
      'no user exists yet: create one with `svc admin create-user --email you@example.com --password \'at least 8 characters\'` ' +
        '(bin/svc in a checkout; the same SVC_DATA_DIR or DATABASE_URL), or start with SVC_BOOTSTRAP_EMAIL and SVC_BOOTSTRAP_PASSWORD set',
    );
  }

  // The preview router answers for install URLs and preview hostnames on its own port.
  const previewRouter = !serves ? null : previewRouterOf(services, logger);
  if (previewRouter) {
    const previewUrl = await previewRouter.listen(config.preview.port, config.host);
    logger.info({ url: previewUrl, domain: config.preview.domain }, 'preview router listening');
  }
  // The sandbox's workers (about 100 ms and ~35 MB each) start at the first run, or here when asked.
  if (serves && config.sandbox.prewarm) await services.snippetRunner.warm();
  const metrics = config.metrics.address ? await serveMetrics(app.metricsRegistry, config.metrics.address) : null;
  if (metrics) logger.info({ url: metrics.url }, 'metrics served');
  const url = await app.listen({ port: config.port, host: config.host });
  // The one line a person reads to know the service is up and where (tests and scripts read `url`).
  const serving = serves ? 'web app and API' : 'worker: probes and metrics only';
  logger.info({ url, database: services.dialect, role: config.role, worker_id: runtime.workerId }, `svc listening on ${url} (${serving})`);

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
      const force = setTimeout(() => {
        logger.warn('grace period over; closing remaining connections');
        app.server.closeAllConnections();
        previewRouter?.server.closeAllConnections();
      }, config.shutdownGraceMs);
      force.unref();
      // Each stops accepting, waits for in-flight requests, closes idle keep-alive sockets; the
      // preview router first, as it reads the database the system closes last. Running steps drain
      // within the grace period; the rest are handed back to other workers.
      await previewRouter?.close();
      await metrics?.close();
      await system.close(config.shutdownGraceMs);
      clearTimeout(force);
      // the spans still held are exported before the process ends
      await tracing?.shutdown().catch((err: unknown) => logger.warn({ err }, 'tracing: the last spans could not be exported'));
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
