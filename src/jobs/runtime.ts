// What runs beside the HTTP API in one process: the notification listener and, unless the process
// is API-only (`svc serve --role api`), the worker pool.
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { randomString } from '../platform/crypto.js';
import type { Services } from '../services.js';
import { WorkerPool } from './worker.js';

export interface Runtime {
  workerId: string;
  /** stops claiming, lets running steps drain for up to `graceMs`, then closes the listener */
  stop(graceMs: number): Promise<void>;
}

export async function startRuntime(services: Services, logger: Logger): Promise<Runtime> {
  const { config } = services;
  await services.notifier.start();
  const workerId = `${hostname()}:${process.pid}:${randomString(6)}`;
  let pool: WorkerPool | null = null;
  if (config.role !== 'api') {
    pool = new WorkerPool(
      { db: services.db, dialect: services.dialect, notifier: services.notifier, workflows: services.workflows, logger },
      { workerId, ...config.jobs },
    );
    pool.start();
  }
  return {
    workerId,
    async stop(graceMs: number) {
      await pool?.stop(graceMs);
      await services.notifier.close();
    },
  };
}
