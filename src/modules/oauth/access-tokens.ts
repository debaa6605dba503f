// Our own access tokens: JWTs per RFC 9068 (`typ: at+jwt`) signed with the service's Ed25519
// key, issued by the client-credentials grant, and verified per RFC 8725 (one algorithm allowed,
// our keys only, iss/aud/exp/typ required).
import { randomBytes } from 'node:crypto';
import { errors, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import type { Role } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { isId } from '../../platform/ids.js';
import { SIGNING_ALGORITHM, type SigningKeys } from './signing-keys.js';

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const ACCESS_TOKEN_TYPE = 'at+jwt';
/** Seconds of clock skew tolerated between instances for exp/iat. */
const CLOCK_TOLERANCE_SECONDS = 5;

/** Private claims naming what the token acts on. */
export const WORKSPACE_CLAIM = 'svc_workspace';
export const ROLE_CLAIM = 'svc_role';

export interface AccessTokenSubject {
  clientId: string;
  workspaceId: string;
  role: Role;
}

/** `iss` of our tokens is the public base URL; `aud` is the API under it. */
export function ourIssuer(publicUrl: string): { issuer: string; audience: string } {
  return { issuer: publicUrl, audience: `${publicUrl}/v1` };
}

export async function issueAccessToken(keys: SigningKeys, publicUrl: string, subject: AccessTokenSubject): Promise<string> {
  const { kid, privateKey } = await keys.signingKey();
  const { issuer, audience } = ourIssuer(publicUrl);
  const now = clock.now();
  return new SignJWT({ client_id: subject.clientId, [WORKSPACE_CLAIM]: subject.workspaceId, [ROLE_CLAIM]: subject.role })
    .setProtectedHeader({ alg: SIGNING_ALGORITHM, typ: ACCESS_TOKEN_TYPE, kid })
    .setIssuer(issuer)
    .setAudience(audience)
    .setSubject(subject.clientId)
    .setIssuedAt(now)
    .setExpirationTime(now + ACCESS_TOKEN_TTL_SECONDS)
    .setJti(randomBytes(16).toString('base64url'))
    .sign(privateKey);
}

/**
 * Verifies signature and claims; returns the client and workspace the token names, or null for
 * any defect of the token (the caller answers 401, after checking that the client still exists).
 */
export async function verifyAccessToken(keys: SigningKeys, publicUrl: string, token: string): Promise<{ clientId: string; workspaceId: string } | null> {
  const { issuer, audience } = ourIssuer(publicUrl);
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(
      token,
      async (header) => {
        const key = typeof header.kid === 'string' ? await keys.publicKey(header.kid) : null;
        if (!key) throw new errors.JWKSNoMatchingKey();
        return key;
      },
      {
        algorithms: [SIGNING_ALGORITHM],
        typ: ACCESS_TOKEN_TYPE,
        issuer,
        audience,
        requiredClaims: ['exp', 'iat', 'sub', 'jti'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        currentDate: new Date(clock.nowMs()),
      },
    ));
  } catch (err) {
    // Every defect of the token is a JOSEError; anything else (the database) is not the caller's fault.
    if (err instanceof errors.JOSEError) return null;
    throw err;
  }
  const { sub, client_id: clientId, [WORKSPACE_CLAIM]: workspaceId } = payload;
  if (typeof sub !== 'string' || !isId('oauthClient', sub) || clientId !== sub) return null;
  if (typeof workspaceId !== 'string' || !isId('workspace', workspaceId)) return null;
  return { clientId: sub, workspaceId };
}
