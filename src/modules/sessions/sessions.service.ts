// Session tokens (spec 5 rules 1-2, API.md section 4): 32 random [A-Za-z0-9] characters, stored
// as SHA-256, alive for one year from their last use. The renewal is written at most once a
// minute so a busy client does not turn every read into a write.
import { isUniqueViolation, type Db, type Executor } from '../../db/database.js';
import type { Principal, TokenVerifier } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { DUMMY_PASSWORD_HASH, randomString, sha256Hex, verifyPassword } from '../../platform/crypto.js';
import { accountDisabled, ApiError, invalidArgument, notFound, unauthenticated } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { findUserByEmail, findUserById, normalizeEmail, type UserService } from '../users/users.service.js';
import { createSignInThrottle } from './sign-in-throttle.js';
import { deleteSession, deleteSessionsOfUser, findSessionByHash, findSessionOwnerByHash, insertSession, renewSession } from './sessions.repo.js';

export const SESSION_TTL_SECONDS = 365 * 24 * 60 * 60;
const RENEW_EVERY_SECONDS = 60;
const SESSION_TOKEN = /^[A-Za-z0-9]{32}$/;

export interface IssuedSession {
  id: string;
  token: string;
  user_id: string;
  expires_at: number;
}

export interface SessionServiceDeps {
  db: Db;
  /** the users' service: a new password is hashed and stored through it */
  users: Pick<UserService, 'hashNewPassword' | 'storePasswordHash'>;
  /**
   * Tells the person their password changed, in the change's transaction (the notifications'
   * security notice, given by the composition root: identity sits below notifications).
   */
  passwordChanged(tx: Executor, e: { userId: string; changedAt: number; revokedSessions: number }): Promise<unknown>;
  /**
   * The second step of a password sign-in, once the password was right (two-factor.service.ts
   * checkSignIn): resolves when the account asks no second factor or `code` proves it; throws 401
   * TWO_FACTOR_CODE_REQUIRED / TWO_FACTOR_CODE_INVALID or 429 otherwise.
   */
  secondFactor(userId: string, code: string | undefined, clientAddress: string): Promise<unknown>;
}

export function createSessionService(deps: SessionServiceDeps) {
  const { db, users } = deps;
  const throttle = createSignInThrottle(db);

  async function createSession(userId: string, token: string = randomString(32)): Promise<IssuedSession> {
    const now = clock.now();
    const id = newId('session');
    await insertSession(db, { id, user_id: userId, token_hash: sha256Hex(token), created_at: now, last_used_at: now, expires_at: now + SESSION_TTL_SECONDS });
    return { id, token, user_id: userId, expires_at: now + SESSION_TTL_SECONDS };
  }

  /** Registers a known token value for a user (SVC_BOOTSTRAP_TOKEN); idempotent. */
  async function ensureSessionToken(userId: string, token: string): Promise<void> {
    const existing = await findSessionOwnerByHash(db, sha256Hex(token));
    if (existing) {
      if (existing.user_id !== userId) throw new Error('SVC_BOOTSTRAP_TOKEN is already a session of another user');
      return;
    }
    try {
      await createSession(userId, token);
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
  }

  const verifier: TokenVerifier = {
    async verify(token: string): Promise<Principal | null> {
      if (!SESSION_TOKEN.test(token)) return null;
      const [row] = await findSessionByHash(db, { hash: sha256Hex(token) });
      const now = clock.now();
      if (!row || row.expires_at <= now) throw unauthenticated();
      if (row.disabled_at !== null) throw accountDisabled();
      if (now - row.last_used_at >= RENEW_EVERY_SECONDS) {
        await renewSession(db, row.id, now, now + SESSION_TTL_SECONDS);
      }
      return { kind: 'user', via: 'session', userId: row.user_id, sessionId: row.id };
    },
  };

  /**
   * Checks e-mail and password from a client address; returns the user id or throws 401 (429 while
   * the address must wait, sign-in-throttle.ts).
   */
  async function checkPassword(rawEmail: string, password: string, clientAddress: string): Promise<string> {
    const email = normalizeEmail(rawEmail);
    const attempt = await throttle.begin(clientAddress, email);
    const user = await findUserByEmail(db, email);
    const ok = await verifyPassword(password, user?.password_hash ?? DUMMY_PASSWORD_HASH);
    if (!user || !ok) {
      throw new ApiError('UNAUTHENTICATED', 'wrong email or password', { reason: 'INVALID_CREDENTIALS' });
    }
    await throttle.succeeded(attempt);
    // Said only to whoever knows the password.
    if (user.disabled_at !== null) throw accountDisabled();
    return user.id;
  }

  /**
   * A whole sign-in: the password (checkPassword), then the second factor when the account has one
   * (`code`: a TOTP code or a recovery code). Returns the user id.
   */
  async function checkSignIn(email: string, password: string, code: string | undefined, clientAddress: string): Promise<string> {
    const userId = await checkPassword(email, password, clientAddress);
    await deps.secondFactor(userId, code, clientAddress);
    return userId;
  }

  async function signIn(email: string, password: string, clientAddress: string, code?: string): Promise<IssuedSession> {
    return createSession(await checkSignIn(email, password, code, clientAddress));
  }

  async function revokeSession(sessionId: string): Promise<void> {
    await deleteSession(db, sessionId);
  }

  /**
   * POST /v1/me/password: the current password is checked as a sign-in checks it (the same
   * throttle, so a stolen session cannot guess it quickly), the new one must follow the one rule
   * and differ; then, in one transaction, the hash is replaced, every other session of the user is
   * deleted (they stop working at once) and the user is sent a security notice. The session that
   * asked stays (null: a credential that is not a session keeps none). Returns how many were revoked.
   */
  async function changePassword(
    principal: { userId: string; sessionId: string | null },
    current: string,
    next: string,
    clientAddress: string,
  ): Promise<{ revokedSessions: number }> {
    const user = await findUserById(db, principal.userId);
    if (!user) throw notFound('user');
    const attempt = await throttle.begin(clientAddress, user.email);
    if (!(await verifyPassword(current, user.password_hash))) {
      throw invalidArgument('the current password is not right', 'INVALID_CREDENTIALS', [{ field: 'body.current_password', description: 'not your current password' }]);
    }
    await throttle.succeeded(attempt);
    if (current === next) {
      throw invalidArgument('the new password is the current one: choose another', 'INVALID_PASSWORD', [{ field: 'body.new_password', description: 'the same as the current password' }]);
    }
    const hash = await users.hashNewPassword(next, 'body.new_password');
    return db.transaction().execute(async (tx) => {
      if (!(await users.storePasswordHash(tx, user.id, hash))) throw notFound('user');
      const revokedSessions = await deleteSessionsOfUser(tx, user.id, principal.sessionId);
      await deps.passwordChanged(tx, { userId: user.id, changedAt: clock.nowMs(), revokedSessions });
      return { revokedSessions };
    });
  }

  /** Signs every session of the user out, in the caller's transaction (an account disabled). */
  const signOutEverywhere = (tx: Executor, userId: string) => deleteSessionsOfUser(tx, userId, null);

  return { createSession, ensureSessionToken, verifier, checkPassword, checkSignIn, signIn, revokeSession, changePassword, signOutEverywhere };
}

export type SessionService = ReturnType<typeof createSessionService>;
