// Issue 34, people: an invitation (inv_) to join a workspace, made when an owner or admin adds a
// member by an e-mail that has no account. Its link carries a one-time token stored as a SHA-256
// hash; it is pending until accepted (the account is made or proven, the member added), revoked,
// or past expires_at (7 days). At most one pending invitation per workspace and e-mail: inviting
// again revokes the older one and gives a new link.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('workspace_invitations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    /** lowercased, as users' e-mails are */
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    /** pending | accepted | revoked (an expired one stays pending: expires_at says) */
    .addColumn('state', 'text', (c) => c.notNull())
    /** the usr_ id of the owner or admin who invited */
    .addColumn('invited_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('resolved_at', 'bigint')
    /** the usr_ id that accepted it */
    .addColumn('accepted_by', 'text')
    .execute();
  // A workspace's invitations, newest first, walk this index.
  await db.schema.createIndex('workspace_invitations_ws_id_idx').on('workspace_invitations').columns(['workspace_id', 'id']).execute();
  await db.schema
    .createIndex('workspace_invitations_one_pending_uq').on('workspace_invitations').columns(['workspace_id', 'email']).unique()
    .where(sql.ref('state'), '=', 'pending').execute();
}
