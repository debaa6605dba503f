// The subscription operations: workspace.subscription.change_tier, .cancel and .reactivate. The
// request has already recorded the change; the operation's one step applies what is due now (an
// upgrade), and reports the change request as it stands (a downgrade or cancel stays pending until
// the workers' sweep applies it at the period end). A payment provider's charge belongs in this step.
import type { Db } from '../../db/database.js';
import { StepError, type Json, type WorkflowDefinition, type WorkflowRegistry } from '../../jobs/workflows.js';
import { CANCEL, CHANGE_TIER, REACTIVATE } from './subscriptions.schemas.js';
import { workspaceName } from '../workspaces/workspaces.service.js';
import { changeOutcome, findChangeRequestById, type SubscriptionService } from './subscriptions.service.js';

type Input = { change_request_id: string };

export function registerSubscriptionWorkflows(registry: WorkflowRegistry, deps: { db: Db; subscriptions: Pick<SubscriptionService, 'applyChangeRequest'> }): void {
  for (const type of [CHANGE_TIER, CANCEL, REACTIVATE]) {
    const workflow: WorkflowDefinition<Input> = {
      type,
      // One step, idempotent and quick: nothing to stop halfway.
      cancellable: false,
      steps: [
        {
          name: 'apply_change',
          // Exactly once however often it runs: applying moves the request out of pending in one conditional update.
          async run(ctx) {
            const row = await deps.db.transaction().execute((tx) => deps.subscriptions.applyChangeRequest(tx, ctx.input.change_request_id));
            if (!row) throw new StepError(`change request ${ctx.input.change_request_id} no longer exists`, false);
            return changeOutcome(row);
          },
        },
      ],
      response: (ctx) => (ctx.results.apply_change ?? {}) as Record<string, Json>,
      // "Changing the plan of Acme to pro", "Cancelling the plan of Acme": for notifications.
      async describe(tx, ctx) {
        const change = await findChangeRequestById(tx, ctx.input.change_request_id);
        const name = await workspaceName(tx, ctx.workspaceId);
        const of = `the plan of ${name === null ? 'a workspace' : name}`;
        if (type === CANCEL) return `Cancelling ${of}`;
        if (type === REACTIVATE) return `Reactivating ${of}`;
        return `Changing ${of}${change ? ` to ${change.requested_tier}` : ''}`;
      },
    };
    registry.register(workflow);
  }
}
