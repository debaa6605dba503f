// Password reset by an e-mailed link (issue 34): a person who forgot their password asks with their
// e-mail and gets the same answer whether an account has it or not; an account that has it (and is
// not disabled) is sent a link whose one-time token is stored as its SHA-256, works 30 minutes and
// supersedes any older link. Using it sets the new password, signs out every session at once and
// sends the password_changed notice. The operator can make a link without mail
// (`svc admin users reset-password`) to hand over by other means.
import type { Db, Executor } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { randomString, sha256Hex } from '../../platform/crypto.js';
import { ApiError } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { queueMail } from '../mail/mail.service.js';
import { findUserByEmail, findUserById, normalizeEmail, type UserService } from '../users/users.service.js';
import { endOpenResets, findWorkingReset, insertPasswordReset, useReset } from './password-resets.repo.js';
import { deleteSessionsOfUser } from './sessions.repo.js';
import type { AttemptWindows } from './sign-in-throttle.js';

export const PASSWORD_RESET_TTL_SECONDS = 30 * 60;
/** asks per hour: from one client address, and for one e-mail (whether an account has it or not) */
export const PASSWORD_RESET_LIMITS = { address: 10, email: 3 } as const;
const TOKEN = /^[A-Za-z0-9]{32}$/;

export interface PasswordResetDeps {
  db: Db;
  publicUrl: string;
  users: Pick<UserService, 'hashNewPassword' | 'storePasswordHash'>;
  windows: AttemptWindows;
  /** the security notice of the change, in its transaction (from the composition root) */
  passwordChanged(tx: Executor, e: { userId: string; changedAt: number; revokedSessions: number }): Promise<unknown>;
}

const linkDoesNotWork = () =>
  new ApiError('NOT_FOUND', 'this reset link does not work: it was used, replaced by a newer one, or is more than 30 minutes old; ask for a new one', { reason: 'NOT_FOUND' });

export function createPasswordResetService(deps: PasswordResetDeps) {
  const { db } = deps;
  const linkOf = (token: string) => `${deps.publicUrl}/reset-password#${token}`;

  /** Makes a link for the user in `tx`, ending older ones; returns the token. */
  async function issue(tx: Executor, userId: string, origin: 'email' | 'operator'): Promise<{ token: string; expiresAt: number }> {
    const now = clock.now();
    const token = randomString(32);
    await endOpenResets(tx, userId, now);
    await insertPasswordReset(tx, { id: newId('passwordReset'), user_id: userId, token_hash: sha256Hex(token), origin, created_at: now, expires_at: now + PASSWORD_RESET_TTL_SECONDS, ended_at: null });
    return { token, expiresAt: now + PASSWORD_RESET_TTL_SECONDS };
  }

  /** POST /v1/password_resets: the same answer for every address; a mail only to an account that may sign in. */
  async function request(rawEmail: string, clientAddress: string): Promise<void> {
    const email = normalizeEmail(rawEmail);
    await deps.windows.takeAll(
      [{ key: `pwreset-addr:${clientAddress.slice(0, 64)}`, limit: PASSWORD_RESET_LIMITS.address }, { key: `pwreset-email:${email}`, limit: PASSWORD_RESET_LIMITS.email }],
      3600,
      (retryAfter) => new ApiError('RESOURCE_EXHAUSTED', 'too many password resets asked from this address or for this e-mail; wait and try again', {
        reason: 'PASSWORD_RESET_THROTTLED', headers: { 'retry-after': String(retryAfter) },
      }),
    );
    const user = await findUserByEmail(db, email);
    if (!user || user.disabled_at !== null) return;
    await db.transaction().execute(async (tx) => {
      const { token } = await issue(tx, user.id, 'email');
      await queueMail(tx, {
        to: user.email, userId: user.id, kind: 'password_reset', subject: 'Reset your svc password',
        body: [
          `Someone (hopefully you) asked to reset the password of the svc account ${user.email}.`,
          '',
          'Choose a new password here (the link works once, for 30 minutes):',
          linkOf(token),
          '',
          'If you did not ask, ignore this message: your password stays as it is.',
        ].join('\n'),
      });
    });
  }

  /** `svc admin users reset-password`: a link for the operator to hand over; nothing is mailed. */
  async function issueForOperator(userId: string): Promise<{ url: string; expiresAt: number }> {
    const user = await findUserById(db, userId);
    if (!user) throw new ApiError('NOT_FOUND', 'no such user', { reason: 'NOT_FOUND' });
    const { token, expiresAt } = await db.transaction().execute((tx) => issue(tx, user.id, 'operator'));
    return { url: linkOf(token), expiresAt };
  }

  /** What the link is for, before the person chooses a password. */
  async function resolve(token: string): Promise<{ email: string; expiresAt: number }> {
    if (!TOKEN.test(token)) throw linkDoesNotWork();
    const reset = await findWorkingReset(db, sha256Hex(token), clock.now());
    const user = reset ? await findUserById(db, reset.user_id) : undefined;
    if (!reset || !user || user.disabled_at !== null) throw linkDoesNotWork();
    return { email: user.email, expiresAt: reset.expires_at };
  }

  /** Uses the link: the new password, every session signed out, the notice. */
  async function complete(token: string, newPassword: string): Promise<{ userId: string; revokedSessions: number }> {
    if (!TOKEN.test(token)) throw linkDoesNotWork();
    const found = await findWorkingReset(db, sha256Hex(token), clock.now());
    if (!found) throw linkDoesNotWork();
    const hash = await deps.users.hashNewPassword(newPassword, 'body.new_password');
    return db.transaction().execute(async (tx) => {
      const user = await findUserById(tx, found.user_id);
      if (!user || user.disabled_at !== null || !(await useReset(tx, found.id, clock.now()))) throw linkDoesNotWork();
      await deps.users.storePasswordHash(tx, user.id, hash);
      const revokedSessions = await deleteSessionsOfUser(tx, user.id, null);
      await deps.passwordChanged(tx, { userId: user.id, changedAt: clock.nowMs(), revokedSessions });
      return { userId: user.id, revokedSessions };
    });
  }

  return { request, issueForOperator, resolve, complete };
}

export type PasswordResetService = ReturnType<typeof createPasswordResetService>;
