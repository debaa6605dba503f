// What runs beside the HTTP API in one process: the notification listener and, unless the process
// is API-only (`svc serve --role api`), the worker pool and the periodic sweeps. The sweeps and the
// runner's operation statements are the modules' own, which the composition root passes in
// (services.sweeps, services.operationStore): shared code names no module.
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { randomString } from '../platform/crypto.js';
import type { Services } from '../services.js';
import { WorkerPool } from './worker.js';
import type { LocalComputeProvider } from '../drivers/compute/local.js';
import { untraced, type InSpan } from '../platform/tracing.js';

export interface Runtime {
  workerId: string;
  /**
   * Evicts every pinned preview hostname whose render was replaced at least the pinned retention
   * ago; returns how many. Runs every min(60 s, retention) in worker processes; tests call it.
   */
  sweepPreviewHostnames(): Promise<number>;
  /**
   * Destroys and removes every soft-deleted secret past its purge_at; returns how many. Runs every
   * min(60 s, SVC_SECRET_RETENTION) in worker processes (each secret is purged once whichever
   * instance gets to it); tests call it.
   */
  sweepSecrets(): Promise<number>;
  /**
   * Applies due subscription changes, announces expiring API tokens, purges old notifications and
   * rate counters (see account-sweep.ts). Runs at start and every SVC_ACCOUNT_SWEEP_MS in worker
   * processes; tests call it.
   */
  sweepAccount(): ReturnType<Services['sweeps']['account']>;
  /**
   * Marks machines that missed 3 heartbeats UNREACHABLE, announces expiring machines and deletes
   * expired ones (see machines-sweep.ts). Runs every heartbeat interval in worker processes; tests call it.
   */
  sweepMachines(): ReturnType<Services['sweeps']['machines']>;
  /**
   * Ends order drafts past their ttl (`timeout`) or whose offer expired (`offer_expired`), tells
   * customers of drafts about to expire, retries failed refunds and runs the payment providers'
   * chores (see orders-sweep.ts). Runs every 5 s in worker processes; tests call it.
   */
  sweepOrders(): ReturnType<Services['sweeps']['orders']>;
  /** the local compute provider's simulated servers, whose agents run in the processes that serve the API */
  localCompute: LocalComputeProvider;
  /** stops claiming, lets running steps drain for up to `graceMs`, then closes the listener */
  stop(graceMs: number): Promise<void>;
}

/** `inSpan`: each job run and each workflow step becomes a span (tracing on); by default nothing is traced. */
export async function startRuntime(services: Services, logger: Logger, inSpan: InSpan = untraced): Promise<Runtime> {
  const { config } = services;
  await services.notifier.start();
  // The local compute provider's agents call the API in-process: they run where the API is served.
  const { localCompute } = services;
  if (config.role !== 'worker') await localCompute.start();
  const workerId = `${hostname()}:${process.pid}:${randomString(6)}`;
  let pool: WorkerPool | null = null;
  if (config.role !== 'api') {
    pool = new WorkerPool(
      {
        db: services.db, dialect: services.dialect, notifier: services.notifier, workflows: services.workflows, logger, handlers: services.jobHandlers,
        operations: services.operationStore, inSpan,
      },
      { workerId, ...config.jobs },
    );
    pool.start();
  }
  const sweepPreviewHostnames = () => services.sweeps.previewHostnames();
  const sweepSecrets = () => services.sweeps.secrets();
  const machineSweep = () => services.sweeps.machines();
  const orderSweep = () => services.sweeps.orders();
  const sweeps: NodeJS.Timeout[] = [];
  const every = (retentionSeconds: number, run: () => Promise<number>, what: string) => {
    const timer = setInterval(() => {
      run().catch((err) => logger.warn({ err }, `${what} failed`));
    }, Math.max(1000, Math.min(60_000, retentionSeconds * 1000)));
    timer.unref();
    sweeps.push(timer);
  };
  if (config.role !== 'api') {
    // An install's publish step evicts its own aged hostnames; this covers installs left alone.
    every(config.preview.pinnedRetentionSeconds, sweepPreviewHostnames, 'preview hostname eviction sweep');
    every(config.secretRetentionSeconds, sweepSecrets, 'secret purge sweep');
    every(config.machines.heartbeatSeconds, async () => (await machineSweep()).unreachable, 'machine sweep');
    every(5, async () => (await orderSweep()).timed_out, 'order draft sweep');
  }
  const accountSweep = () => services.sweeps.account(logger);
  let account: NodeJS.Timeout | null = null;
  /** the timer's run in progress: runs never overlap, and stop() waits for it */
  let accountRun: Promise<unknown> | null = null;
  if (config.role !== 'api') {
    const tick = () => {
      accountRun ??= accountSweep().finally(() => { accountRun = null; });
    };
    tick();
    account = setInterval(tick, config.accountSweepMs);
    account.unref();
  }
  return {
    workerId,
    sweepPreviewHostnames,
    sweepSecrets,
    sweepAccount: accountSweep,
    sweepMachines: machineSweep,
    sweepOrders: orderSweep,
    localCompute,
    async stop(graceMs: number) {
      await localCompute.stop();
      for (const timer of sweeps) clearInterval(timer);
      if (account) clearInterval(account);
      await accountRun;
      await pool?.stop(graceMs);
      await services.notifier.close();
    },
  };
}
