import type { Executor } from '../../db/database.js';
import type { OidcIdentitiesTable } from '../../db/schema.js';

export type OidcIdentityRow = OidcIdentitiesTable;

export function findIdentity(db: Executor, issuer: string, subject: string): Promise<OidcIdentityRow | undefined> {
  return db.selectFrom('oidc_identities').selectAll().where('issuer', '=', issuer).where('subject', '=', subject).executeTakeFirst();
}

export function findIdentityOfUser(db: Executor, userId: string, issuer: string): Promise<OidcIdentityRow | undefined> {
  return db.selectFrom('oidc_identities').selectAll().where('user_id', '=', userId).where('issuer', '=', issuer).executeTakeFirst();
}

export async function insertIdentity(db: Executor, row: OidcIdentityRow): Promise<void> {
  await db.insertInto('oidc_identities').values(row).execute();
}

export async function touchIdentity(db: Executor, issuer: string, subject: string, email: string, now: number): Promise<void> {
  await db.updateTable('oidc_identities').set({ email, last_sign_in_at: now }).where('issuer', '=', issuer).where('subject', '=', subject).execute();
}
