// Users: e-mail identity with an scrypt-hashed password.
import { isUniqueViolation, type Db, type Executor } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import type { SignupMode } from '../../config.js';
import { hashPassword, type PasswordHashCost } from '../../platform/crypto.js';
import { ApiError, invalidArgument } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import {
  anyUserExists, deleteUserRow, findUserByEmail, findUserById, insertUser, listUsers, notificationEmailOf, setAdminGrantedAt, setDisabledAt,
  updatePasswordHash, updateProfile, type UserRow,
} from './users.repo.js';

/** Other modules read users through these (never through users.repo.ts). */
export { findUserByEmail, findUserById, notificationEmailOf, type UserRow } from './users.repo.js';

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** What passes for an e-mail address here (the address is proven by mail, not by its shape). */
export const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** The one rule for a password a person chooses: 8-256 characters. */
function checkNewPassword(password: string, field: string): void {
  if (password.length < 8 || password.length > 256) {
    throw invalidArgument('password must be 8-256 characters', 'INVALID_PASSWORD', [{ field, description: '8-256 characters' }]);
  }
}

export const NOTIFICATION_EMAIL_CHOICES = ['none', 'important', 'all'] as const;

export interface UserServiceDeps {
  db: Db;
  passwordHashCost: PasswordHashCost;
  /** SVC_SIGNUP: who may sign up (config.ts) */
  signup: SignupMode;
  /** SVC_ADMIN_EMAILS: accounts that are instance admins by configuration */
  adminEmails: readonly string[];
  /**
   * Whether the offer whose link carries this short hash takes a sign-up for this e-mail (an offer
   * anyone may order, or one restricted to e-mails that include it). Given by the composition root
   * (the offers' service), so that this module imports nothing of theirs.
   */
  offerAdmitsSignUp(shortHash: string, email: string): Promise<boolean>;
}

export function createUserService(deps: UserServiceDeps) {
  const { db, passwordHashCost } = deps;

  async function createUser(input: { email: string; password: string; name?: string | null }): Promise<UserRow> {
    const email = normalizeEmail(input.email);
    if (!EMAIL.test(email) || email.length > 254) throw invalidArgument('email is not a valid address', 'INVALID_EMAIL', [{ field: 'email', description: 'an e-mail address' }]);
    checkNewPassword(input.password, 'password');
    const now = clock.now();
    const row: UserRow = {
      id: newId('user'),
      email,
      password_hash: await hashPassword(input.password, passwordHashCost),
      name: input.name ?? null,
      created_at: now,
      updated_at: now,
      disabled_at: null,
      admin_granted_at: null,
      notification_email: 'none',
    };
    try {
      await insertUser(db, row);
    } catch (err) {
      if (isUniqueViolation(err)) throw new ApiError('ALREADY_EXISTS', 'a user with this email already exists', { reason: 'EMAIL_TAKEN' });
      throw err;
    }
    return row;
  }

  /**
   * POST /v1/users: anyone when sign-up is open; otherwise only through an offer's link that takes
   * this e-mail. Refused before anything is hashed or written.
   */
  async function signUp(input: { email: string; password: string; name?: string | null; offer?: string }): Promise<UserRow> {
    if (deps.signup !== 'open') {
      const viaOffer = input.offer !== undefined && (await deps.offerAdmitsSignUp(input.offer, normalizeEmail(input.email)));
      if (!viaOffer) {
        throw new ApiError(
          'PERMISSION_DENIED',
          input.offer === undefined
            ? 'this service does not take sign-ups: accounts come from an invitation (an owner or admin of a workspace adds you by e-mail), an offer\'s link, or its operator'
            : 'this offer\'s link does not take a sign-up (unknown, no longer available, or not for this e-mail)',
          { reason: 'SIGNUP_CLOSED' },
        );
      }
    }
    return createUser(input);
  }

  /** A new password checked by the one rule and hashed: hashed before any transaction, which must not wait on scrypt. */
  async function hashNewPassword(password: string, field = 'password'): Promise<string> {
    checkNewPassword(password, field);
    return hashPassword(password, passwordHashCost);
  }

  /** Stores a hash from hashNewPassword in the caller's transaction; false when the user is gone. */
  function storePasswordHash(tx: Executor, userId: string, hash: string): Promise<boolean> {
    return updatePasswordHash(tx, userId, hash, clock.now());
  }

  /** Creates the user unless one with this email exists; returns it either way. */
  async function ensureUser(input: { email: string; password: string }): Promise<{ user: UserRow; created: boolean }> {
    const existing = await findUserByEmail(db, normalizeEmail(input.email));
    if (existing) return { user: existing, created: false };
    try {
      return { user: await createUser(input), created: true };
    } catch (err) {
      const raced = err instanceof ApiError && err.code === 'ALREADY_EXISTS' ? await findUserByEmail(db, normalizeEmail(input.email)) : undefined;
      if (raced) return { user: raced, created: false };
      throw err;
    }
  }

  /** Why the account is an instance admin, if it is: granted (`svc admin users grant-admin`) or config (SVC_ADMIN_EMAILS). */
  function adminSource(user: Pick<UserRow, 'email' | 'admin_granted_at'>): 'granted' | 'config' | null {
    if (deps.adminEmails.includes(user.email)) return 'config';
    return user.admin_granted_at !== null ? 'granted' : null;
  }

  /** A user by usr_ id or e-mail (the operator's commands and the admin API take either). */
  async function findByRef(ref: string, executor: Executor = db): Promise<UserRow | undefined> {
    return ref.startsWith('usr_') ? findUserById(executor, ref) : findUserByEmail(executor, normalizeEmail(ref));
  }

  return {
    createUser, signUp, hashNewPassword, storePasswordHash, ensureUser, anyUserExists: () => anyUserExists(db), adminSource, findByRef, adminEmails: deps.adminEmails,
    list: (page: Parameters<typeof listUsers>[1]) => listUsers(db, page),
    setDisabled: (tx: Executor, id: string, disabled: boolean) => setDisabledAt(tx, id, disabled ? clock.now() : null, clock.now()),
    setAdmin: (tx: Executor, id: string, admin: boolean) => setAdminGrantedAt(tx, id, admin ? clock.now() : null, clock.now()),
    updateProfile: (id: string, patch: Parameters<typeof updateProfile>[2]) => updateProfile(db, id, patch, clock.now()),
    deleteUser: (tx: Executor, id: string) => deleteUserRow(tx, id),
    emailChoices: (tx: Executor, ids: string[]) => notificationEmailOf(tx, ids),
  };
}

export type UserService = ReturnType<typeof createUserService>;
