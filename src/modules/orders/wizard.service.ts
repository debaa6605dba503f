// The customer's steps of the wizard (API.md 8.7): choosing the workspace (which starts the compute
// phase), the worker bootstrap of a bring-your-own server, and the configuration (which leads to
// payment, or straight to the delivery when nothing is to be paid). Rights are read when each step
// runs: the customer's role in their workspace now, never one remembered from an earlier step.
import type { Db, Executor } from '../../db/database.js';
import type { Json } from '../../jobs/workflows.js';
import { ApiError, permissionDenied } from '../../platform/errors.js';
import { clock } from '../../platform/clock.js';
import { isId } from '../../platform/ids.js';
import { roleAtLeast } from '../../platform/auth.js';
import type { CreatedWorkerBootstrapT } from '../machines/machines.schemas.js';
import { revokeActiveBootstrap, type WorkerBootstrapService } from '../machines/worker-bootstraps.service.js';
import type { OperationService } from '../operations/operations.service.js';
import { findVersion } from '../packages/packages.service.js';
import { mergeFieldValues } from '../offers/offer-values.js';
import { fieldValuesOf } from '../offers/offers.service.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import { findMemberRole } from '../workspaces/workspaces.service.js';
import type { WorkspaceService } from '../workspaces/workspaces.service.js';
import { endDraft, ORDER_DRAFT_COMPUTE, workspaceLive } from './draft-endings.js';
import { findOfferById, offerWithdrawn, type OfferRow } from './offer-uses.js';
import { commitOrder } from './order-commit.js';
import * as repo from './order-drafts.repo.js';
import { customerScope, offerNotRedeemable, type OrderDraftService } from './order-drafts.service.js';
import { amountOf } from './order-drafts.view.js';
import type { OrderDraftT, SelectWorkspaceBodyT } from './orders.schemas.js';

export interface WizardDeps {
  db: Db;
  drafts: OrderDraftService;
  operations: Pick<OperationService, 'start'>;
  /** the view order_draft.terminated carries names it */
  publicUrl: string;
  workspaces: Pick<WorkspaceService, 'createWorkspace'>;
  workerBootstraps: Pick<WorkerBootstrapService, 'createBootstrap'>;
}

export function createWizardService(deps: WizardDeps) {
  const { db, drafts } = deps;

  /** :selectWorkspace (workspace -> compute): an existing workspace where the customer is owner or admin, or a new one they own. */
  async function selectWorkspace(userId: string, id: string, revision: number | null, body: SelectWorkspaceBodyT): Promise<OrderDraftT> {
    return db.transaction().execute(async (tx) => {
      const row = await drafts.customerDraftIn(tx, userId, id, revision, 'selectWorkspace');
      let workspaceId: string;
      let created = 0;
      if (body.kind === 'existing') {
        const member = isId('workspace', body.workspace_id)
          ? await findMemberRole(tx, body.workspace_id, userId)
          : undefined;
        if (!member) throw permissionDenied(`you are not a member of workspace ${body.workspace_id}`, 'NOT_A_MEMBER');
        if (!roleAtLeast(member.role as 'member', 'admin')) {
          throw permissionDenied('the order registers a cluster and installs in the workspace: choose one where you are owner or admin', 'ROLE_TOO_LOW');
        }
        await assertWorkspaceActive(tx, body.workspace_id);
        workspaceId = body.workspace_id;
      } else {
        workspaceId = (await deps.workspaces.createWorkspace(userId, { name: body.name }, tx)).id;
        created = 1;
      }
      const now = clock.now();
      await repo.moveDraft(tx, id, 'selectWorkspace', row.revision, {
        workspace_id: workspaceId, workspace_created: created, content_revision: row.content_revision + 1,
      }, now);
      const op = await deps.operations.start(tx, {
        type: ORDER_DRAFT_COMPUTE, workspaceId, ownerType: 'order_draft', ownerId: id, clusterId: null,
        input: {}, metadata: { order_draft_id: id }, actor: { actorId: userId, userId },
      });
      const moved = await repo.moveDraft(tx, id, 'computeStarted', null, { compute_operation_id: op.id }, now);
      return drafts.customerView(tx, moved!);
    });
  }

  /** :createWorkerBootstrap (compute_bootstrap): a one-time join token for the customer's own server, for the draft's cluster. */
  async function createDraftBootstrap(userId: string, id: string, revision: number | null, ttlSeconds: number): Promise<{ order_draft: OrderDraftT; worker_bootstrap: CreatedWorkerBootstrapT }> {
    return db.transaction().execute(async (tx) => {
      const row = await drafts.customerDraftIn(tx, userId, id, revision, 'bootstrapIssued');
      const scope = await customerScope(tx, row);
      if (!scope) throw permissionDenied(`you are no longer a member of workspace ${row.workspace_id}`, 'NOT_A_MEMBER');
      const now = clock.now();
      if (row.bootstrap_id !== null) await revokeActiveBootstrap(tx, row.bootstrap_id, now);
      const bootstrap = await deps.workerBootstraps.createBootstrap(scope, row.cluster_id!, ttlSeconds, tx);
      const moved = await repo.moveDraft(tx, id, 'bootstrapIssued', row.revision, { bootstrap_id: bootstrap.id }, now);
      return { order_draft: await drafts.customerView(tx, moved!), worker_bootstrap: bootstrap };
    });
  }

  /** The offer's values merged with the customer's (locked ones win), checked against the version's whole schema. */
  async function checkedConfiguration(tx: Executor, row: repo.DraftRow, offer: OfferRow, values: Record<string, Json>): Promise<Record<string, Json>> {
    const version = await findVersion(tx, row.seller_workspace_id, row.package_version_id!);
    if (!version) throw offerNotRedeemable('the version this offer sells no longer exists');
    return mergeFieldValues(version, fieldValuesOf(offer), values);
  }

  /**
   * :submitConfiguration (configure, or payment before it is paid): -> payment, or -> install with
   * the order committed when nothing is to be paid. Changing it in payment makes the open checkout
   * session stale (the next endpoint 13 call replaces it). An offer archived or expired meanwhile
   * ends the draft `offer_expired` (422 OFFER_NOT_REDEEMABLE).
   */
  async function submitConfiguration(userId: string, id: string, revision: number | null, values: Record<string, Json>): Promise<OrderDraftT> {
    const outcome = await db.transaction().execute(async (tx) => {
      const row = await drafts.customerDraftIn(tx, userId, id, revision, 'submitConfiguration');
      const offer = (await findOfferById(tx, row.offer_id))!;
      const now = clock.now();
      if (offerWithdrawn(offer, now)) {
        await endDraft(tx, deps, row, 'offer_expired');
        return null;
      }
      const checked = await checkedConfiguration(tx, row, offer, values);
      if (!(await workspaceLive(tx, row.workspace_id!))) {
        throw new ApiError('FAILED_PRECONDITION', `workspace ${row.workspace_id} is being deleted: cancel this draft and order again`, { reason: 'WORKSPACE_DELETING' });
      }
      const free = amountOf(offer) === 0;
      const moved = await repo.moveDraft(tx, id, 'submitConfiguration', row.revision, {
        status: free ? 'install' : 'payment', field_values: JSON.stringify(checked), content_revision: row.content_revision + 1,
        ...(free ? { payment_completed: 1 } : {}),
      }, now);
      if (free) await commitOrder(tx, deps.operations, moved!, offer, null);
      return drafts.customerView(tx, (await repo.findDraft(tx, id))!);
    });
    if (!outcome) throw offerNotRedeemable(`the offer of order draft ${id} was archived or expired; the draft ended`);
    return outcome;
  }

  return { selectWorkspace, createDraftBootstrap, submitConfiguration };
}

export type WizardService = ReturnType<typeof createWizardService>;
