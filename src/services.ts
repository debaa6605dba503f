// Builds every service once from the database and config; routes and workers receive this. Only
// the composition root (src/system.ts) calls it: it gives the in-process API the app serves later.
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Db, Dialect } from './db/database.js';
import { deriveKey } from './platform/crypto.js';
import { IdempotencyStore } from './platform/idempotency.js';
import { CursorCodec } from './platform/pagination.js';
import { createSessionService } from './modules/sessions/sessions.service.js';
import { createSignInThrottle } from './modules/sessions/sign-in-throttle.js';
import { createTwoFactorService } from './modules/sessions/two-factor.service.js';
import { createDeviceService } from './modules/device/device.service.js';
import { createApiTokenService } from './modules/tokens/tokens.service.js';
import { createUserService } from './modules/users/users.service.js';
import type { GrantHandler } from './modules/oauth/oauth.errors.js';
import { createOAuthService } from './modules/oauth/oauth.service.js';
import { createOidcService } from './modules/oidc/oidc.service.js';
import { createOidcRelyingParty } from './drivers/oidc/openid.js';
import { createWorkspaceService, lockWorkspace } from './modules/workspaces/workspaces.service.js';
import { createNotifier } from './jobs/notifier.js';
import { WorkflowRegistry } from './jobs/workflows.js';
import { createOperationService, operationStore } from './modules/operations/operations.service.js';
import { assertWorkspaceActive, createWorkspaceDeletion } from './modules/workspaces/workspace-deletion.js';
import { lazyDriver, type ClusterDriver, type ClusterProvider } from './drivers/cluster/driver.js';
import { createLocalDriver } from './drivers/cluster/local.js';
import { createClusterService } from './modules/clusters/clusters.service.js';
import { registerClusterWorkflows } from './modules/clusters/clusters.workflows.js';
import { createPackageService } from './modules/packages/packages.service.js';
import { createInstallService } from './modules/installs/installs.service.js';
import { registerInstallWorkflows } from './modules/installs/installs.workflows.js';
import { createInstallLogs } from './modules/installs/install-logs.js';
import { StreamRegistry } from './platform/stream-registry.js';
import { createPreviewHostnameService } from './modules/preview-hostnames/preview-hostnames.service.js';
import { registerPreviewHostnameWorkflows } from './modules/preview-hostnames/preview-hostnames.workflows.js';
import { evictAgedPinnedEverywhere, installHostnames } from './modules/preview-hostnames/hostname-lifecycle.js';
import { keyringOf } from './platform/keyring.js';
import { createAuditService } from './modules/audit/audit.service.js';
import { createSecretService } from './modules/secrets/secrets.service.js';
import { createSecretVersionService } from './modules/secrets/secret-versions.service.js';
import { secretUsage } from './modules/secrets/secrets.repo.js';
import { createQuotaService } from './modules/quotas/quotas.service.js';
import { clusterUsage } from './modules/clusters/clusters.repo.js';
import { clusterHasMachines, machineUsage } from './modules/machines/machines.repo.js';
import { clusterHasInstalls, installUsage } from './modules/installs/installs.repo.js';
import { operationFailed, passwordChanged, twoFactorChanged } from './modules/notifications/sources.js';
import { createNotificationService } from './modules/notifications/notifications.service.js';
import { createSubscriptionService } from './modules/subscriptions/subscriptions.service.js';
import { registerSubscriptionWorkflows } from './modules/subscriptions/subscriptions.workflows.js';
import { createPlanCheckoutService } from './modules/subscriptions/plan-checkouts.service.js';
import { createPlanSubscriptionService, PLAN_SYNC_JOB_KIND } from './modules/subscriptions/plan-subscriptions.service.js';
import { ApiError } from './platform/errors.js';
import { createSnippetService } from './modules/snippets/snippets.service.js';
import { createSnippetRunner } from './modules/snippets/snippet-runner.js';
import { createRunCredentials } from './modules/snippets/snippet-bridge.js';
import type { ComputeProvider } from './drivers/compute/driver.js';
import { createHcloudProvider } from './drivers/compute/hcloud.js';
import { createLocalComputeProvider } from './drivers/compute/local.js';
import { injectTransport } from './drivers/compute/inject-transport.js';
import { bootstrapTokenKey } from './modules/machines/join-tokens.js';
import { createWorkerBootstrapService } from './modules/machines/worker-bootstraps.service.js';
import { createMachineService } from './modules/machines/machines.service.js';
import { registerMachineWorkflows, releaseWorkspaceMachines } from './modules/machines/machines.workflows.js';
import { sweepMachines } from './modules/machines/machines-sweep.js';
import { sweepOrders } from './modules/orders/orders-sweep.js';
import { sweepAccount } from './modules/account/account-sweep.js';
import type { JobHandler } from './jobs/worker.js';
import { createMailDriver } from './drivers/mail/registry.js';
import { createMailService, MAIL_JOB_KIND } from './modules/mail/mail.service.js';
import { createPasswordResetService } from './modules/sessions/password-resets.service.js';
import { createAttemptWindows } from './modules/sessions/sign-in-throttle.js';
import { createAdminService } from './modules/admin/admin.service.js';
import type { InProcessApi } from './platform/in-process-api.js';
import { DEVICE_CODE_GRANT_TYPE } from './modules/device/device.service.js';
import { createAgentModule } from './modules/agents/agent-module.js';
import { createOfferService, offerAdmitsSignUp } from './modules/offers/offers.service.js';
import { createInvitationService } from './modules/workspaces/invitations.service.js';
import { createOrdersModule } from './modules/orders/orders-module.js';
import { createPaymentProviders } from './drivers/payments/registry.js';
import { eventJobHandlers } from './events/subscribers.js';
import type { DeliverEvent } from './drivers/payments/local-events.js';
import type { PaymentProvider } from './drivers/payments/driver.js';

export interface ServicesDeps {
  db: Db;
  dialect: Dialect;
  config: Config;
  /** the process log (the local machines' agents, payment trouble) */
  logger: Logger;
  /** the API served in-process; it answers once the app is built (see platform/in-process-api.ts) */
  api: InProcessApi;
  /** test seam: where the local payment provider's signed events go, given the default (the app's own webhook route) */
  paymentDelivery?: (toRoute: DeliverEvent) => DeliverEvent;
  /** the Stripe payment provider, when configured (loaded by loadStripeProvider: its package is large) */
  stripe: PaymentProvider | null;
}

export function createServices(deps: ServicesDeps) {
  const { db, config, api } = deps;
  const cursors = new CursorCodec(deriveKey(config.secretKey, 'cursor'));
  /** everything stored encrypted is sealed and opened by this one keyring */
  const keyring = keyringOf(config);
  const users = createUserService({
    db, passwordHashCost: config.passwordHashCost, signup: config.signup, adminEmails: config.people.adminEmails,
    offerAdmitsSignUp: (shortHash, email) => offerAdmitsSignUp(db, shortHash, email),
  });
  /**
   * Two-factor sign-in (issue 34): asked by every password sign-in, managed from the account. A
   * factor turned on or off is a notice to the person and an event in their workspaces' audit logs
   * (identity sits below both, so they are passed in here).
   */
  const twoFactor = createTwoFactorService({
    db, keyring, throttle: createSignInThrottle(db), issuer: `svc ${new URL(config.publicUrl).hostname}`,
    factorChanged: async (tx, e) => {
      await twoFactorChanged(tx, e);
      await workspaces.recordTwoFactorChange(tx, e);
    },
  });
  const sessions = createSessionService({ db, users, passwordChanged, secondFactor: twoFactor.checkSignIn });
  /** e-mail (issue 34): queued in the changes' transactions, delivered by the workers through SVC_MAIL's driver */
  const mail = createMailService({ db, dialect: deps.dialect, driver: createMailDriver(config.people.mail, deps.logger), cursors, backoffScale: config.jobs.backoffScale });
  const passwordResets = createPasswordResetService({ db, publicUrl: config.publicUrl, users, windows: createAttemptWindows(db), passwordChanged });
  const notifier = createNotifier({ databaseUrl: config.databaseUrl, db });
  const workflows = new WorkflowRegistry();
  const quotas = createQuotaService({ db, plans: config.plans, enforced: config.quotas.enforced, lockWorkspace });
  // Usage counters of the allocation metrics, declared next to the tables they count.
  quotas.registerUsage('compute/clusters', clusterUsage);
  quotas.registerUsage('compute/machines', machineUsage);
  quotas.registerUsage('installs/installs', installUsage);
  quotas.registerUsage('secrets/secrets', secretUsage);
  const operations = createOperationService({ db, cursors, notifier, workflows, publicUrl: config.publicUrl, admit: quotas.admitOperation });
  workflows.onOperationEnd(operationFailed);
  /** cluster drivers by provider (tests may replace one) */
  const clusterDrivers = new Map<ClusterProvider, ClusterDriver>([
    ['local', createLocalDriver({ db, secretDigestKey: keyring.deriveKey('local-secret-digest'), testHooks: config.testHooks })],
    ['kubernetes', lazyDriver('kubernetes', async () => (await import('./drivers/cluster/kubernetes.js')).createKubernetesDriver())],
  ]);
  const clusterDeps = { db, drivers: clusterDrivers, operations, keyring, quotas };
  registerClusterWorkflows(workflows, clusterDeps);
  const clusters = createClusterService({
    ...clusterDeps, cursors, publicUrl: config.publicUrl, testHooks: config.testHooks,
    // Installs and machines (a higher group, and clusters' own) say whether the cluster is still in use.
    inUse: { installs: clusterHasInstalls, machines: clusterHasMachines },
  });
  // Installs cannot import preview hostnames (which import installs): what an install's deploy and
  // deletion do to its hostnames is passed in.
  const installDeps = { ...clusterDeps, preview: config.preview, render: config.render, publicUrl: config.publicUrl, hostnames: installHostnames };
  registerInstallWorkflows(workflows, installDeps);
  const installs = createInstallService({ ...installDeps, dialect: deps.dialect, cursors });
  const installLogs = createInstallLogs(installDeps);
  registerPreviewHostnameWorkflows(workflows, db);
  const previewHostnames = createPreviewHostnameService({ db, dialect: deps.dialect, cursors, operations, preview: config.preview });
  /**
   * The local compute provider's simulated servers: their agents call the API in-process, so they
   * run where the API is served (the runtime starts them); leases keep each on one process.
   */
  const localCompute = createLocalComputeProvider({ db, keyring, logger: deps.logger, publicUrl: config.publicUrl, transport: injectTransport(api) });
  /** compute providers by name (tests may replace one); POST /v1/machines uses the configured one */
  const computeProviders = new Map<string, ComputeProvider>([['local', localCompute]]);
  const workspaceDeletion = createWorkspaceDeletion({
    operations,
    releaseMachines: async (workspaceId, ctx) => {
      await releaseWorkspaceMachines({ db, compute: computeProviders }, workspaceId, ctx);
    },
    releaseInstalls: async (workspaceId, ctx) => {
      await installs.releaseWorkspaceInstalls(workspaceId, ctx);
    },
    releaseClusters: async (workspaceId, ctx) => {
      await clusters.releaseWorkspaceClusters(workspaceId, ctx);
    },
    endPaidPlan: (tx, workspaceId) => paidPlans.endNow(tx, workspaceId, 'the workspace is being deleted'),
  });
  workflows.register(workspaceDeletion.workflow);
  /**
   * SVC_BILLING=payments: the workspace's plan subscription at the payment provider (issue 34); its
   * sync job tells the provider what the plan does. The providers are built further down.
   */
  const paidPlans = createPlanSubscriptionService({
    db, dialect: deps.dialect, notifier, plans: config.plans, providers: () => payments.providers, backoffScale: config.jobs.backoffScale,
  });
  const subscriptions = createSubscriptionService({ db, cursors, plans: config.plans, quotas, operations, billing: config.billing, paidPlans });
  registerSubscriptionWorkflows(workflows, { db, subscriptions });
  const snippetRunner = createSnippetRunner({
    workers: config.sandbox.workers,
    perTenantConcurrency: config.sandbox.perWorkspaceConcurrency,
    perTenantQueue: config.sandbox.perWorkspaceQueue,
    maxQueue: config.sandbox.maxQueue,
    queueTimeoutMs: config.sandbox.queueTimeoutMs,
  });
  const runCredentials = createRunCredentials();
  if (config.compute.provider === 'hcloud') computeProviders.set('hcloud', createHcloudProvider(config.compute.hcloud));
  const computeProvider = (): ComputeProvider => {
    const provider = computeProviders.get(config.compute.provider);
    if (!provider) throw new Error(`compute provider ${config.compute.provider} is not set up`);
    return provider;
  };
  const machineDeps = {
    db, tokenKey: bootstrapTokenKey(config.secretKey), launch: { agentCommand: config.machines.agentCommand, server: config.publicUrl },
    heartbeatSeconds: config.machines.heartbeatSeconds, joinTimeoutSeconds: config.machines.joinTimeoutSeconds,
  };
  registerMachineWorkflows(workflows, { ...machineDeps, compute: computeProviders, operations });
  const workerBootstraps = createWorkerBootstrapService({ ...machineDeps, cursors, quotas, publicUrl: config.publicUrl });
  const machines = createMachineService({
    ...machineDeps, cursors, operations, quotas, bootstraps: workerBootstraps, compute: computeProvider, publicUrl: config.publicUrl,
  });
  /** jobs that are not operations', by kind (agent turns) */
  const jobHandlers = new Map<string, JobHandler>([[MAIL_JOB_KIND, mail.deliver], [PLAN_SYNC_JOB_KIND, paidPlans.sync]]);
  const agentModule = createAgentModule({
    db, dialect: deps.dialect, cursors, notifier, quotas, keyring, config, snippetRunner, runCredentials, api, jobHandlers,
  });
  /** invitations to join a workspace (issue 34): made by addMember, accepted through their link */
  const invitations = createInvitationService({ db, cursors, publicUrl: config.publicUrl, users, checkPassword: sessions.checkPassword });
  const workspaces = createWorkspaceService({ db, cursors, quotas, invitations, twoFactor });
  const apiTokens = createApiTokenService({ db, cursors, assertWorkspaceActive });
  /** the instance's administration: the operator's `svc admin users` and instance admins' /v1/admin routes */
  const admin = createAdminService({ db, cursors, users, workspaces, tokens: apiTokens, passwordResets, signOutEverywhere: sessions.signOutEverywhere, logger: deps.logger });
  // Payment providers (issue 25): the local provider delivers its signed events to the service's
  // own webhook route, the path Stripe's take (a test may point them at a recorder); before the app
  // serves it a delivery fails and the sweep retries it.
  const toRoute: DeliverEvent = async (body, headers) =>
    (await api.inject({ method: 'POST', url: '/v1/payment_webhooks/local', headers, payload: body })).statusCode;
  const payments = createPaymentProviders({ db, config, stripe: deps.stripe, deliver: deps.paymentDelivery ? deps.paymentDelivery(toRoute) : toRoute });
  /** SVC_BILLING=payments: a raise of a plan is a checkout at the configured payment provider (issue 34) */
  const planCheckouts = createPlanCheckoutService({
    db, cursors, plans: config.plans, billing: config.billing, providers: payments.providers, publicUrl: config.publicUrl,
    checkoutTtlSeconds: config.commerce.checkoutTtlSeconds, log: deps.logger, paidPlans,
    provider: () => {
      const provider = payments.providers.get(config.commerce.paymentProvider);
      if (!provider) throw new ApiError('UNAVAILABLE', `payment provider ${config.commerce.paymentProvider} is not set up`, { reason: 'PAYMENT_PROVIDER_UNAVAILABLE' });
      return provider;
    },
  });
  const ordersModule = createOrdersModule({
    db, cursors, config, operations, workflows, clusters, installs, workspaces, workerBootstraps, payments: payments.providers, logger: deps.logger,
    // the payment intake routes a plan's sessions (metadata purpose: plan) to subscriptions
    planCheckouts,
  });
  // Reactions to other modules' events, run after their commit from the job queue (src/events/).
  for (const [kind, handler] of eventJobHandlers({ db, dialect: deps.dialect }, { 'orders.server_joined': ordersModule.serverJoined })) {
    jobHandlers.set(kind, handler);
  }
  const device = createDeviceService({ db, config, sessions });
  const oauth = createOAuthService({ db, config, cursors, assertWorkspaceActive });
  /** single sign-on with the operator's OpenID provider (issue 34); its package loads at the first sign-in */
  const oidc = createOidcService({
    db, config: config.oidc, relyingParty: config.oidc ? createOidcRelyingParty(config.oidc) : null,
    cookieKey: deriveKey(config.secretKey, 'oidc-login'), users,
  });
  const notifications = createNotificationService({ db, cursors });
  const secrets = createSecretService({ db, cursors, keyring, publicUrl: config.publicUrl, retentionSeconds: config.secretRetentionSeconds, quotas });
  /** Each domain's periodic work, which the job runtime schedules in worker processes (src/jobs/runtime.ts). */
  const sweeps = {
    previewHostnames: () => evictAgedPinnedEverywhere(db, config.preview.pinnedRetentionSeconds),
    secrets: () => secrets.purgeDue(),
    account: (logger: Pick<Logger, 'warn'>) => sweepAccount({ subscriptions, notifications, quotas }, logger),
    machines: () => sweepMachines({ db, operations, heartbeatSeconds: config.machines.heartbeatSeconds }),
    orders: async () => {
      const done = await sweepOrders({
        db, operations, publicUrl: config.publicUrl, checkout: ordersModule.checkout, noticeSeconds: config.commerce.draftExpiryNoticeSeconds, providerChores: payments.runChores,
      });
      // plan payments no plan could take (issue 34) whose refund failed before
      return { ...done, refunds_retried: done.refunds_retried + (await planCheckouts.refundOrphans()) };
    },
  };
  return {
    db,
    dialect: deps.dialect,
    config,
    cursors,
    idempotency: new IdempotencyStore(db, deriveKey(config.secretKey, 'idempotency')),
    users,
    sessions,
    twoFactor,
    device,
    workspaces,
    invitations,
    apiTokens,
    mail,
    passwordResets,
    admin,
    oauth,
    oidc,
    /** POST /oauth/token handlers by grant_type (device_code: RFC 8628; client_credentials: RFC 6749 4.4) */
    grants: new Map<string, GrantHandler>([
      ['client_credentials', oauth.clientCredentialsGrant],
      [DEVICE_CODE_GRANT_TYPE, device.exchangeDeviceCode],
    ]),
    /** commit-time notifications between instances (started by the runtime) */
    notifier,
    /** operation type -> steps; each module registers its workflows here */
    workflows,
    operations,
    workspaceDeletion,
    clusterDrivers,
    clusters,
    packages: createPackageService({ db, cursors }),
    installs,
    /** the logs of installs' pods, through their clusters' drivers */
    installLogs,
    /** the open followed install logs, ended at shutdown */
    logStreams: new StreamRegistry(),
    previewHostnames,
    keyring,
    audit: createAuditService({ db, cursors }),
    secrets,
    secretVersions: createSecretVersionService({ db, cursors, keyring }),
    quotas,
    subscriptions,
    planCheckouts,
    notifications,
    /** the sandbox pool of this process (started on the first run, closed with the app) */
    snippetRunner,
    /** the credentials of running snippets' platform.request calls */
    runCredentials,
    computeProviders,
    /** the local compute provider (also in `computeProviders`): the runtime starts and stops its agents */
    localCompute,
    workerBootstraps,
    machines,
    snippets: createSnippetService({ db, cursors, quotas, runner: snippetRunner, credentials: runCredentials, publicUrl: config.publicUrl }),
    jobHandlers,
    /** the operations' statements the job runner needs */
    operationStore,
    sweeps,
    /** offers of a seller's workspace (API.md 8.7); archiving one ends its unpaid drafts */
    offers: createOfferService({ db, cursors, publicUrl: config.publicUrl, offerWithdrawn: ordersModule.offerWithdrawn }),
    /** the built-in payment provider (its hosted checkout page; also in `payments` as `local`) */
    localPayments: payments.local,
    /** the payment providers' periodic work (the local provider's deliveries and renewals) */
    paymentChores: payments.runChores,
    ...agentModule,
    ...ordersModule,
  };
}

export type Services = ReturnType<typeof createServices>;
