// SQL of agents, sessions, turns, steps and approval requests (API.md 8.6). One statement per
// function; the services compose them in transactions. Events have their own file (agent-events.repo.ts).
import { sql, type Selectable } from 'kysely';
import type { Dialect, Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { Database } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type AgentRow = Selectable<Database['agents']>;
export type SessionRow = Selectable<Database['agent_sessions']>;
export type TurnRow = Selectable<Database['agent_turns']>;
export type StepRow = Selectable<Database['agent_turn_steps']>;
export type ApprovalRow = Selectable<Database['agent_approval_requests']>;

/** the summed usage of a set of turns, as the database returns it (sums may come back as strings) */
export interface UsageSums {
  cost_cents: number | string | null;
  tokens: number | string | null;
  compute_ms: number | string | null;
  api_calls: number | string | null;
}

/** a turn's cost in whole cents, rounded up (integer division on both dialects: the column is an integer) */
const ROUNDED_CENTS = sql<number>`(cost_microcents + 999999) / 1000000`;

// ---- agents ----

export async function insertAgent(tx: Executor, row: AgentRow): Promise<void> {
  await tx.insertInto('agents').values(row).execute();
}

export function findAgent(db: Executor, workspaceId: string, id: string): Promise<AgentRow | undefined> {
  return db.selectFrom('agents').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/** The id of a secret of the workspace (an agent's credential secret must be one), or undefined. */
export function findWorkspaceSecretId(db: Executor, workspaceId: string, secretId: string): Promise<{ id: string } | undefined> {
  return db.selectFrom('secrets').select('id').where('id', '=', secretId).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

export function listAgents(db: Executor, workspaceId: string, state: string | undefined, page: PageRequest): Promise<AgentRow[]> {
  let q = db.selectFrom('agents').selectAll().where('workspace_id', '=', workspaceId);
  if (state) q = q.where('state', '=', state);
  return keysetPage(q, 'id', page).execute();
}

/** Writes `changes` when the revision matches (null: any); returns the new row, or undefined. */
export function updateAgentIf(tx: Executor, workspaceId: string, id: string, revision: number | null, changes: Partial<AgentRow>): Promise<AgentRow | undefined> {
  let q = tx.updateTable('agents').set((eb) => ({ ...changes, revision: eb('revision', '+', 1) })).where('id', '=', id).where('workspace_id', '=', workspaceId);
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

// ---- sessions ----

export async function insertSession(tx: Executor, row: SessionRow): Promise<void> {
  await tx.insertInto('agent_sessions').values(row).execute();
}

export function findSession(db: Executor, workspaceId: string, id: string): Promise<SessionRow | undefined> {
  return db.selectFrom('agent_sessions').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/** The session's row lock (PostgreSQL; SQLite's transaction holds the database): orders a session's turns and events. */
export async function lockSession(tx: Executor, dialect: Dialect, id: string): Promise<SessionRow | undefined> {
  let q = tx.selectFrom('agent_sessions').selectAll().where('id', '=', id);
  if (dialect === 'postgres') q = q.forUpdate();
  return q.executeTakeFirst();
}

/** The row lock of a turn's session (PostgreSQL), by the turn's id: one statement. */
export async function lockSessionOfTurn(tx: Executor, turnId: string): Promise<void> {
  await tx.selectFrom('agent_sessions').select('id').where('id', '=', (eb) => eb.selectFrom('agent_turns').select('session_id').where('id', '=', turnId)).forUpdate().execute();
}

export interface SessionFilters {
  agent_id?: string | undefined;
  state?: string | undefined;
  /** only the sessions this actor created (members see only theirs) */
  created_by?: string | undefined;
}

export function listSessions(db: Executor, workspaceId: string, filters: SessionFilters, page: PageRequest): Promise<SessionRow[]> {
  let q = db.selectFrom('agent_sessions').selectAll().where('workspace_id', '=', workspaceId);
  if (filters.agent_id) q = q.where('agent_id', '=', filters.agent_id);
  if (filters.state) q = q.where('state', '=', filters.state);
  if (filters.created_by) q = q.where('created_by', '=', filters.created_by);
  return keysetPage(q, 'id', page).execute();
}

/** The session mirrors its newest turn's state (turn-moves.ts). */
export async function setSessionState(tx: Executor, id: string, state: string, now: number): Promise<void> {
  await tx
    .updateTable('agent_sessions')
    .set((eb) => ({ state, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .execute();
}

export function updateSessionIf(tx: Executor, workspaceId: string, id: string, revision: number | null, changes: Partial<SessionRow>): Promise<SessionRow | undefined> {
  let q = tx.updateTable('agent_sessions').set((eb) => ({ ...changes, revision: eb('revision', '+', 1) })).where('id', '=', id).where('workspace_id', '=', workspaceId);
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

// ---- turns ----

export async function insertTurn(tx: Executor, row: TurnRow): Promise<void> {
  await tx.insertInto('agent_turns').values(row).execute();
}

export function findTurn(db: Executor, id: string): Promise<TurnRow | undefined> {
  return db.selectFrom('agent_turns').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listTurns(db: Executor, workspaceId: string, sessionId: string, page: PageRequest): Promise<TurnRow[]> {
  const q = db.selectFrom('agent_turns').selectAll().where('workspace_id', '=', workspaceId).where('session_id', '=', sessionId);
  return keysetPage(q, 'id', page).execute();
}

/** Changes the turn when it is still in one of `from`; returns the new row, or undefined. */
export function moveTurn(tx: Executor, id: string, from: readonly string[], changes: Partial<TurnRow>): Promise<TurnRow | undefined> {
  return tx
    .updateTable('agent_turns')
    .set((eb) => ({ ...changes, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('state', 'in', from as string[])
    .returningAll()
    .executeTakeFirst();
}

/** Adds usage to a turn (no revision change: usage moves without a state change). */
export async function addTurnUsage(tx: Executor, id: string, add: { cost_microcents: number; token_count: number; compute_ms: number; api_call_count: number }): Promise<TurnRow | undefined> {
  return tx
    .updateTable('agent_turns')
    .set((eb) => ({
      cost_microcents: eb('cost_microcents', '+', add.cost_microcents),
      token_count: eb('token_count', '+', add.token_count),
      compute_ms: eb('compute_ms', '+', add.compute_ms),
      api_call_count: eb('api_call_count', '+', add.api_call_count),
    }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** The session's earliest turn that has not ended, if it is not `turnId` (a session runs its turns in order). */
export function earlierOpenTurn(db: Executor, sessionId: string, turnId: string): Promise<{ id: string } | undefined> {
  return db
    .selectFrom('agent_turns')
    .select('id')
    .where('session_id', '=', sessionId)
    .where('id', '<', turnId)
    .where('state', 'not in', ['COMPLETED', 'FAILED', 'CANCELLED'])
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
}

/** The session's oldest QUEUED turn: it runs next. */
export function nextQueuedTurn(db: Executor, sessionId: string): Promise<{ id: string } | undefined> {
  return db.selectFrom('agent_turns').select('id').where('session_id', '=', sessionId).where('state', '=', 'QUEUED').orderBy('id').limit(1).executeTakeFirst();
}

/** The session's newest turn: its state is the session's. */
export function latestTurn(db: Executor, sessionId: string): Promise<{ id: string; state: string } | undefined> {
  return db.selectFrom('agent_turns').select(['id', 'state']).where('session_id', '=', sessionId).orderBy('id', 'desc').limit(1).executeTakeFirst();
}

/** Earlier finished turns of the session, oldest first, for the conversation the model sees. */
export function historyOf(db: Executor, sessionId: string, beforeTurnId: string, limit: number): Promise<Pick<TurnRow, 'id' | 'input_content' | 'output_text' | 'state'>[]> {
  return db
    .selectFrom('agent_turns')
    .select(['id', 'input_content', 'output_text', 'state'])
    .where('session_id', '=', sessionId)
    .where('id', '<', beforeTurnId)
    .where('state', 'in', ['COMPLETED', 'FAILED', 'CANCELLED'])
    .orderBy('id', 'desc')
    .limit(limit)
    .execute()
    .then((rows) => rows.reverse());
}

export async function hasTurnJob(db: Executor, turnId: string): Promise<boolean> {
  return (await db.selectFrom('jobs').select('id').where('agent_turn_id', '=', turnId).executeTakeFirst()) !== undefined;
}

/** Usage sums of turns grouped by a column, for a page of agents or sessions (one statement, no N+1). */
export function usageBy(db: Executor, column: 'agent_id' | 'session_id', ids: string[]): Promise<(UsageSums & { key: string })[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('agent_turns')
    .select((eb) => [
      eb.ref(column).as('key'),
      // each turn's cost rounds up to whole cents on its own (API.md 8.6), then they add up
      eb.fn.sum<number | string>(ROUNDED_CENTS).as('cost_cents'),
      eb.fn.sum<number | string>('token_count').as('tokens'),
      eb.fn.sum<number | string>('compute_ms').as('compute_ms'),
      eb.fn.sum<number | string>('api_call_count').as('api_calls'),
    ])
    .where(column, 'in', ids)
    .groupBy(column)
    .execute() as Promise<(UsageSums & { key: string })[]>;
}

/** What an agent's turns created since `since` cost, each rounded up to cents. */
export async function agentSpendSince(db: Executor, agentId: string, since: number): Promise<number> {
  const row = await db
    .selectFrom('agent_turns')
    .select((eb) => eb.fn.sum<number | string>(ROUNDED_CENTS).as('cents'))
    .where('agent_id', '=', agentId)
    .where('created_at', '>=', since)
    .executeTakeFirst();
  return Number(row?.cents ?? 0);
}

// ---- steps ----

export function listSteps(db: Executor, turnId: string): Promise<StepRow[]> {
  return db.selectFrom('agent_turn_steps').selectAll().where('turn_id', '=', turnId).orderBy('position').execute();
}

export async function insertStep(tx: Executor, row: StepRow): Promise<void> {
  await tx.insertInto('agent_turn_steps').values(row).execute();
}

/** Changes a step when it is still in one of `from`; false when it was not. */
export async function moveStep(tx: Executor, id: string, from: readonly string[], changes: Partial<StepRow>): Promise<boolean> {
  const res = await tx.updateTable('agent_turn_steps').set(changes).where('id', '=', id).where('state', 'in', from as string[]).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export function openToolSteps(db: Executor, turnId: string): Promise<StepRow[]> {
  return db.selectFrom('agent_turn_steps').selectAll().where('turn_id', '=', turnId).where('kind', '=', 'tool').where('state', 'in', ['RUNNING', 'WAITING']).execute();
}

// ---- approval requests ----

export async function insertApproval(tx: Executor, row: ApprovalRow): Promise<void> {
  await tx.insertInto('agent_approval_requests').values(row).execute();
}

export function findApproval(db: Executor, workspaceId: string, id: string): Promise<ApprovalRow | undefined> {
  return db.selectFrom('agent_approval_requests').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

export function approvalOfStep(db: Executor, stepId: string): Promise<ApprovalRow | undefined> {
  return db.selectFrom('agent_approval_requests').selectAll().where('step_id', '=', stepId).executeTakeFirst();
}

export interface ApprovalFilters {
  state?: string | undefined;
  session_id?: string | undefined;
  /** members see the requests of their own sessions, and none of kind TURN */
  session_created_by?: string | undefined;
}

export function listApprovals(db: Executor, workspaceId: string, filters: ApprovalFilters, page: PageRequest): Promise<ApprovalRow[]> {
  let q = db.selectFrom('agent_approval_requests as a').selectAll('a').where('a.workspace_id', '=', workspaceId);
  if (filters.state) q = q.where('a.state', '=', filters.state);
  if (filters.session_id) q = q.where('a.session_id', '=', filters.session_id);
  if (filters.session_created_by) {
    const by = filters.session_created_by;
    q = q.where('a.kind', '=', 'CHANGE').where((eb) => eb.exists(eb.selectFrom('agent_sessions as s').select('s.id').whereRef('s.id', '=', 'a.session_id').where('s.created_by', '=', by)));
  }
  return keysetPage(q, 'a.id', page).execute();
}

export function updateApprovalIf(tx: Executor, id: string, revision: number | null, from: readonly string[], changes: Partial<ApprovalRow>): Promise<ApprovalRow | undefined> {
  let q = tx.updateTable('agent_approval_requests').set((eb) => ({ ...changes, revision: eb('revision', '+', 1) })).where('id', '=', id).where('state', 'in', from as string[]);
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

/** Cancels the turn's pending approval requests (the turn ended first); returns them. */
export function cancelPendingApprovals(tx: Executor, turnId: string, now: number): Promise<ApprovalRow[]> {
  return tx
    .updateTable('agent_approval_requests')
    .set((eb) => ({ state: 'CANCELLED', updated_at: now, revision: eb('revision', '+', 1) }))
    .where('turn_id', '=', turnId)
    .where('state', '=', 'PENDING')
    .returningAll()
    .execute();
}

// ---- spend reservations (spend-reservations.ts) ----

/** The agent's row lock (PostgreSQL; SQLite's transaction holds the database): orders the reservations against its budget. */
export async function lockAgent(tx: Executor, dialect: Dialect, agentId: string): Promise<void> {
  if (dialect === 'postgres') await tx.selectFrom('agents').select('id').where('id', '=', agentId).forUpdate().execute();
}

/** What an agent's turns created since `since` cost or hold for the model calls they are making, each turn rounded up to cents. */
export async function agentCommittedSince(db: Executor, agentId: string, since: number): Promise<number> {
  const row = await db
    .selectFrom('agent_turns')
    .select((eb) => eb.fn.sum<number | string>(sql`(cost_microcents + reserved_microcents + 999999) / 1000000`).as('cents'))
    .where('agent_id', '=', agentId)
    .where('created_at', '>=', since)
    .executeTakeFirst();
  return Number(row?.cents ?? 0);
}

export type TurnReservation = Pick<TurnRow, 'reserved_microcents' | 'reserved_quota_cents' | 'reserved_quota_window'>;

export const NO_RESERVATION: TurnReservation = { reserved_microcents: 0, reserved_quota_cents: 0, reserved_quota_window: null };

export async function setTurnReservation(tx: Executor, id: string, reservation: TurnReservation): Promise<void> {
  await tx.updateTable('agent_turns').set(reservation).where('id', '=', id).execute();
}
