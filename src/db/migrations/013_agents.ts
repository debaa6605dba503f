// Issue 24 (agents, API.md 8.6). Agents, their sessions, turns and each turn's recorded steps
// (model calls and tool calls, written before the next one starts, so a turn resumes where a dead
// worker left it), approval requests, and the events every step appends (numbered per session:
// the stream resumes from any of them). A job can now run an agent turn (jobs.agent_turn_id).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('agents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('instructions', 'text', (c) => c.notNull())
    /** JSON array of CHAT | CODING | AMBIENT */
    .addColumn('capabilities', 'text', (c) => c.notNull())
    /** JSON: the model_policy as given (provider, default_model, allowed_models, credential_secret_id, budgets) */
    .addColumn('model_policy', 'text', (c) => c.notNull())
    /** JSON: {writes} */
    .addColumn('tool_policy', 'text', (c) => c.notNull())
    /** ENABLED | ARCHIVED */
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('archived_at', 'bigint')
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agents_ws_id_idx').on('agents').columns(['workspace_id', 'id']).execute();

  await db.schema
    .createTable('agent_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
    /** ACTIVE | WAITING_FOR_INPUT | WAITING_FOR_PERMISSION | COMPLETED | FAILED | CANCELLED (its latest turn's) or ARCHIVED */
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('archived', 'integer', (c) => c.notNull())
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('title', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    /** the last event sequence handed out: events are numbered under this row's lock, so they commit in order */
    .addColumn('event_seq', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agent_sessions_ws_id_idx').on('agent_sessions').columns(['workspace_id', 'id']).execute();
  await db.schema.createIndex('agent_sessions_agent_idx').on('agent_sessions').columns(['agent_id', 'id']).execute();

  await db.schema
    .createTable('agent_turns')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
    .addColumn('session_id', 'text', (c) => c.notNull().references('agent_sessions.id').onDelete('cascade'))
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('input_content', 'text', (c) => c.notNull())
    .addColumn('runtime_hint', 'text', (c) => c.notNull())
    .addColumn('model', 'text')
    /** the provider the turn's model calls go to (fixed at admission) */
    .addColumn('provider', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    /** the user behind created_by (a token's or client's creator), and a role cap (see snippet-writer.ts) */
    .addColumn('writer_user_id', 'text')
    .addColumn('writer_role_cap', 'text')
    .addColumn('started_at', 'bigint')
    .addColumn('completed_at', 'bigint')
    .addColumn('runtime_decision', 'text')
    .addColumn('decision_reason', 'text')
    .addColumn('resolved_execution_mode', 'text')
    .addColumn('admission_error_code', 'text')
    .addColumn('admission_error_message', 'text')
    .addColumn('failure_code', 'text')
    .addColumn('failure_message', 'text')
    /** usage_summary members, summed over the turn's steps */
    /** millionths of a cent: usage_summary rounds the sum up to cents */
    .addColumn('cost_microcents', 'bigint', (c) => c.notNull())
    .addColumn('token_count', 'bigint', (c) => c.notNull())
    .addColumn('compute_ms', 'bigint', (c) => c.notNull())
    .addColumn('api_call_count', 'bigint', (c) => c.notNull())
    /** the final answer's text, once COMPLETED */
    .addColumn('output_text', 'text')
    .addColumn('cancel_requested', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agent_turns_session_idx').on('agent_turns').columns(['session_id', 'id']).execute();
  // Budgets and the agents/cost_cents quota sum cost over a period.
  await db.schema.createIndex('agent_turns_agent_created_idx').on('agent_turns').columns(['agent_id', 'created_at']).execute();
  await db.schema.createIndex('agent_turns_ws_created_idx').on('agent_turns').columns(['workspace_id', 'created_at']).execute();

  // A turn's steps in order: model calls and tool calls, each written before the next starts.
  await db.schema
    .createTable('agent_turn_steps')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('turn_id', 'text', (c) => c.notNull().references('agent_turns.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    /** model | tool */
    .addColumn('kind', 'text', (c) => c.notNull())
    /** tool calls: the model's call id and the tool's name */
    .addColumn('call_id', 'text')
    .addColumn('tool', 'text')
    /** RUNNING | WAITING | DONE | UNKNOWN (a tool call that was running when its worker died) */
    .addColumn('state', 'text', (c) => c.notNull())
    /** JSON: a model step's answer {text, tool_calls}; a tool step's arguments */
    .addColumn('request', 'text')
    /** JSON: a tool step's result as the model is told it; a model step's reported usage and cost */
    .addColumn('result', 'text')
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .addUniqueConstraint('agent_turn_steps_position_uq', ['turn_id', 'position'])
    .execute();

  await db.schema
    .createTable('agent_approval_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull().references('agent_sessions.id').onDelete('cascade'))
    .addColumn('turn_id', 'text', (c) => c.notNull().references('agent_turns.id').onDelete('cascade'))
    /** the tool step it holds (propose_change), or null for a turn's admission */
    .addColumn('step_id', 'text')
    /** CHANGE | TURN */
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('code', 'text')
    .addColumn('summary', 'text', (c) => c.notNull())
    /** PENDING | APPROVED | REJECTED | CANCELLED */
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('resolved_by', 'text')
    .addColumn('resolved_at', 'bigint')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('agent_approvals_ws_idx').on('agent_approval_requests').columns(['workspace_id', 'id']).execute();
  await db.schema.createIndex('agent_approvals_session_idx').on('agent_approval_requests').columns(['session_id', 'id']).execute();

  await db.schema
    .createTable('agent_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull().references('agent_sessions.id').onDelete('cascade'))
    .addColumn('turn_id', 'text', (c) => c.notNull())
    /** 1, 2, 3... within the session, gap-free and in commit order */
    .addColumn('sequence', 'bigint', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('agent_events_sequence_uq', ['session_id', 'sequence'])
    .execute();
  await db.schema.createIndex('agent_events_turn_idx').on('agent_events').columns(['turn_id', 'sequence']).execute();

  await db.schema.alterTable('jobs').addColumn('agent_turn_id', 'text').execute();
  await db.schema.createIndex('jobs_agent_turn_idx').on('jobs').column('agent_turn_id').execute();
}
