// How a draft ends (API.md 8.7): every termination passes through `cleaning_up`, which releases what
// the draft allocated (its cluster unless an install was delivered to it, its worker bootstrap, an
// open checkout session) and gives the offer's use back, then `terminated`. A draft that allocated
// nothing in a customer workspace (ended in auth or workspace) is cleaned up in the same transaction;
// any other runs the order_draft.cleanup operation in the customer's workspace.
import type { Executor } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { SYSTEM_ACTOR, type OperationService } from '../operations/operations.service.js';
import { lockWorkspace } from '../workspaces/workspaces.service.js';
import { allows } from './draft-moves.js';
import { returnOfferUse } from './offer-uses.js';
import { recordDraftTerminated } from './draft-events.js';
import * as repo from './order-drafts.repo.js';
import type { TerminationReason } from './orders.schemas.js';

export const ORDER_DRAFT_COMPUTE = 'order_draft.compute';
export const ORDER_DRAFT_DELIVER = 'order_draft.deliver';
export const ORDER_DRAFT_CLEANUP = 'order_draft.cleanup';


/**
 * Ends a draft with `reason` by `move` (`end` before payment, `deliveryFailed` in install) if the draft still is in a phase it is allowed from;
 * answers the draft as it is now in cleaning_up (or terminated), or undefined when it had moved on.
 */
/** What ending a draft uses: the operations (its cleanup), and the public URL (the view its order_draft.terminated carries). */
export interface DraftEndDeps {
  operations: Pick<OperationService, 'start'>;
  publicUrl: string;
}

export async function endDraft(
  tx: Executor, deps: DraftEndDeps, draft: repo.DraftRow, reason: TerminationReason,
  actor: { actorId: string; userId: string | null } = SYSTEM_ACTOR, move: 'end' | 'deliveryFailed' = 'end',
): Promise<repo.DraftRow | undefined> {
  const now = clock.now();
  const moved = await repo.moveDraft(tx, draft.id, move, null, { termination_reason: reason }, now);
  if (!moved) return undefined;
  // Nothing to release where no customer workspace is (ended before one was chosen, or it was deleted with what it held).
  if (moved.workspace_id === null || !(await workspaceLive(tx, moved.workspace_id))) return finishTermination(tx, moved.id, deps.publicUrl);
  const op = await deps.operations.start(tx, {
    type: ORDER_DRAFT_CLEANUP, workspaceId: moved.workspace_id, ownerType: 'order_draft', ownerId: moved.id, clusterId: null,
    input: {}, metadata: { order_draft_id: moved.id, termination_reason: reason }, actor,
  });
  return repo.moveDraft(tx, moved.id, 'cleanupStarted', null, { cleanup_operation_id: op.id }, now);
}

/** Whether new work may start in the workspace: it exists and its deletion has not begun (locks its row, ordered against that). */
export async function workspaceLive(tx: Executor, workspaceId: string): Promise<boolean> {
  return (await lockWorkspace(tx, workspaceId))?.state === 'active';
}

/** The last move of a termination: the offer's use given back (an unpaid draft's), then terminated (order_draft.terminated). */
export async function finishTermination(tx: Executor, draftId: string, publicUrl: string): Promise<repo.DraftRow | undefined> {
  const draft = await repo.lockDraft(tx, draftId);
  if (!draft || !allows('terminate', draft.status)) return draft;
  if (draft.holds_use === 1) await returnOfferUse(tx, draft.offer_id);
  const terminated = await repo.moveDraft(tx, draft.id, 'terminate', null, { holds_use: 0 }, clock.now());
  if (terminated) await recordDraftTerminated(tx, terminated, publicUrl);
  return terminated;
}
