// JWTs from identity providers the operator trusts (SVC_TRUSTED_ISSUERS): verified against the
// issuer's published JWKS and mapped to an existing user by e-mail. Such a token is a broad user
// credential, like a session token: workspace-scoped routes need svc-context with it.
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import type { TrustedIssuer } from '../../config.js';
import type { Db } from '../../db/database.js';
import type { UserPrincipal } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { accountDisabled } from '../../platform/errors.js';
import { findUserByEmail, normalizeEmail } from '../users/users.service.js';

/** Asymmetric algorithms only: an HMAC "signed" with a public key can never pass (RFC 8725 2.1). */
const EXTERNAL_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'];
/**
 * Accepted `typ` values (compared without an `application/` prefix, case-insensitively): none,
 * plain JWT, or an access token. Other explicit types (logout+jwt, secevent+jwt...) are tokens
 * minted for another purpose and are refused (RFC 8725 3.11).
 */
const EXTERNAL_TYPES = new Set(['jwt', 'at+jwt']);
const CLOCK_TOLERANCE_SECONDS = 5;
const MAX_EMAIL_LENGTH = 254;

function emailOf(payload: JWTPayload): string | null {
  // An issuer that says the address is unverified does not vouch for who holds it.
  if (payload.email_verified === false) return null;
  const candidate = typeof payload.email === 'string' ? payload.email : typeof payload.sub === 'string' && payload.sub.includes('@') ? payload.sub : null;
  if (candidate === null || candidate.length > MAX_EMAIL_LENGTH) return null;
  return normalizeEmail(candidate);
}

export function createExternalIssuers(deps: { db: Db; issuers: TrustedIssuer[] }) {
  const { db } = deps;
  // One remote key set per issuer for the life of the process; jose caches and refreshes it.
  const trusted = new Map(
    deps.issuers.map((issuer) => [issuer.issuer, { issuer, keys: createRemoteJWKSet(new URL(issuer.jwksUrl)) }] as const),
  );

  function isTrusted(iss: string): boolean {
    return trusted.has(iss);
  }

  /** The user this token names, or null when the token or its user is not acceptable. */
  async function verify(iss: string, token: string): Promise<UserPrincipal | null> {
    const entry = trusted.get(iss);
    if (!entry) return null;
    let payload: JWTPayload;
    try {
      const result = await jwtVerify(token, entry.keys, {
        algorithms: EXTERNAL_ALGORITHMS,
        issuer: entry.issuer.issuer,
        audience: entry.issuer.audience,
        requiredClaims: ['exp'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        currentDate: new Date(clock.nowMs()),
      });
      const typ = result.protectedHeader.typ?.toLowerCase().replace(/^application\//, '');
      if (typ !== undefined && !EXTERNAL_TYPES.has(typ)) return null;
      payload = result.payload;
    } catch (err) {
      // Token defects and an unreachable key set alike leave the caller unauthenticated.
      if (err instanceof errors.JOSEError || err instanceof TypeError) return null;
      throw err;
    }
    const email = emailOf(payload);
    if (!email) return null;
    const user = await findUserByEmail(db, email);
    if (user?.disabled_at != null) throw accountDisabled();
    return user ? { kind: 'user', via: 'external_jwt', userId: user.id, sessionId: null } : null;
  }

  return { isTrusted, verify };
}
