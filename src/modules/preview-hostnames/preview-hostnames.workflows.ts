// The preview hostname workflows. A bind (floating or pinned) checks its render is still there and
// then moves the binding, but only if it is still the latest request for the hostname (the
// request wrote its operation id as pending_operation_id): two rebinds of a track in a row end on
// the second render, whatever order their operations finish in. A release removes the row.
// The built-in preview router reads the rows on every request; on a kubernetes cluster the
// install's route objects hold its hostnames too, so each workflow ends by re-applying them
// (`route`, through the install's cluster driver; the local driver has nothing to do).
import type { Db, Executor } from '../../db/database.js';
import { DEFAULT_RETRY, StepError, type StepContext, type StepDefinition, type WorkflowDefinition, type WorkflowRegistry } from '../../jobs/workflows.js';
import { clock } from '../../platform/clock.js';
import { installNames, type InstallService } from '../installs/installs.service.js';
import * as repo from './preview-hostnames.repo.js';

export const BIND_FLOATING = 'preview_hostname.bind_floating';
export const BIND_PINNED = 'preview_hostname.bind_pinned';
export const RELEASE_HOSTNAME = 'preview_hostname.release';

export interface BindInput {
  preview_hostname_id: string;
  hostname: string;
  render_id: string;
  protocol: string;
  routing_mode: string;
  [key: string]: string;
}

export interface ReleaseInput {
  preview_hostname_id: string;
  hostname: string;
  [key: string]: string;
}

type BindCtx = StepContext<BindInput>;

export interface PreviewHostnameWorkflowDeps {
  db: Db;
  /** re-applies the install's route objects on its cluster */
  installs: Pick<InstallService, 'syncRoutes'>;
}

/** Re-applies the install's route objects with its hostnames as they now are (after the binding changed). */
function routeStep<I>(deps: PreviewHostnameWorkflowDeps, skippable: boolean): StepDefinition<I> {
  return {
    name: 'route',
    retry: DEFAULT_RETRY,
    skippable,
    async run(ctx) {
      await deps.installs.syncRoutes(ctx.ownerId, ctx);
      return null;
    },
  };
}

/** "Binding preview hostname x.preview.test to wiki on dev": the install by its package and cluster (a notification's wording). */
function describedAs(doing: string, preposition: string) {
  return async (tx: Executor, ctx: { ownerId: string; input: { hostname: string } }): Promise<string> => {
    const names = await installNames(tx, ctx.ownerId);
    return `${doing} preview hostname ${ctx.input.hostname} ${preposition} ${names ? `${names.package_name} on ${names.cluster_name}` : 'an install'}`;
  };
}

/** Why a bind cannot take effect, or null when it can (the hostname may still be superseded). */
async function bindBlocker(db: Executor, ctx: BindCtx): Promise<string | null> {
  const install = await repo.findInstallState(db, ctx.ownerId);
  if (!install || install.state === 'deleted') return `install ${ctx.ownerId} was deleted`;
  const row = await repo.findHostnameById(db, ctx.input.preview_hostname_id);
  if (!row) return `preview hostname ${ctx.input.preview_hostname_id} was released`;
  if (row.state === 'releasing') return `preview hostname ${ctx.input.preview_hostname_id} is being released`;
  if (!(await repo.findRender(db, ctx.ownerId, ctx.input.render_id))) return `render ${ctx.input.render_id} no longer exists`;
  return null;
}

function bindWorkflow(type: string, deps: PreviewHostnameWorkflowDeps): WorkflowDefinition<BindInput> {
  const { db } = deps;
  return {
    type,
    cancellable: true,
    steps: [
      {
        name: 'check_render',
        retryable: false,
        async run(ctx) {
          const blocker = await bindBlocker(db, ctx);
          if (blocker) throw new StepError(blocker, false);
          return null;
        },
      },
      {
        name: 'activate',
        retryable: false,
        async apply(tx, ctx) {
          const { input } = ctx;
          const binding = { render_id: input.render_id, protocol: input.protocol, routing_mode: input.routing_mode };
          if (await repo.applyBind(tx, input.preview_hostname_id, ctx.operationId, binding, clock.now())) return;
          // Superseded by a later request, which decides the binding; a hostname not served yet
          // serves this render meanwhile. Or the hostname is gone.
          if (await repo.activateProvisioning(tx, input.preview_hostname_id, binding, clock.now())) return;
          const blocker = await bindBlocker(tx, ctx);
          if (blocker) throw new StepError(blocker, false);
        },
      },
      // The hostname is served by the router from here on; a cluster that cannot be told fails
      // the operation, so the person binding sees why the workload does not answer there.
      routeStep(deps, false),
    ],
    response: (ctx) => ({ install_id: ctx.ownerId, preview_hostname_id: ctx.input.preview_hostname_id, hostname: ctx.input.hostname }),
    async onEnd(tx, ctx, outcome) {
      if (outcome === 'SUCCEEDED') return;
      const id = ctx.input.preview_hostname_id;
      const earlier = await repo.otherBindRunning(tx, ctx.ownerId, id, ctx.operationId, [BIND_FLOATING, BIND_PINNED]);
      await repo.abandonBind(tx, id, ctx.operationId, clock.now(), earlier);
    },
    describe: describedAs('Binding', 'to'),
  };
}

export function previewHostnameWorkflows(deps: PreviewHostnameWorkflowDeps): { binds: WorkflowDefinition<BindInput>[]; release: WorkflowDefinition<ReleaseInput> } {
  const release: WorkflowDefinition<ReleaseInput> = {
    type: RELEASE_HOSTNAME,
    // Once releasing, the hostname is no longer served: finishing is the only way out.
    cancellable: false,
    admittedOverQuota: true,
    steps: [
      {
        name: 'remove',
        async apply(tx, ctx) {
          await repo.deleteReleased(tx, ctx.input.preview_hostname_id);
        },
      },
      // Skippable: the release is done for svc either way (it cannot be undone), and the cluster
      // drops the hostname at the install's next deploy or hostname change.
      routeStep(deps, true),
    ],
    response: (ctx) => ({ install_id: ctx.ownerId, preview_hostname_id: ctx.input.preview_hostname_id, hostname: ctx.input.hostname }),
    describe: describedAs('Releasing', 'of'),
  };
  return { binds: [bindWorkflow(BIND_FLOATING, deps), bindWorkflow(BIND_PINNED, deps)], release };
}

export function registerPreviewHostnameWorkflows(registry: WorkflowRegistry, deps: PreviewHostnameWorkflowDeps): void {
  const { binds, release } = previewHostnameWorkflows(deps);
  for (const workflow of binds) registry.register(workflow);
  registry.register(release);
}
