// The oauth_clients and signing_keys tables: every query of OAuth clients and of the service's
// own JWT signing keys.
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { OAuthClientsTable, SigningKeysTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export async function insertClient(db: Executor, row: OAuthClientsTable): Promise<void> {
  await db.insertInto('oauth_clients').values(row).execute();
}

export function listClientsOfWorkspace(db: Executor, workspaceId: string, page: PageRequest): Promise<OAuthClientsTable[]> {
  return keysetPage(db.selectFrom('oauth_clients').selectAll().where('workspace_id', '=', workspaceId), 'id', page).execute();
}

export function findClientOfWorkspace(db: Executor, workspaceId: string, id: string): Promise<OAuthClientsTable | undefined> {
  return db.selectFrom('oauth_clients').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/** Deletes the client of the workspace; what it was (for the audit record), or undefined if none. */
export function deleteClientOfWorkspace(db: Executor, workspaceId: string, id: string): Promise<{ name: string; role: string } | undefined> {
  return db.deleteFrom('oauth_clients').where('id', '=', id).where('workspace_id', '=', workspaceId).returning(['name', 'role']).executeTakeFirst();
}

/** What the client-credentials grant checks: the secret's hash, the client's workspace and role. */
export function findClientCredential(db: Executor, id: string) {
  return db.selectFrom('oauth_clients').select(['id', 'workspace_id', 'role', 'secret_hash', 'last_used_at']).where('id', '=', id).executeTakeFirst();
}

/** What a client's access token acts as; checked on every use, so deleting a client revokes its tokens. */
export function findClientPrincipal(db: Executor, id: string): Promise<{ id: string; workspace_id: string; role: string } | undefined> {
  return db.selectFrom('oauth_clients').select(['id', 'workspace_id', 'role']).where('id', '=', id).executeTakeFirst();
}

export async function touchClientLastUsed(db: Executor, id: string, now: number): Promise<void> {
  await db.updateTable('oauth_clients').set({ last_used_at: now }).where('id', '=', id).execute();
}

/** The oldest signing key of the algorithm: the one every instance signs with. */
export function findOldestSigningKey(db: Executor, algorithm: string): Promise<SigningKeysTable | undefined> {
  return db.selectFrom('signing_keys').selectAll().where('algorithm', '=', algorithm)
    .orderBy('created_at', 'asc').orderBy('id', 'asc').limit(1).executeTakeFirst();
}

export async function insertSigningKey(db: Executor, row: SigningKeysTable): Promise<void> {
  await db.insertInto('signing_keys').values(row).execute();
}

export type PublicSigningKeyRow = Pick<SigningKeysTable, 'id' | 'algorithm' | 'public_jwk'>;

export function findPublicSigningKey(db: Executor, id: string): Promise<PublicSigningKeyRow | undefined> {
  return db.selectFrom('signing_keys').select(['id', 'algorithm', 'public_jwk']).where('id', '=', id).executeTakeFirst();
}

export function listPublicSigningKeys(db: Executor): Promise<PublicSigningKeyRow[]> {
  return db.selectFrom('signing_keys').select(['id', 'algorithm', 'public_jwk']).orderBy('id', 'asc').execute();
}
