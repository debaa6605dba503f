// Issue 33 section 5. (1) Spend is reserved before a model call: a turn holds the estimate of the
// call it is making, against its agent's budget (reserved_microcents, summed with what turns cost)
// and against the workspace's agents/cost_cents counter (reserved_quota_cents, added to the counter
// of the month reserved_quota_window starts); the call's real cost replaces it after. A reservation
// a dead worker left is given back when the turn resumes or ends. (2) A snippet run that read a
// secret value is marked secret_derived: its output and logs are shown only to roles that may read
// secret values (masking cannot catch a value split, reversed or re-encoded).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('agent_turns').addColumn('reserved_microcents', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('agent_turns').addColumn('reserved_quota_cents', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('agent_turns').addColumn('reserved_quota_window', 'bigint').execute();
  await db.schema.alterTable('snippet_runs').addColumn('secret_derived', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}
