// Approval requests (API.md 8.6): a turn paused until a person decides. CHANGE requests hold code
// the model proposed; the session's creator decides, and the code runs (or the model hears of the
// rejection) when the turn's job picks up again. TURN requests hold a member's turn on an agent
// that writes without asking; an owner or admin decides whether it runs at all. Every decision is
// audited (approval_request.approve / .reject).
import type { Db, Dialect, Executor } from '../../db/database.js';
import { requireRole, roleAtLeast, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { etagMismatch, etagOf } from '../../platform/etag.js';
import { isId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { recordAuditEvent } from '../audit/audit.js';
import * as repo from './agents.repo.js';
import type { ApprovalRequestT } from './agents.schemas.js';
import type { AgentService } from './agents.service.js';
import type { TurnMoves } from './turn-moves.js';

export function toApproval(row: repo.ApprovalRow): ApprovalRequestT {
  return {
    id: row.id, workspace_id: row.workspace_id, agent_id: row.agent_id, session_id: row.session_id, turn_id: row.turn_id,
    kind: row.kind as ApprovalRequestT['kind'], code: row.code, summary: row.summary, state: row.state as ApprovalRequestT['state'],
    reason: row.reason, resolved_by: row.resolved_by, resolved_at: row.resolved_at, created_at: row.created_at, updated_at: row.updated_at,
    etag: etagOf(row.revision),
  };
}

const notPending = (id: string, state: string) =>
  new ApiError('FAILED_PRECONDITION', `approval request ${id} is ${state}: only a PENDING request can be resolved`, { reason: 'APPROVAL_NOT_PENDING' });

export function createApprovalService(deps: { db: Db; dialect: Dialect; cursors: CursorCodec; agents: AgentService; moves: TurnMoves }) {
  const { db, dialect, cursors, agents, moves } = deps;

  /** Admins and owners see every request; a member those of their own sessions (never a TURN request: that one is about them). */
  async function readable(executor: Executor, scope: WorkspaceScope, id: string): Promise<repo.ApprovalRow> {
    const row = isId('approvalRequest', id) ? await repo.findApproval(executor, scope.workspaceId, id) : undefined;
    if (!row) throw notFound('approval request');
    if (!roleAtLeast(scope.role, 'admin')) {
      const session = await repo.findSession(executor, scope.workspaceId, row.session_id);
      if (row.kind !== 'CHANGE' || session?.created_by !== scope.actorId) throw notFound('approval request');
    }
    return row;
  }

  async function get(scope: WorkspaceScope, id: string): Promise<ApprovalRequestT> {
    return toApproval(await readable(db, scope, id));
  }

  async function load(workspaceId: string, id: string): Promise<ApprovalRequestT | null> {
    const row = await repo.findApproval(db, workspaceId, id);
    return row ? toApproval(row) : null;
  }

  async function list(scope: WorkspaceScope, query: PageQueryT & { state?: string | undefined; session_id?: string | undefined }): Promise<Page<ApprovalRequestT>> {
    const filters: repo.ApprovalFilters = {
      state: query.state, session_id: query.session_id, session_created_by: roleAtLeast(scope.role, 'admin') ? undefined : scope.actorId,
    };
    const page = cursors.request(query, scope.workspaceId, filters as Record<string, unknown>);
    const rows = await repo.listApprovals(db, scope.workspaceId, filters, page);
    return cursors.page(rows, page, scope.workspaceId, filters as Record<string, unknown>, toApproval);
  }

  /**
   * :resolve. CHANGE: only the session's creator; the turn runs again (RUNNING) and its job runs
   * the approved code or tells the model of the rejection. TURN: owners and admins; approved, the
   * turn is QUEUED and runs in its order; rejected, it ends CANCELLED with the reason.
   */
  async function resolve(scope: WorkspaceScope, id: string, revision: number | null, decision: 'APPROVE' | 'REJECT', reason: string | null, tx: Executor): Promise<ApprovalRequestT> {
    const row = await readable(tx, scope, id);
    if (row.kind === 'TURN') requireRole(scope, 'admin');
    else await agents.ownSession(tx, scope, row.session_id);
    await repo.lockSession(tx, dialect, row.session_id);
    const current = (await repo.findApproval(tx, scope.workspaceId, id))!;
    if (revision !== null && current.revision !== revision) throw etagMismatch(`approval request ${id}`, current.revision);
    if (current.state !== 'PENDING') throw notPending(id, current.state);
    const now = clock.now();
    const approved = decision === 'APPROVE';
    const updated = await repo.updateApprovalIf(tx, id, current.revision, ['PENDING'], {
      state: approved ? 'APPROVED' : 'REJECTED', reason, resolved_by: scope.actorId, resolved_at: now, updated_at: now,
    });
    if (!updated) throw notPending(id, current.state);
    const resolved = { type: 'approval.resolved' as const, data: { approval_request_id: id, decision, reason, resolved_by: scope.actorId } };
    let moved: repo.TurnRow | undefined;
    if (row.kind === 'CHANGE') {
      moved = await moves.move(tx, row.turn_id, 'RUNNING', {}, [resolved], 'approval_request.resolve');
      if (moved) await moves.schedule(tx, row.turn_id);
    } else if (approved) {
      moved = await moves.move(tx, row.turn_id, 'QUEUED', {}, [resolved], 'approval_request.resolve');
      if (moved && !(await repo.earlierOpenTurn(tx, moved.session_id, moved.id))) await moves.schedule(tx, moved.id);
    } else {
      const why = `rejected by ${scope.actorId}${reason ? `: ${reason}` : ''}`;
      moved = await moves.move(tx, row.turn_id, 'CANCELLED', { decision_reason: why.slice(0, 2000) }, [resolved, { type: 'turn.cancelled', data: { state: 'CANCELLED' } }], 'approval_request.resolve');
    }
    if (!moved) throw new ApiError('FAILED_PRECONDITION', `the turn of approval request ${id} no longer waits for it`, { reason: 'APPROVAL_NOT_PENDING' });
    await recordAuditEvent(tx, scope, {
      action: approved ? 'approval_request.approve' : 'approval_request.reject', resourceType: 'approval_request', resourceId: id,
      metadata: { turn_id: row.turn_id, kind: row.kind, ...(reason ? { reason: reason.slice(0, 200) } : {}) },
    });
    return toApproval(updated);
  }

  return { get, load, list, resolve };
}

export type ApprovalService = ReturnType<typeof createApprovalService>;
