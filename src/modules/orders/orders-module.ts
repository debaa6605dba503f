// Builds the orders side of commerce (API.md 8.7) once: draft, wizard, checkout and order
// services, the payment providers by name, and the draft workflows.
import type { Config } from '../../config.js';
import type { Logger } from 'pino';
import type { Db, Executor } from '../../db/database.js';
import type { PaymentProvider } from '../../drivers/payments/driver.js';
import type { WorkflowRegistry } from '../../jobs/workflows.js';
import type { EventSubscriber } from '../../events/subscribers.js';
import { clock } from '../../platform/clock.js';
import { ApiError } from '../../platform/errors.js';
import type { CursorCodec } from '../../platform/pagination.js';
import type { ClusterService } from '../clusters/clusters.service.js';
import type { InstallService } from '../installs/installs.service.js';
import type { WorkerBootstrapService } from '../machines/worker-bootstraps.service.js';
import type { OperationService } from '../operations/operations.service.js';
import type { WorkspaceService } from '../workspaces/workspaces.service.js';
import { createCheckoutService, type CheckoutDeps } from './checkout.service.js';
import { endDraft } from './draft-endings.js';
import * as repo from './order-drafts.repo.js';
import { createOrderDraftService } from './order-drafts.service.js';
import { registerOrderWorkflows } from './order-workflows.js';
import { createOrderService } from './orders.service.js';
import { createWizardService } from './wizard.service.js';

export interface OrdersModuleDeps {
  db: Db;
  cursors: CursorCodec;
  config: Config;
  operations: OperationService;
  workflows: WorkflowRegistry;
  clusters: ClusterService;
  installs: InstallService;
  workspaces: WorkspaceService;
  workerBootstraps: WorkerBootstrapService;
  /** payment providers by name (src/drivers/payments/registry.ts builds them; tests may replace one) */
  payments: Map<string, PaymentProvider>;
  /** the process log (refunds and provider trouble) */
  logger: Pick<Logger, 'warn' | 'info'>;
  /** plans paid through the provider (subscriptions, a lower group): the intake hands them their sessions */
  planCheckouts: CheckoutDeps['planCheckouts'];
}

export function createOrdersModule(deps: OrdersModuleDeps) {
  const { db, cursors, config, operations } = deps;
  const publicUrl = config.publicUrl;
  const { payments } = deps;
  const orderDrafts = createOrderDraftService({
    db, cursors, operations, publicUrl,
    beginLimits: { perAddress: config.fairness.orderBeginsPerAddress, perOffer: config.fairness.orderBeginsPerOffer },
  });
  const checkout = createCheckoutService({
    db, drafts: orderDrafts, operations, providers: payments, publicUrl, checkoutTtlSeconds: config.commerce.checkoutTtlSeconds, log: deps.logger,
    planCheckouts: deps.planCheckouts,
    provider: () => {
      const provider = payments.get(config.commerce.paymentProvider);
      if (!provider) throw new ApiError('UNAVAILABLE', `payment provider ${config.commerce.paymentProvider} is not set up`, { reason: 'PAYMENT_PROVIDER_UNAVAILABLE' });
      return provider;
    },
  });
  const wizard = createWizardService({ db, drafts: orderDrafts, operations, publicUrl, workspaces: deps.workspaces, workerBootstraps: deps.workerBootstraps });
  registerOrderWorkflows(deps.workflows, { db, operations, publicUrl, clusters: deps.clusters, installs: deps.installs, expireCheckout: checkout.expireAtProvider });
  const orders = createOrderService({ db, cursors, publicUrl });

  /** An offer archived: its unpaid drafts end `offer_expired`, in the archive's transaction. */
  async function offerWithdrawn(tx: Executor, offerId: string): Promise<void> {
    for (const draft of await repo.openDraftsOfOffer(tx, offerId)) await endDraft(tx, { operations, publicUrl }, draft, 'offer_expired');
  }

  /** machine.joined: the draft waiting for a server on that cluster moves on (bring your own server). */
  const serverJoined: EventSubscriber = async (tx, event) => {
    const machine = event.data as { cluster_id: string };
    await repo.markServerJoined(tx, machine.cluster_id, clock.now());
  };

  return { payments, orderDrafts, checkout, wizard, orders, offerWithdrawn, serverJoined };
}
