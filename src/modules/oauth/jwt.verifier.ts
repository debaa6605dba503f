// Bearer JWTs -> principal. The unverified `iss` only chooses which keys to verify with: our own
// (client-credentials tokens, acting on the client's workspace) or a trusted external issuer's
// (a user credential). Any other issuer, and any defect, is 401.
import { decodeJwt } from 'jose';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import type { Principal, Role, TokenVerifier } from '../../platform/auth.js';
import { unauthenticated } from '../../platform/errors.js';
import { verifyAccessToken } from './access-tokens.js';
import { createExternalIssuers } from './external-issuers.js';
import type { SigningKeys } from './signing-keys.js';
import { findClientPrincipal } from './oauth.repo.js';

/** Compact JWS: three base64url segments (the signature is empty for `alg: none`, which still fails). */
const JWT_FORM = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

function unverifiedIssuer(token: string): string | null {
  try {
    const { iss } = decodeJwt(token);
    return typeof iss === 'string' ? iss : null;
  } catch {
    return null;
  }
}

export function createJwtVerifier(deps: { db: Db; config: Config; keys: SigningKeys }): TokenVerifier {
  const { db, config, keys } = deps;
  const external = createExternalIssuers({ db, issuers: config.trustedIssuers });

  async function clientPrincipal(token: string): Promise<Principal> {
    const claims = await verifyAccessToken(keys, config.publicUrl, token);
    if (!claims) throw unauthenticated();
    // Deleting a client revokes its outstanding tokens at once: the row is checked on every use.
    const client = await findClientPrincipal(db, claims.clientId);
    if (!client || client.workspace_id !== claims.workspaceId) throw unauthenticated();
    return { kind: 'workspace', via: 'client_jwt', workspaceId: client.workspace_id, role: client.role as Role, credentialId: client.id };
  }

  return {
    async verify(token: string): Promise<Principal | null> {
      if (!JWT_FORM.test(token)) return null;
      const iss = unverifiedIssuer(token);
      if (iss === null) throw unauthenticated();
      if (iss === config.publicUrl) return clientPrincipal(token);
      if (external.isTrusted(iss)) {
        const principal = await external.verify(iss, token);
        if (!principal) throw unauthenticated();
        return principal;
      }
      throw unauthenticated();
    },
  };
}
