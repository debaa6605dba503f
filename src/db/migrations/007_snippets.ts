// Snippets (issue 13): stored JavaScript run in the sandbox, and the record of every run.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('snippets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('display_type', 'text', (c) => c.notNull())
    /** the declared inputs, JSON array */
    .addColumn('inputs', 'text', (c) => c.notNull())
    .addColumn('visibility', 'text', (c) => c.notNull())
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('agent_session_id', 'text')
    .addColumn('agent_turn_id', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    /**
     * The role of whoever last wrote `code`, at that time: a run acts with the lower of this and
     * the runner's role, so code written by a member never runs with an admin's rights.
     */
    .addColumn('code_author_role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('archived_at', 'bigint')
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('snippets_ws_id_idx').on('snippets').columns(['workspace_id', 'id']).execute();

  // Written once when a run ends; never updated.
  await db.schema
    .createTable('snippet_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('snippet_id', 'text', (c) => c.notNull().references('snippets.id').onDelete('cascade'))
    .addColumn('agent_session_id', 'text')
    .addColumn('agent_turn_id', 'text')
    /** succeeded | failed | timed_out */
    .addColumn('state', 'text', (c) => c.notNull())
    /** manual | agent | dashboard */
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('run_by', 'text', (c) => c.notNull())
    /** the snippet's revision (etag) whose code ran */
    .addColumn('snippet_revision', 'integer', (c) => c.notNull())
    /** JSON: the inputs after defaults, the overrides, the output, the error, the console lines */
    .addColumn('inputs', 'text', (c) => c.notNull())
    .addColumn('overrides', 'text', (c) => c.notNull())
    .addColumn('output', 'text')
    .addColumn('error', 'text')
    .addColumn('logs', 'text', (c) => c.notNull())
    .addColumn('cpu_time_ms', 'integer', (c) => c.notNull())
    .addColumn('wall_time_ms', 'integer', (c) => c.notNull())
    .addColumn('heap_used_bytes', 'bigint', (c) => c.notNull())
    .addColumn('request_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('snippet_runs_snippet_id_idx').on('snippet_runs').columns(['snippet_id', 'id']).execute();
  await db.schema.createIndex('snippet_runs_snippet_state_idx').on('snippet_runs').columns(['snippet_id', 'state', 'id']).execute();
}
