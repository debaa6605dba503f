// The composition root: the one place that builds the database, the services, the app and the job
// runtime, in that order, each stage taking the one before it as input:
//   1. the database, opened and migrated (or the one given: tests share one between instances);
//   2. the services over it, with the in-process API they call (local machine agents, the local
//      payment provider's webhook deliveries, agent tool calls) not yet served;
//   3. the app over the services; the in-process API is bound to it here and nowhere else;
//   4. the runtime (worker pool, sweeps, local machine agents), which calls the API: last.
// Nothing is attached later through a mutable slot.
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import type { DatabaseHandle } from './db/database.js';
import { startRuntime, type Runtime } from './jobs/runtime.js';
import type { App } from './platform/http.js';
import type { Tracing } from './platform/tracing.js';
import type { Services, ServicesDeps } from './services.js';
import { openSystemServices } from './system-services.js';

export interface SystemOptions {
  /**
   * An open, migrated database; its owner closes it (tests run several instances over one). Without
   * it the system opens config's database, migrates it, refuses keys that cannot open what it holds
   * (see modules/secrets/key-census.ts), and closes it in close().
   */
  database?: Pick<DatabaseHandle, 'db' | 'dialect'>;
  /** the process log; also the app's access log when given (without it the app logs nothing and the rest logs at config's level) */
  logger?: Logger;
  /** false: no job runtime (a tool that only serves requests in-process, a second instance in a test) */
  runtime?: boolean;
  /**
   * tracing (`svc serve` with an OTLP endpoint, src/platform/otel.ts): spans of the requests, of
   * the statements of the database the system opens, and of the jobs. Without it nothing is wrapped.
   */
  tracing?: Tracing;
  /** test seam: where the local payment provider's signed events go, given the default (the app's own webhook route) */
  paymentDelivery?: ServicesDeps['paymentDelivery'];
}

export interface System<R extends Runtime | null = Runtime> {
  database: Pick<DatabaseHandle, 'db' | 'dialect'>;
  services: Services;
  app: App;
  /** flips the app into draining mode: new requests get 503 UNAVAILABLE, pending waits answer now */
  beginShutdown(): void;
  runtime: R;
  /** drains and closes the app, stops the runtime (running steps get `graceMs`) and closes the database it opened */
  close(graceMs?: number): Promise<void>;
}

export function createSystem(config: Config, opts?: SystemOptions & { runtime?: true }): Promise<System>;
export function createSystem(config: Config, opts: SystemOptions & { runtime: false }): Promise<System<null>>;
export async function createSystem(config: Config, opts: SystemOptions = {}): Promise<System<Runtime | null>> {
  const { logger, database, owned, services, inProcess } = await openSystemServices(config, opts);
  logger.info('starting: workers and routes');
  const { app, beginShutdown } = await buildApp({ services, ...(opts.logger ? { logger: opts.logger } : {}), ...(opts.tracing ? { tracing: opts.tracing } : {}) });
  inProcess.bind(app);
  const runtime = opts.runtime === false ? null : await startRuntime(services, logger, opts.tracing?.inSpan);
  return {
    database,
    services,
    app,
    beginShutdown,
    runtime,
    async close(graceMs = 2000) {
      beginShutdown();
      // The in-process machine agents call the API: they stop before it does.
      await services.localCompute.stop();
      await app.close();
      await runtime?.stop(graceMs);
      await owned?.close();
    },
  };
}
