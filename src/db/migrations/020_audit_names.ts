// Issue 34, who did what: an audit event keeps the names it is read by, as they were when it was
// recorded (GitHub's audit log keeps the actor's login the same way), so an event about a deleted
// cluster, or by a person who later left or changed their name, still reads as it did. The actor's
// display name (a user's name, an API token's, OAuth client's or machine's name) and a user's
// e-mail are filled by the insert itself (audit.repo.ts); the resource's name comes from the caller.
// Events recorded before this migration keep null in all three (readers fall back to the ids).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('audit_events').addColumn('actor_name', 'text').execute();
  await db.schema.alterTable('audit_events').addColumn('actor_email', 'text').execute();
  await db.schema.alterTable('audit_events').addColumn('resource_name', 'text').execute();
}
