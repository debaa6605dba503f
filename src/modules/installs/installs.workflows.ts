// The install workflows: install.create and install.update (resolve the version, render, apply
// through the cluster's driver, wait until healthy, publish the URLs) and install.delete (drain the
// install's other operations, undeploy, remove), and the release of a whole workspace's installs
// used by workspace deletion.
import { createHash } from 'node:crypto';
import type { Db, Executor } from '../../db/database.js';
import type { PackageVersionsTable } from '../../db/schema.js';
import {
  installNamespace, type ClusterDriver, type ClusterProvider, type DeploymentSpec, type DriverCallContext,
  type KubernetesObject, type RouteHostnames, type RouteSpec,
} from '../../drivers/cluster/driver.js';
import { DEFAULT_RETRY, StepError, type Json, type RetryPolicy, type StepContext, type StepDefinition, type WorkflowDefinition, type WorkflowRegistry } from '../../jobs/workflows.js';
import { clock } from '../../platform/clock.js';
import type { Keyring } from '../../platform/keyring.js';
import { newId } from '../../platform/ids.js';
import { findClusterById, type ClusterRow } from '../clusters/clusters.service.js';
import { driverFor, driverStep, targetOf } from '../clusters/clusters.workflows.js';
import { drainOperationsStep, releaseEach } from '../operations/operation-steps.js';
import type { OperationService } from '../operations/operations.service.js';
import { findVersion } from '../packages/packages.service.js';
import { canonicalJson, RenderError, renderManifest, type RenderLimits } from '../packages/render.js';
import { findOperation } from '../operations/operations.service.js';
import { findSecretRefs, openSecretRefs, resolveSecretRefs, SecretRefError, type RenderSecret } from '../secrets/secret-refs.js';
import { ApiError } from '../../platform/errors.js';
import { installDegraded } from '../notifications/sources.js';
import { recordEvent } from '../../events/record.js';
import { installUrlHostname, previewUrl } from './hostnames.js';
import * as repo from './installs.repo.js';
import { INSTALL_CREATE, INSTALL_DELETE, INSTALL_UPDATE } from './installs.schemas.js';
import { installDetailIn } from './installs.view.js';

/** Driver calls: 5 attempts, 0.5 s doubling to at most 30 s (about 7.5 s of backoff in all). */
const DRIVER_RETRY: RetryPolicy = DEFAULT_RETRY;
/** Readiness polls: 0.25 s doubling to every 2 s, about 2 minutes in all before the step fails. */
const HEALTH_RETRY: RetryPolicy = { maxAttempts: 60, initialDelayMs: 250, maxDelayMs: 2_000 };

/**
 * What an install's life does to its preview hostnames (the preview-hostnames module's, which
 * imports this one: the composition root passes it in).
 */
export interface InstallHostnames {
  /**
   * Evicts the install's active pinned hostnames whose render was replaced at or before
   * `replacedBefore` (Unix seconds), in the caller's transaction; returns how many.
   */
  evictAgedPinned(tx: Executor, installId: string, replacedBefore: number, now: number): Promise<number>;
  /** Every hostname of the install stops being served (`releasing`); the rows go with the install. */
  releaseAll(db: Executor, installId: string, now: number): Promise<void>;
  /** The install's preview hostnames being served (active), ordered by hostname, with the protocol they are bound with. */
  served(db: Executor, installId: string): Promise<{ hostname: string; protocol: string }[]>;
}

export interface InstallWorkflowDeps {
  db: Db;
  /** the API's public base URL: an install's html_url in the data of its events */
  publicUrl: string;
  hostnames: InstallHostnames;
  drivers: ReadonlyMap<ClusterProvider, ClusterDriver>;
  operations: Pick<OperationService, 'cancelOthers'>;
  /** opens kubeconfigs and secret values */
  keyring: Keyring;
  /** config.preview: where install URLs live */
  preview: { port: number; domain: string; pinnedRetentionSeconds: number };
  /** config.render: the size bounds of one render */
  render: RenderLimits;
}

/**
 * The input of install.create and install.update: the version resolved by the request, and the
 * workspace that owns its package when that is not the install's (an install an order delivered
 * from the seller's package).
 */
export type DeployInput = { package_version_id: string; package_workspace_id?: string };
type Ctx = StepContext<DeployInput>;

/** The result of the render step: what the later steps apply and publish. */
interface RenderResult {
  render_id: string;
  content_hash: string;
  package_version_id: string;
  semver: string;
  routes: RouteSpec[];
  resources: KubernetesObject[];
  /** the install's Kubernetes Secret: the versions its secret references resolved to (never values); null without any */
  secret: RenderSecret | null;
}

async function installOf(db: Executor, ctx: { ownerId: string }): Promise<repo.InstallRow> {
  const row = await repo.findInstallById(db, ctx.ownerId);
  if (!row) throw new StepError(`install ${ctx.ownerId} no longer exists`, false);
  return row;
}

async function clusterOf(db: Executor, install: repo.InstallRow): Promise<ClusterRow> {
  const row = await findClusterById(db, install.cluster_id);
  if (!row) throw new StepError(`cluster ${install.cluster_id} no longer exists`, false);
  return row;
}

/** The version the operation deploys (resolved by the request; versions are immutable). */
async function versionOf(db: Executor, ctx: Ctx): Promise<PackageVersionsTable> {
  const version = await findVersion(db, ctx.input.package_workspace_id ?? ctx.workspaceId, ctx.input.package_version_id);
  if (!version) throw new StepError(`package version ${ctx.input.package_version_id} no longer exists`, false);
  return version;
}

/**
 * What people call the install an operation acts on (its package and cluster) and the version it
 * deploys: two reads by primary key, for notifications. Generic words for what is gone.
 */
async function namesOf(tx: Executor, ctx: { ownerId: string; workspaceId: string; input: Partial<DeployInput> }) {
  const names = await repo.installNames(tx, ctx.ownerId);
  const version = ctx.input.package_version_id
    ? await findVersion(tx, ctx.input.package_workspace_id ?? ctx.workspaceId, ctx.input.package_version_id)
    : undefined;
  return { packageName: names?.package_name ?? 'an install', clusterName: names?.cluster_name ?? null, semver: version?.semver ?? null };
}

/** "Deploying wiki 1.2.0 on dev", "Updating wiki on dev to 1.3.0", "Deleting wiki from dev". */
async function describeInstallOperation(tx: Executor, ctx: { ownerId: string; workspaceId: string; input: Partial<DeployInput> }, verb: 'create' | 'update' | 'delete'): Promise<string> {
  const n = await namesOf(tx, ctx);
  const on = n.clusterName ? ` on ${n.clusterName}` : '';
  const version = n.semver ? ` ${n.semver}` : '';
  if (verb === 'create') return `Deploying ${n.packageName}${version}${on}`;
  if (verb === 'update') return `Updating ${n.packageName}${on}${n.semver ? ` to ${n.semver}` : ''}`;
  return `Deleting ${n.packageName}${n.clusterName ? ` from ${n.clusterName}` : ''}`;
}

function renderOf(ctx: Ctx): RenderResult {
  const result = ctx.results.render as unknown as RenderResult | undefined;
  if (!result) throw new StepError('the render step has no result', false);
  return result;
}

/**
 * The hostnames each route is served at on a cluster: the install URL's hostname for the route,
 * and each served preview hostname, which goes to the first route whose protocol is the one it was
 * bound with, else to the first route (routes with a `service` only, when any has one: the others
 * get no route object). A namespace holds one render, so a preview hostname, pinned or floating,
 * reaches the render that runs on the cluster; the built-in preview router tells them apart.
 */
export function routeHostnamesOf(
  preview: InstallWorkflowDeps['preview'], installId: string, routes: RouteSpec[], served: { hostname: string; protocol: string }[],
): RouteHostnames[] {
  const out = routes.map((r) => ({ route_key: r.route_key, hostnames: [installUrlHostname(r.route_key, installId, preview.domain)] }));
  const candidates = routes.some((r) => r.service) ? routes.filter((r) => r.service) : routes;
  for (const h of served) {
    const route = candidates.find((r) => r.protocol === h.protocol) ?? candidates[0];
    if (route) out.find((o) => o.route_key === route.route_key)!.hostnames.push(h.hostname);
  }
  return out;
}

/** The render of the operation as the driver applies it, with the install's hostnames as they are now. */
async function deploymentOf(deps: Pick<InstallWorkflowDeps, 'db' | 'hostnames' | 'preview'>, ctx: Ctx): Promise<DeploymentSpec> {
  const r = renderOf(ctx);
  const served = await deps.hostnames.served(deps.db, ctx.ownerId);
  return {
    installId: ctx.ownerId, namespace: installNamespace(ctx.ownerId), renderId: r.render_id, resources: r.resources, routes: r.routes,
    hostnames: routeHostnamesOf(deps.preview, ctx.ownerId, r.routes, served),
  };
}

/**
 * Re-applies the objects routing traffic to the install's current render with its hostnames as
 * they are now (a preview hostname was bound, rebound or released). Nothing while the install has
 * no current render or is being deleted (its namespace goes, and its route objects with it).
 * A deploy in flight applies the hostnames it reads itself; the last writer wins, and the next
 * change of either re-applies them all.
 */
export async function syncInstallRoutes(
  deps: Pick<InstallWorkflowDeps, 'db' | 'drivers' | 'keyring' | 'hostnames' | 'preview'>, installId: string, ctx: DriverCallContext,
): Promise<void> {
  const { db } = deps;
  const install = await repo.findInstallById(db, installId);
  if (!install || install.state === 'deleted' || !install.current_render_id || (await repo.isBeingDeleted(db, installId))) return;
  const render = await repo.findRender(db, install.workspace_id, install.id, install.current_render_id);
  const cluster = await findClusterById(db, install.cluster_id);
  if (!render || !cluster) return;
  const routes = (JSON.parse(render.manifest) as { routes?: RouteSpec[] }).routes ?? [];
  const served = await deps.hostnames.served(db, install.id);
  const routing = { installId, namespace: installNamespace(installId), renderId: render.id, routes, hostnames: routeHostnamesOf(deps.preview, installId, routes, served) };
  await driverStep(() => driverFor(deps, cluster).applyRoutes(targetOf(cluster, deps.keyring), routing, ctx));
}

/** The install's URL for each route, as install_urls rows (without install_id). */
export function urlsOf(preview: InstallWorkflowDeps['preview'], installId: string, routes: RouteSpec[], now: number) {
  return routes.map((route) => {
    const hostname = installUrlHostname(route.route_key, installId, preview.domain);
    return {
      route_key: route.route_key, hostname, url: previewUrl(hostname, preview.port), protocol: route.protocol ?? 'http',
      error: '', updated_at: now, last_observed_at: now,
    };
  });
}

export function installWorkflows(deps: InstallWorkflowDeps): WorkflowDefinition<never>[] {
  const { db } = deps;

  /** The values of the render's secret references, opened here in the worker (and audited) for the driver only. */
  async function secretOf(ctx: Ctx): Promise<Pick<DeploymentSpec, 'secret'>> {
    const r = renderOf(ctx);
    if (!r.secret) return {};
    const operation = await findOperation(db, ctx.operationId);
    try {
      const data = await openSecretRefs(db, deps.keyring, r.secret, {
        workspaceId: ctx.workspaceId, requestedBy: operation?.requested_by ?? 'unknown', installId: ctx.ownerId, operationId: ctx.operationId, renderId: r.render_id,
      });
      return { secret: { name: r.secret.name, data } };
    } catch (err) {
      // Disabled, destroyed or deleted since the render: redeploy once it is readable again.
      if (err instanceof SecretRefError) throw new StepError(err.message, false);
      throw err;
    }
  }

  const deploySteps: StepDefinition<DeployInput>[] = [
    {
      name: 'resolve_version',
      async run(ctx) {
        await installOf(db, ctx);
        const version = await versionOf(db, ctx);
        return { package_version_id: version.id, semver: version.semver };
      },
    },
    {
      name: 'render',
      async run(ctx) {
        // Shown while the step works; conditional, so a repeated run changes nothing.
        await repo.moveStateUnlessDeleting(db, ctx.ownerId, 'rendering', clock.now());
        const install = await installOf(db, ctx);
        const version = await versionOf(db, ctx);
        // A fresh id on every run: nothing of a run that did not complete was written.
        const renderId = newId('render');
        try {
          const values = JSON.parse(install.values) as Record<string, Json>;
          const rendered = renderManifest(version.manifest, values, {
            installId: install.id, renderId, namespace: installNamespace(install.id),
          }, deps.render);
          // Which version each reference names now: the render pins it (and its hash covers it).
          const secret = await resolveSecretRefs(db, ctx.workspaceId, findSecretRefs(values, 'values'));
          const contentHash = secret ? createHash('sha256').update(`${rendered.contentHash}\n${canonicalJson(secret)}`).digest('hex') : rendered.contentHash;
          const result: RenderResult = {
            render_id: renderId, content_hash: contentHash, package_version_id: version.id, semver: version.semver,
            routes: rendered.routes, resources: rendered.resources, secret,
          };
          return result as unknown as Json;
        } catch (err) {
          // The manifest and the values do not fit together, or a referenced secret is not
          // readable: no retry changes that.
          if (err instanceof RenderError || err instanceof SecretRefError || err instanceof ApiError) throw new StepError(err.message, false);
          throw err;
        }
      },
      async apply(tx, ctx, result) {
        const r = result as unknown as RenderResult;
        await repo.insertRender(tx, {
          id: r.render_id, install_id: ctx.ownerId, workspace_id: ctx.workspaceId, package_version_id: r.package_version_id, semver: r.semver,
          content_hash: r.content_hash, manifest: JSON.stringify({ routes: r.routes, resources: r.resources, ...(r.secret ? { secret: r.secret } : {}) }),
          created_at: clock.now(), replaced_at: null,
        });
      },
    },
    {
      name: 'apply',
      retry: DRIVER_RETRY,
      async run(ctx) {
        await repo.moveStateUnlessDeleting(db, ctx.ownerId, 'syncing', clock.now());
        const cluster = await clusterOf(db, await installOf(db, ctx));
        const spec = { ...(await deploymentOf(deps, ctx)), ...(await secretOf(ctx)) };
        await driverStep(() => driverFor(deps, cluster).deploy(targetOf(cluster, deps.keyring), spec, ctx));
        return null;
      },
    },
    {
      name: 'wait_healthy',
      retry: HEALTH_RETRY,
      async run(ctx) {
        const cluster = await clusterOf(db, await installOf(db, ctx));
        const spec = await deploymentOf(deps, ctx);
        const status = await driverStep(() => driverFor(deps, cluster).deploymentStatus(targetOf(cluster, deps.keyring), spec, ctx));
        // Not ready yet is a retryable failure: the step polls by being retried.
        if (!status.ready) throw new StepError(`not healthy yet: ${status.message}`, true);
        return { message: status.message };
      },
    },
    {
      name: 'publish_urls',
      async apply(tx, ctx) {
        const r = renderOf(ctx);
        const install = await repo.findInstallById(tx, ctx.ownerId);
        // A deletion started meanwhile: it takes the install down; publish nothing.
        if (!install || install.state === 'deleted' || (await repo.isBeingDeleted(tx, install.id))) return;
        const now = clock.now();
        await repo.replaceUrls(tx, install.id, urlsOf(deps.preview, install.id, r.routes, now));
        if (install.current_render_id !== null && install.current_render_id !== r.render_id) {
          await repo.markRenderReplaced(tx, install.current_render_id, now);
        }
        await repo.setStateUnlessDeleting(tx, install.id, { current_render_id: r.render_id, state: 'healthy', reconciling: 0 }, now);
        await deps.hostnames.evictAgedPinned(tx, install.id, now - deps.preview.pinnedRetentionSeconds, now);
      },
    },
  ];

  const response = (ctx: Ctx): Record<string, Json> => {
    const r = renderOf(ctx);
    return {
      install_id: ctx.ownerId,
      render_id: r.render_id,
      urls: urlsOf(deps.preview, ctx.ownerId, r.routes, 0).map((u) => ({ route_key: u.route_key, url: u.url })),
    };
  };

  const create: WorkflowDefinition<DeployInput> = {
    type: INSTALL_CREATE,
    cancellable: true,
    steps: deploySteps,
    response,
    async onEnd(tx, ctx, outcome) {
      if (outcome !== 'SUCCEEDED') await repo.setStateUnlessDeleting(tx, ctx.ownerId, { state: 'failed', reconciling: 0 }, clock.now());
    },
    describe: (tx, ctx) => describeInstallOperation(tx, ctx, 'create'),
  };

  const update: WorkflowDefinition<DeployInput> = {
    type: INSTALL_UPDATE,
    cancellable: true,
    steps: deploySteps,
    response,
    async onEnd(tx, ctx, outcome) {
      if (outcome === 'SUCCEEDED') return;
      // The previous render still runs where one became current; else nothing ever did.
      const install = await repo.findInstallById(tx, ctx.ownerId);
      const state = install?.current_render_id ? 'degraded' : 'failed';
      const set = await repo.setStateUnlessDeleting(tx, ctx.ownerId, { state, reconciling: 0 }, clock.now());
      if (set && state === 'degraded' && outcome === 'FAILED') {
        const n = await namesOf(tx, ctx);
        await installDegraded(tx, {
          workspaceId: ctx.workspaceId, installId: ctx.ownerId, operationId: ctx.operationId,
          packageName: n.packageName, clusterName: n.clusterName ?? 'its cluster', semver: n.semver,
        });
      }
    },
    describe: (tx, ctx) => describeInstallOperation(tx, ctx, 'update'),
  };

  const remove: WorkflowDefinition<Record<string, never>> = {
    type: INSTALL_DELETE,
    // Halfway, the install may be off its cluster but still listed: finishing is the only way out.
    cancellable: false,
    admittedOverQuota: true,
    steps: [
      // Create, update and preview-hostname operations: all are owned by the install.
      drainOperationsStep(deps.operations, 'install'),
      {
        name: 'undeploy',
        retry: DRIVER_RETRY,
        // An unreachable cluster must not keep the install alive forever.
        skippable: true,
        async run(ctx) {
          const install = await repo.findInstallById(db, ctx.ownerId);
          if (!install) return null;
          // The preview router stops serving the install's hostnames first.
          await deps.hostnames.releaseAll(db, install.id, clock.now());
          const cluster = await findClusterById(db, install.cluster_id);
          if (!cluster) return null;
          await driverStep(() => driverFor(deps, cluster).undeploy(targetOf(cluster, deps.keyring), { installId: install.id, namespace: installNamespace(install.id) }, ctx));
          return null;
        },
        async apply(tx, ctx) {
          await repo.setDeletionState(tx, ctx.ownerId, { state: 'deleted' }, clock.now());
        },
      },
      {
        name: 'remove',
        async apply(tx, ctx) {
          // The install as its GET showed it last, for install.deleted (API.md 8.11), recorded in
          // the transaction that deletes it.
          const last = await installDetailIn(tx, deps.publicUrl, ctx.workspaceId, ctx.ownerId);
          // Its renders, URLs and preview hostnames go by foreign-key cascade.
          await repo.deleteInstall(tx, ctx.ownerId);
          if (last) await recordEvent(tx, { type: 'install.deleted', workspace_id: ctx.workspaceId, data: last });
        },
      },
    ],
    response: (ctx) => ({ install_id: ctx.ownerId }),
    async onEnd(tx, ctx, outcome) {
      if (outcome !== 'SUCCEEDED') await repo.setDeletionState(tx, ctx.ownerId, { reconciling: 0 }, clock.now());
    },
    describe: (tx, ctx) => describeInstallOperation(tx, ctx, 'delete'),
  };

  return [create, update, remove] as unknown as WorkflowDefinition<never>[];
}

export function registerInstallWorkflows(registry: WorkflowRegistry, deps: InstallWorkflowDeps): void {
  for (const workflow of installWorkflows(deps)) registry.register(workflow);
}

export interface ReleaseWorkspaceInstallsOptions {
  /**
   * From this attempt of the calling step on, an install whose undeploy keeps failing is given up
   * (its row deleted anyway), as install.delete skips its undeploy step. Default 3.
   */
  abandonFromAttempt?: number;
}

/**
 * For workspace deletion: undeploys every install of the workspace through its cluster's driver
 * and deletes its row (renders, URLs and hostnames cascade). Idempotent: run it again after a
 * crash or a failure and it picks up what is left. Throws a retryable StepError while some
 * undeploy fails and `abandonFromAttempt` is not reached.
 */
export async function releaseWorkspaceInstalls(
  deps: Pick<InstallWorkflowDeps, 'db' | 'drivers' | 'keyring'>,
  workspaceId: string,
  ctx: DriverCallContext,
  options: ReleaseWorkspaceInstallsOptions = {},
): Promise<{ released: number; abandoned: number }> {
  const rows = await repo.listInstallsOfWorkspace(deps.db, workspaceId);
  return releaseEach(rows, ctx, options.abandonFromAttempt ?? 3, 'install',
    async (row) => {
      const cluster = await findClusterById(deps.db, row.cluster_id);
      if (cluster) await driverFor(deps, cluster).undeploy(targetOf(cluster, deps.keyring), { installId: row.id, namespace: installNamespace(row.id) }, ctx);
    },
    (row) => repo.deleteInstall(deps.db, row.id));
}
