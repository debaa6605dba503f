// Turns as people see and move them (spec endpoint 3, API.md 8.6): submission with its admission,
// reads, and a person's verbs (:respond, :cancel, :wait). Approval requests are in
// agent-approvals.service.ts; the work of a turn is agent-runner.ts's.
import type { Db, Dialect, Executor } from '../../db/database.js';
import type { Notifier } from '../../jobs/notifier.js';
import type { WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { etagMismatch, etagOf } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import type { AgentsConfig } from '../../config-agents.js';
import type { QuotaService } from '../quotas/quotas.service.js';
import { agentTurnWaiting } from '../notifications/sources.js';
import { findUserById } from '../users/users.service.js';
import { OperationWaiters } from '../operations/operation-waiters.js';
import { writerColumns, type Writer } from '../snippets/snippet-writer.js';
import type { EventInput, EventLog } from './agent-events.js';
import { turnUsage } from './agent-usage.js';
import * as repo from './agents.repo.js';
import { isTerminalTurn, isWaitingTurn, type CreateTurnBodyT, type TurnT } from './agents.schemas.js';
import { modelPolicyOf, writePolicyOf, type AgentService } from './agents.service.js';
import { admissionOf } from './turn-admission.js';
import type { TurnMoves } from './turn-moves.js';

const turnNotWaiting = (id: string, state: string) =>
  new ApiError('FAILED_PRECONDITION', `agent turn ${id} is ${state}, not WAITING_FOR_INPUT: there is no question to answer`, { reason: 'TURN_NOT_WAITING' });

export function toTurn(row: repo.TurnRow): TurnT {
  return {
    id: row.id, workspace_id: row.workspace_id, organization_id: null, agent_id: row.agent_id, session_id: row.session_id,
    state: row.state as TurnT['state'], origin: row.origin as TurnT['origin'], input: { content: row.input_content },
    runtime_hint: row.runtime_hint as TurnT['runtime_hint'], model: row.model, created_by: row.created_by, started_at: row.started_at,
    completed_at: row.completed_at, runtime_decision: row.runtime_decision as TurnT['runtime_decision'], decision_reason: row.decision_reason,
    resolved_execution_mode: row.resolved_execution_mode as TurnT['resolved_execution_mode'],
    admission_error: { code: row.admission_error_code ?? '', message: row.admission_error_message ?? '' },
    usage_summary: turnUsage(row), failure: { code: row.failure_code ?? '', message: row.failure_message ?? '' },
    created_at: row.created_at, updated_at: row.updated_at, etag: etagOf(row.revision),
  };
}

export interface TurnServiceDeps {
  db: Db;
  dialect: Dialect;
  cursors: CursorCodec;
  notifier: Notifier;
  quotas: Pick<QuotaService, 'enforce' | 'check'>;
  agents: AgentService;
  events: EventLog;
  moves: TurnMoves;
  config: AgentsConfig;
}

/** Who asked for a turn, as the approvers know them: a person's name and e-mail (one read by primary key). */
async function askerOf(tx: Executor, actorId: string): Promise<string> {
  const user = isId('user', actorId) ? await findUserById(tx, actorId) : undefined;
  if (!user) return 'A member';
  return user.name ? `${user.name} (${user.email})` : user.email;
}

export function createTurnService(deps: TurnServiceDeps) {
  const { db, dialect, cursors, agents, events, moves } = deps;
  const waiters = new OperationWaiters(deps.notifier, 'svc_agent_turns');

  /** The turn when the caller may read its session; 404 otherwise. */
  async function readableTurn(executor: Executor, scope: WorkspaceScope, id: string): Promise<repo.TurnRow> {
    const row = isId('agentTurn', id) ? await repo.findTurn(executor, id) : undefined;
    if (!row || row.workspace_id !== scope.workspaceId) throw notFound('agent turn');
    await agents.readableSession(executor, scope, row.session_id).catch(() => {
      throw notFound('agent turn');
    });
    return row;
  }

  /** The turn when the caller created its session (the only one who moves it). */
  async function ownTurn(executor: Executor, scope: WorkspaceScope, id: string): Promise<repo.TurnRow> {
    const row = await readableTurn(executor, scope, id);
    await agents.ownSession(executor, scope, row.session_id);
    return row;
  }

  /**
   * POST /v1/agent_turns in the caller's (idempotent) transaction: admits the turn and records the
   * decision on it. ALLOWED queues it (a job runs it once the session's earlier turns ended),
   * DENIED ends it FAILED with admission_error, APPROVAL_REQUIRED waits for an admin.
   */
  async function submit(writer: Writer, body: CreateTurnBodyT, origin: TurnT['origin'], tx: Executor): Promise<TurnT> {
    const { scope } = writer;
    const session = await agents.ownSession(tx, scope, body.session_id);
    await repo.lockSession(tx, dialect, session.id);
    const agent = (await repo.findAgent(tx, scope.workspaceId, session.agent_id))!;
    const policy = modelPolicyOf(agent);
    const admission = await admissionOf(tx, { scope, session, agent, policy, writes: writePolicyOf(agent), hint: body.runtime_hint ?? 'AUTO', quotas: deps.quotas, config: deps.config });
    const now = clock.now();
    const denied = admission.decision === 'DENIED';
    const row: repo.TurnRow = {
      id: newId('agentTurn'), workspace_id: scope.workspaceId, agent_id: agent.id, session_id: session.id,
      state: denied ? 'FAILED' : admission.decision === 'APPROVAL_REQUIRED' ? 'WAITING_FOR_PERMISSION' : 'QUEUED',
      origin, input_content: body.message, runtime_hint: body.runtime_hint ?? 'AUTO', model: policy.default_model, provider: policy.provider,
      created_by: scope.actorId, ...pickWriter(await writerColumns(tx, writer)), started_at: null, completed_at: denied ? now : null,
      runtime_decision: admission.decision, decision_reason: admission.reason,
      resolved_execution_mode: denied ? null : 'CODE_MODE',
      admission_error_code: admission.error?.code ?? null, admission_error_message: admission.error?.message ?? null,
      failure_code: admission.error?.code ?? null, failure_message: admission.error?.message ?? null,
      cost_microcents: 0, token_count: 0, compute_ms: 0, api_call_count: 0, ...repo.NO_RESERVATION, output_text: null, cancel_requested: 0,
      created_at: now, updated_at: now, revision: 1,
    };
    await repo.insertTurn(tx, row);
    const appended: EventInput[] = [{ type: 'turn.queued', data: { state: 'QUEUED', content: row.input_content } }];
    if (denied) {
      appended.push({ type: 'turn.failed', data: { state: 'FAILED', failure: { code: row.failure_code, message: row.failure_message } } });
    } else if (admission.decision === 'APPROVAL_REQUIRED') {
      const approvalId = newId('approvalRequest');
      await repo.insertApproval(tx, {
        id: approvalId, workspace_id: row.workspace_id, agent_id: row.agent_id, session_id: row.session_id, turn_id: row.id, step_id: null,
        kind: 'TURN', code: null, summary: row.input_content.slice(0, 2000), state: 'PENDING', reason: null, resolved_by: null, resolved_at: null,
        created_by: scope.actorId, created_at: now, updated_at: now, revision: 1,
      });
      appended.push({ type: 'approval.requested', data: { approval_request_id: approvalId, kind: 'TURN', call_id: null, code: null, summary: row.input_content.slice(0, 2000) } });
      await agentTurnWaiting(tx, {
        workspaceId: row.workspace_id, turnId: row.id, sessionId: row.session_id, waitingFor: 'approval', stepKey: approvalId, to: { adminsOf: row.workspace_id },
        what: `${await askerOf(tx, scope.actorId)} asked agent ${agent.name}, which writes without asking, to act: "${row.input_content.slice(0, 300)}".`,
      });
    } else if (!(await repo.earlierOpenTurn(tx, session.id, row.id))) {
      await moves.schedule(tx, row.id);
    }
    await events.append(tx, row, appended);
    await moves.mirrorOnSession(tx, row);
    return toTurn(row);
  }

  async function loadTurn(workspaceId: string, id: string): Promise<TurnT | null> {
    const row = await repo.findTurn(db, id);
    return row && row.workspace_id === workspaceId ? toTurn(row) : null;
  }

  async function getTurn(scope: WorkspaceScope, id: string): Promise<TurnT> {
    return toTurn(await readableTurn(db, scope, id));
  }

  async function listTurns(scope: WorkspaceScope, query: PageQueryT & { session_id: string }): Promise<Page<TurnT>> {
    await agents.readableSession(db, scope, query.session_id);
    const filters = { session_id: query.session_id };
    const page = cursors.request(query, scope.workspaceId, filters);
    const rows = await repo.listTurns(db, scope.workspaceId, query.session_id, page);
    return cursors.page(rows, page, scope.workspaceId, filters, toTurn);
  }

  /** :respond: the answer to the model's question; the turn runs on. */
  async function respond(scope: WorkspaceScope, id: string, revision: number | null, content: string): Promise<TurnT> {
    const row = await db.transaction().execute(async (tx) => {
      const turn = await ownTurn(tx, scope, id);
      await repo.lockSession(tx, dialect, turn.session_id);
      const current = (await repo.findTurn(tx, id))!;
      if (revision !== null && current.revision !== revision) throw etagMismatch(`agent turn ${id}`, current.revision);
      if (current.state !== 'WAITING_FOR_INPUT') throw turnNotWaiting(id, current.state);
      const step = (await repo.openToolSteps(tx, id)).find((s) => s.tool === 'ask_user' && s.state === 'WAITING');
      const result = { answer: content };
      if (step) await repo.moveStep(tx, step.id, ['WAITING'], { state: 'DONE', result: JSON.stringify(result), completed_at: clock.now() });
      const moved = await moves.move(tx, id, 'RUNNING', {}, [
        { type: 'input.received', data: { content } },
        ...(step ? [{ type: 'tool.completed' as const, data: { call_id: step.call_id, tool: 'ask_user', result } }] : []),
      ], 'agent_turn.respond');
      if (!moved) throw turnNotWaiting(id, current.state);
      await moves.schedule(tx, id);
      return moved;
    });
    return toTurn(row);
  }

  /**
   * :cancel: the turn is CANCELLED now. A tool call that was running is recorded as cancelled; the
   * worker running the turn hears of it (svc_agent_turns) and aborts the model call and the sandbox
   * run at once; what it would still write is refused (the turn is no longer in a running state).
   */
  async function cancel(scope: WorkspaceScope, id: string): Promise<TurnT> {
    const row = await db.transaction().execute(async (tx) => {
      const turn = await ownTurn(tx, scope, id);
      await repo.lockSession(tx, dialect, turn.session_id);
      const current = (await repo.findTurn(tx, id))!;
      if (isTerminalTurn(current.state)) {
        throw new ApiError('FAILED_PRECONDITION', `agent turn ${id} already ended ${current.state}`, { reason: 'TURN_ENDED' });
      }
      const appended: EventInput[] = [];
      for (const step of await repo.openToolSteps(tx, id)) {
        const result = { ok: false, cancelled: true, message: 'the turn was cancelled before this tool call finished' };
        await repo.moveStep(tx, step.id, ['RUNNING', 'WAITING'], { state: 'DONE', result: JSON.stringify(result), completed_at: clock.now() });
        appended.push({ type: 'tool.completed', data: { call_id: step.call_id, tool: step.tool, result } });
      }
      appended.push({ type: 'turn.cancelled', data: { state: 'CANCELLED' } });
      const moved = await moves.move(tx, id, 'CANCELLED', { cancel_requested: 1 }, appended, 'agent_turn.cancel');
      if (!moved) throw new ApiError('FAILED_PRECONDITION', `agent turn ${id} already ended`, { reason: 'TURN_ENDED' });
      return moved;
    });
    return toTurn(row);
  }

  /** :wait: answers as soon as the turn ended or waits on a person, or at the timeout (pushed, not polled). */
  async function wait(scope: WorkspaceScope, id: string, timeoutMs: number, safetyPollMs: number): Promise<TurnT> {
    const watch = waiters.watch(id);
    const deadline = Date.now() + timeoutMs;
    try {
      for (;;) {
        watch.takeNotified();
        const turn = await readableTurn(db, scope, id);
        const left = deadline - Date.now();
        if (isTerminalTurn(turn.state) || isWaitingTurn(turn.state) || left <= 0 || waiters.closing) return toTurn(turn);
        if (!watch.takeNotified()) await watch.sleep(Math.min(left, safetyPollMs));
      }
    } finally {
      watch.close();
    }
  }

  function releaseWaiters(): void {
    waiters.releaseAll();
  }

  return { readableTurn, ownTurn, submit, loadTurn, getTurn, listTurns, respond, cancel, wait, releaseWaiters };
}

function pickWriter(w: { writer_user_id: string | null; writer_role_cap: string | null }) {
  return { writer_user_id: w.writer_user_id, writer_role_cap: w.writer_role_cap };
}

export type TurnService = ReturnType<typeof createTurnService>;
