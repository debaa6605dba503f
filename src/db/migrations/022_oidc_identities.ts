// Issue 34, single sign-on: the accounts of an OpenID provider (SVC_OIDC_ISSUER) linked to users.
// A user signs in by the provider's `sub` once linked, so a later change of e-mail at the provider
// still finds the same user; an account is linked when its verified e-mail first matches a user's
// (or when the user is created for it, SVC_OIDC_CREATE_USERS). One account of an issuer per user:
// another account claiming the same e-mail is refused rather than linked beside the first.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('oidc_identities')
    /** the issuer identifier, exactly as configured and as the ID token's `iss` says */
    .addColumn('issuer', 'text', (c) => c.notNull())
    /** the provider's subject identifier (`sub`) */
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    /** the verified e-mail the provider gave at the last sign-in (lowercased) */
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_sign_in_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('oidc_identities_pk', ['issuer', 'subject'])
    .addUniqueConstraint('oidc_identities_user_issuer_uq', ['user_id', 'issuer'])
    .execute();
}
