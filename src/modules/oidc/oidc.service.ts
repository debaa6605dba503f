// Single sign-on with the operator's OpenID provider (issue 34): who a provider's account is here.
//
// A sign-in starts with `begin`: new state, nonce and PKCE verifier, kept in the browser in a
// short-lived cookie sealed with a key derived from the master key (AES-256-GCM: the browser can
// neither read nor change it), which also binds the way back to the browser that left, so a
// callback URL handed to someone else signs nobody in (login CSRF). It is good for
// PENDING_LOGIN_SECONDS. `complete` opens it, lets the relying party check the provider's answer
// (state, PKCE, nonce, the ID token) and finds the user:
//   1. the provider's account (issuer + sub) already linked to a user: that user, whatever e-mail
//      the provider says now;
//   2. otherwise the e-mail must be verified at the provider, and the user with that e-mail
//      (lowercased) is linked to the account, unless that user is already linked to another
//      account of the same provider (refused: two accounts of one provider never share a user);
//   3. no such user: with SVC_OIDC_CREATE_USERS=true an account is made (a random password nobody
//      knows; a password reset can give one later) and linked, else a refusal saying whom to ask.
// A verified e-mail is required on every sign-in, also of a linked account.
import type { Db } from '../../db/database.js';
import { isUniqueViolation } from '../../db/database.js';
import type { OidcConfig } from '../../config.js';
import type { OidcAccount, OidcRelyingParty, PendingOidcLogin } from '../../drivers/oidc/openid.js';
import { OidcFailure } from '../../drivers/oidc/openid.js';
import { clock } from '../../platform/clock.js';
import { decrypt, encrypt, randomString, safeEqual } from '../../platform/crypto.js';
import { ApiError } from '../../platform/errors.js';
import { findUserByEmail, normalizeEmail, type UserService } from '../users/users.service.js';
import { findIdentity, findIdentityOfUser, insertIdentity, touchIdentity } from './oidc.repo.js';

/** How long a sign-in may spend at the provider before its way back is refused. */
export const PENDING_LOGIN_SECONDS = 600;
/** How long a sign-in through the provider waits for the account's second factor (TOTP) before it must start again. */
export const PENDING_SECOND_FACTOR_SECONDS = 300;

export interface OidcServiceDeps {
  db: Db;
  /** null when single sign-on is not configured (SVC_OIDC_ISSUER unset) */
  config: OidcConfig | null;
  relyingParty: OidcRelyingParty | null;
  /** seals the pending login's cookie (a key derived from the master key for this purpose only) */
  cookieKey: Buffer;
  users: Pick<UserService, 'createUser'>;
}

/** The outcome of a completed sign-in: whom to sign in, and where the browser goes next. */
export interface OidcSignIn {
  userId: string;
  email: string;
  /** true when the account was made just now (SVC_OIDC_CREATE_USERS) */
  created: boolean;
  /** a local path, as `begin` was given it */
  next: string;
}

interface SealedLogin extends PendingOidcLogin {
  next: string;
  /** Unix seconds */
  expiresAt: number;
}

const notConfigured = () =>
  new ApiError('NOT_FOUND', 'single sign-on is not set up on this service: sign in with your e-mail and password', { reason: 'OIDC_NOT_CONFIGURED' });

const expired = () =>
  new ApiError('INVALID_ARGUMENT', 'this sign-in expired, or was started in another browser or tab: start the sign-in again', { reason: 'OIDC_SIGN_IN_EXPIRED' });

function fromFailure(failure: OidcFailure): ApiError {
  if (failure.kind === 'unreachable') {
    return new ApiError('UNAVAILABLE', `${failure.message} Try again in a minute; if it lasts, tell the operator of this service.`, {
      reason: 'OIDC_PROVIDER_UNAVAILABLE', headers: { 'retry-after': '30' }, cause: failure.detail,
    });
  }
  return new ApiError('PERMISSION_DENIED', `${failure.message} Start the sign-in again.`, { reason: 'OIDC_RESPONSE_REJECTED', cause: failure.detail });
}

export function createOidcService(deps: OidcServiceDeps) {
  const { db, config, relyingParty } = deps;

  function seal(login: SealedLogin): string {
    return encrypt(deps.cookieKey, JSON.stringify({ s: login.state, n: login.nonce, v: login.codeVerifier, next: login.next, exp: login.expiresAt }));
  }

  /** The pending login of this browser, or null when there is none, it was tampered with, or it expired. */
  function open(sealed: string | undefined): SealedLogin | null {
    if (!sealed || sealed.length > 4096) return null;
    let parsed: { s?: unknown; n?: unknown; v?: unknown; next?: unknown; exp?: unknown };
    try {
      parsed = JSON.parse(decrypt(deps.cookieKey, sealed));
    } catch {
      return null;
    }
    const { s, n, v, next, exp } = parsed;
    if (typeof s !== 'string' || typeof n !== 'string' || typeof v !== 'string' || typeof next !== 'string' || typeof exp !== 'number') return null;
    if (exp <= clock.now()) return null;
    return { state: s, nonce: n, codeVerifier: v, next, expiresAt: exp };
  }

  async function withProvider<T>(work: (rp: OidcRelyingParty) => Promise<T>): Promise<T> {
    if (!config || !relyingParty) throw notConfigured();
    try {
      return await work(relyingParty);
    } catch (err) {
      if (err instanceof OidcFailure) throw fromFailure(err);
      throw err;
    }
  }

  /** A new sign-in that returns to `next` (a local path the caller checked): the provider's URL and the sealed cookie. */
  async function begin(next: string): Promise<{ url: string; cookie: string; maxAgeSeconds: number }> {
    const { url, pending } = await withProvider((rp) => rp.begin());
    return { url, cookie: seal({ ...pending, next, expiresAt: clock.now() + PENDING_LOGIN_SECONDS }), maxAgeSeconds: PENDING_LOGIN_SECONDS };
  }

  /** The user a checked provider account signs in as (see the top of this file), linking or creating as needed. */
  async function userFor(account: OidcAccount, issuer: string): Promise<{ userId: string; email: string; created: boolean }> {
    const email = account.email ? normalizeEmail(account.email) : null;
    if (!email || !account.emailVerified) {
      throw new ApiError('PERMISSION_DENIED',
        email
          ? `the sign-in provider has not verified the e-mail ${email}: verify it there, then sign in again`
          : 'the sign-in provider gave no e-mail address for your account, so it cannot be matched to an account here',
        { reason: 'OIDC_EMAIL_NOT_VERIFIED' });
    }
    const now = clock.now();
    for (let attempt = 0; ; attempt++) {
      const linked = await findIdentity(db, issuer, account.subject);
      if (linked) {
        await touchIdentity(db, issuer, account.subject, email, now);
        return { userId: linked.user_id, email, created: false };
      }
      let user = await findUserByEmail(db, email);
      let created = false;
      if (!user) {
        if (!config!.createUsers) {
          throw new ApiError('PERMISSION_DENIED',
            `there is no account for ${email} on this service: ask someone on your team to invite you, or the operator to make an account for you`,
            { reason: 'OIDC_NO_ACCOUNT' });
        }
        try {
          // Nobody knows this password: the account signs in through the provider (a reset can give it one).
          user = await deps.users.createUser({ email, password: randomString(40), name: account.name });
          created = true;
        } catch (err) {
          if (!(err instanceof ApiError && err.code === 'ALREADY_EXISTS') || attempt > 0) throw err;
          continue; // made meanwhile by another request: look again
        }
      }
      const other = await findIdentityOfUser(db, user.id, issuer);
      if (other) {
        throw new ApiError('PERMISSION_DENIED',
          `the account ${email} here is linked to another account of this sign-in provider: sign in with that one, or ask the operator`,
          { reason: 'OIDC_IDENTITY_CONFLICT' });
      }
      try {
        await insertIdentity(db, { issuer, subject: account.subject, user_id: user.id, email, created_at: now, last_sign_in_at: now });
      } catch (err) {
        // Linked meanwhile (the same account signing in twice at once, or another account to this user): look again.
        if (!isUniqueViolation(err) || attempt > 0) throw err;
        continue;
      }
      return { userId: user.id, email, created };
    }
  }

  /**
   * The provider's answer at the callback (`callbackUrl`, as the browser asked for it) with the
   * browser's sealed pending login: checked, then the user it signs in as.
   */
  async function complete(callbackUrl: URL, sealed: string | undefined): Promise<OidcSignIn> {
    if (!config || !relyingParty) throw notConfigured();
    const pending = open(sealed);
    // No pending login, or another one's way back: nothing to ask the provider about.
    if (!pending || callbackUrl.searchParams.get('state') !== pending.state) throw expired();
    const account = await withProvider((rp) => rp.complete(callbackUrl, pending));
    const user = await userFor(account, config.issuer);
    return { ...user, next: pending.next };
  }

  /**
   * A sign-in the provider vouched for, of an account with a second factor: it waits for the code
   * in a cookie sealed as the pending login is (another kind, so neither opens as the other), bound
   * to `browser` (a value only this browser holds) and good for PENDING_SECOND_FACTOR_SECONDS.
   */
  function holdForSecondFactor(signIn: { userId: string; next: string }, browser: string): { cookie: string; maxAgeSeconds: number } {
    const exp = clock.now() + PENDING_SECOND_FACTOR_SECONDS;
    return { cookie: encrypt(deps.cookieKey, JSON.stringify({ k: 'second_factor', u: signIn.userId, next: signIn.next, b: browser, exp })), maxAgeSeconds: PENDING_SECOND_FACTOR_SECONDS };
  }

  /** The sealed second-factor cookie's contents when it opens, whatever its age and browser. */
  function openHeld(sealed: string | undefined): { userId: string; next: string; browser: string; expiresAt: number } | null {
    if (!sealed || sealed.length > 4096) return null;
    let parsed: { k?: unknown; u?: unknown; next?: unknown; b?: unknown; exp?: unknown };
    try {
      parsed = JSON.parse(decrypt(deps.cookieKey, sealed));
    } catch {
      return null;
    }
    const { k, u, next, b, exp } = parsed;
    if (k !== 'second_factor' || typeof u !== 'string' || typeof next !== 'string' || typeof b !== 'string' || typeof exp !== 'number') return null;
    return { userId: u, next, browser: b, expiresAt: exp };
  }

  /** The sign-in waiting for its second factor in this browser, or null (none, tampered with, expired, or another browser's). */
  function openSecondFactor(sealed: string | undefined, browser: string | null): { userId: string; next: string } | null {
    const held = openHeld(sealed);
    if (!held || held.expiresAt <= clock.now() || browser === null || !safeEqual(held.browser, browser)) return null;
    return { userId: held.userId, next: held.next };
  }

  return {
    begin,
    complete,
    holdForSecondFactor,
    openSecondFactor,
    /** Where a sign-in waiting for its second factor meant to go (for "sign in again"), if its cookie opens at all. */
    secondFactorNextOf: (sealed: string | undefined) => openHeld(sealed)?.next,
    /** Where a pending sign-in meant to go (for a "try again" link after a refusal), if its cookie still opens. */
    nextOf: (sealed: string | undefined) => open(sealed)?.next,
  };
}

export type OidcService = ReturnType<typeof createOidcService>;
