// Snippets act with the rights their last writer has now (issue 20): who last changed what a run
// does (code, declared inputs) is recorded, and read again at every run, in place of the role that
// writer had then (code_author_role, dropped).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('snippets')
    /** usr_, tok_ or oac_ id of the credential that last changed code or inputs: its rights now bound every run */
    .addColumn('writer_id', 'text')
    .execute();
  await db.schema
    .alterTable('snippets')
    /** the user behind that write: the user, or whoever created the API token or OAuth client (for the record) */
    .addColumn('writer_user_id', 'text')
    .execute();
  await db.schema
    .alterTable('snippets')
    /**
     * Set when the write came from a snippet run (platform.request): that run's role, which was
     * already the lower of its runner's and its own writer's. A run never exceeds it. Null otherwise.
     */
    .addColumn('writer_role_cap', 'text')
    .execute();
  // Rows written before: the last writer is unknown, so the creator stands in for it, and the role
  // recorded at the last code write stays as a cap (rights never grow by this migration).
  await sql`update snippets set writer_id = created_by, writer_role_cap = code_author_role`.execute(db);
  await sql`update snippets set writer_user_id = created_by where substr(created_by, 1, 4) = 'usr_'`.execute(db);
  await db.schema.alterTable('snippets').dropColumn('code_author_role').execute();
}
