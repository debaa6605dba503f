// Two-factor sign-in (issue 34): a TOTP factor (RFC 6238, through the `otpauth` package) and
// one-time recovery codes, as GitHub, Gitea and Grafana do it.
//
// - Set up from the account: enroll makes a pending factor with a new 160-bit secret, shown once
//   (base32 and an otpauth:// URI for an authenticator app); enrolling again while pending makes a
//   new secret. A current code confirms it: then it is active, and 10 recovery codes are shown
//   once. Removing it (or making new recovery codes) takes the password or a current code.
// - Codes: SHA-1, 6 digits, 30-second steps (what every authenticator app reads), accepted one step
//   either side for clock drift. A code's step is stored when it is accepted and only a later step
//   passes afterwards, so a code seen over a shoulder cannot be used again. Recovery codes are 12
//   characters (60 random bits) as xxxx-xxxx-xxxx, stored as SHA-256 hashes salted with the user
//   id, each usable once; case, spaces and dashes do not matter.
// - Every code attempt is throttled per account and per address (sign-in-throttle.ts), before the
//   code is looked at; wrong codes change nothing else.
// - The secret is sealed by the keyring, bound to its row (TOTP_SEAL), never logged, never shown
//   again after enrolment.
import * as OTPAuth from 'otpauth';
import type { Db, Executor } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { randomString, sha256Hex, verifyPassword } from '../../platform/crypto.js';
import { ApiError, invalidArgument, notFound, permissionDenied } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { Keyring } from '../../platform/keyring.js';
import { findUserById } from '../users/users.service.js';
import type { SignInThrottle } from './sign-in-throttle.js';
import * as repo from './two-factor.repo.js';

/** How a factor's secret is sealed (platform/keyring.ts): bound to its row, so a copy onto another row does not open. */
export const TOTP_SEAL = { context: (id: string) => `user-totp:${id}`, legacyPurpose: undefined };

export const TOTP_DIGITS = 6;
export const TOTP_PERIOD_SECONDS = 30;
/** steps accepted either side of the current one (clock drift between phone and server) */
export const TOTP_WINDOW = 1;
export const RECOVERY_CODE_COUNT = 10;
const RECOVERY_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';
const RECOVERY_CODE = /^[a-z2-9]{12}$/;
const TOTP_CODE = /^[0-9]{6}$/;

export interface TwoFactorStatus {
  enabled: boolean;
  pending: boolean;
  enabled_at: number | null;
  recovery_codes_remaining: number;
}

export interface TotpEnrollment {
  secret: string;
  otpauth_uri: string;
  issuer: string;
  account: string;
  algorithm: 'SHA1';
  digits: number;
  period: number;
}

/** A proof that the person at the keyboard owns the account: the password or a current code. */
export interface AccountProof {
  password?: string | undefined;
  code?: string | undefined;
}

export interface TwoFactorDeps {
  db: Db;
  keyring: Keyring;
  throttle: SignInThrottle;
  /** the name authenticator apps show above the code */
  issuer: string;
  /**
   * Told, in the change's transaction, that an account's factor was enabled or removed (the
   * composition root records it in the account's workspaces' audit logs and notifies the person:
   * identity sits below both).
   */
  factorChanged(tx: Executor, e: { userId: string; enabled: boolean; at: number; requestId: string | null }): Promise<unknown>;
}

/** The code as typed: spaces and dashes dropped, lowercased. */
function normalizeCode(raw: string): string {
  return raw.replace(/[\s-]+/g, '').toLowerCase();
}

function recoveryHash(userId: string, normalized: string): string {
  return sha256Hex(`${userId}:${normalized}`);
}

function newRecoveryCode(): string {
  const raw = randomString(12, RECOVERY_ALPHABET);
  return `${raw.slice(0, 4)}-${raw.slice(4, 8)}-${raw.slice(8)}`;
}

function totpOf(secretBase32: string, issuer: string, account: string): OTPAuth.TOTP {
  return new OTPAuth.TOTP({
    issuer, label: account, algorithm: 'SHA1', digits: TOTP_DIGITS, period: TOTP_PERIOD_SECONDS, secret: OTPAuth.Secret.fromBase32(secretBase32),
  });
}

const codeRequired = () =>
  new ApiError('UNAUTHENTICATED', 'this account signs in with two factors: send the code from your authenticator app (or a recovery code) in `code`', { reason: 'TWO_FACTOR_CODE_REQUIRED' });
const codeWrongAtSignIn = () =>
  new ApiError('UNAUTHENTICATED', 'the two-factor code is not right, or was used already: send a current code from your authenticator app, or an unused recovery code', { reason: 'TWO_FACTOR_CODE_INVALID' });
const codeWrong = (field: string) =>
  invalidArgument('the code is not right, or was used already: type the current code from your authenticator app', 'TWO_FACTOR_CODE_INVALID', [{ field, description: 'not a current code' }]);
const notEnabled = () => new ApiError('FAILED_PRECONDITION', 'two-factor sign-in is not on for your account', { reason: 'TWO_FACTOR_NOT_ENABLED' });

export function createTwoFactorService(deps: TwoFactorDeps) {
  const { db, keyring, throttle } = deps;

  function secretOf(row: repo.TotpRow): string {
    return keyring.open(row.secret_sealed, TOTP_SEAL.context(row.id));
  }

  /** The step a TOTP code is valid for now (within the window), or null. */
  function stepOf(row: repo.TotpRow, code: string): number | null {
    if (!TOTP_CODE.test(code)) return null;
    const nowMs = clock.nowMs();
    const delta = totpOf(secretOf(row), deps.issuer, 'x').validate({ token: code, timestamp: nowMs, window: TOTP_WINDOW });
    if (delta === null) return null;
    return OTPAuth.TOTP.counter({ period: TOTP_PERIOD_SECONDS, timestamp: nowMs }) + delta;
  }

  /** True when the code is a current TOTP code not used before (its step is taken), or an unused recovery code (spent). */
  async function spendCode(row: repo.TotpRow, raw: string): Promise<'totp' | 'recovery_code' | null> {
    const code = normalizeCode(raw);
    const step = stepOf(row, code);
    if (step !== null) return (await repo.takeTotpStep(db, row.id, step)) ? 'totp' : null;
    if (RECOVERY_CODE.test(code) && (await repo.useRecoveryCode(db, row.user_id, recoveryHash(row.user_id, code), clock.now()))) return 'recovery_code';
    return null;
  }

  async function activeRow(userId: string): Promise<repo.TotpRow | null> {
    const row = await repo.findTotp(db, userId);
    return row && row.confirmed_at !== null ? row : null;
  }

  async function status(userId: string): Promise<TwoFactorStatus> {
    const row = await repo.findTotp(db, userId);
    const enabled = row?.confirmed_at != null;
    return {
      enabled,
      pending: row !== undefined && !enabled,
      enabled_at: row?.confirmed_at ?? null,
      recovery_codes_remaining: enabled ? await repo.countUnusedRecoveryCodes(db, userId) : 0,
    };
  }

  async function enroll(userId: string): Promise<TotpEnrollment> {
    const user = await findUserById(db, userId);
    if (!user) throw notFound('user');
    const id = newId('totpFactor');
    const secret = new OTPAuth.Secret({ size: 20 }).base32;
    const stored = await repo.upsertPendingTotp(db, {
      id, user_id: userId, secret_sealed: keyring.seal(secret, TOTP_SEAL.context(id)), created_at: clock.now(), confirmed_at: null, last_used_step: null,
    });
    if (!stored) {
      throw new ApiError('ALREADY_EXISTS', 'two-factor sign-in is already on for your account: remove it first to set up another authenticator', { reason: 'TWO_FACTOR_ALREADY_ENABLED' });
    }
    const totp = totpOf(secret, deps.issuer, user.email);
    return { secret, otpauth_uri: totp.toString(), issuer: deps.issuer, account: user.email, algorithm: 'SHA1', digits: TOTP_DIGITS, period: TOTP_PERIOD_SECONDS };
  }

  /** New recovery codes for the account, replacing any before, in the caller's transaction: the codes, shown once. */
  async function storeNewRecoveryCodes(tx: Executor, userId: string): Promise<string[]> {
    const now = clock.now();
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await repo.replaceRecoveryCodes(tx, userId, codes.map((c) => ({
      id: newId('recoveryCode'), user_id: userId, code_hash: recoveryHash(userId, normalizeCode(c)), created_at: now, used_at: null,
    })));
    return codes;
  }

  async function confirm(userId: string, rawCode: string, address: string, requestId: string | null): Promise<{ recovery_codes: string[]; enabled_at: number }> {
    const row = await repo.findTotp(db, userId);
    if (!row) throw new ApiError('FAILED_PRECONDITION', 'nothing to confirm: start with POST /v1/me/two_factor:enroll', { reason: 'TWO_FACTOR_NOT_PENDING' });
    if (row.confirmed_at !== null) throw new ApiError('ALREADY_EXISTS', 'two-factor sign-in is already on for your account', { reason: 'TWO_FACTOR_ALREADY_ENABLED' });
    const attempt = await throttle.beginSecondFactor(userId, address);
    const step = stepOf(row, normalizeCode(rawCode));
    if (step === null) throw codeWrong('body.code');
    await throttle.secondFactorSucceeded(attempt);
    const now = clock.now();
    return db.transaction().execute(async (tx) => {
      // Enrolled again meanwhile (another secret) or confirmed by a concurrent request: this code confirms nothing.
      if (!(await repo.confirmTotp(tx, { id: row.id, step, now }))) throw codeWrong('body.code');
      const codes = await storeNewRecoveryCodes(tx, userId);
      await deps.factorChanged(tx, { userId, enabled: true, at: now, requestId });
      return { recovery_codes: codes, enabled_at: now };
    });
  }

  /**
   * Checks a proof of the account: its password (checked and throttled like a sign-in) or, when
   * the factor is active, a code (throttled like a sign-in's code). Exactly one must be sent.
   */
  async function checkProof(userId: string, proof: AccountProof, active: repo.TotpRow | null, address: string): Promise<void> {
    if ((proof.password === undefined) === (proof.code === undefined)) {
      throw invalidArgument('send exactly one of password or code', 'ONE_OF_PASSWORD_CODE', [{ field: 'body.password', description: 'exactly one of password, code' }]);
    }
    if (proof.password !== undefined) {
      const user = await findUserById(db, userId);
      if (!user) throw notFound('user');
      const attempt = await throttle.begin(address, user.email);
      if (!(await verifyPassword(proof.password, user.password_hash))) {
        throw invalidArgument('the password is not right', 'INVALID_CREDENTIALS', [{ field: 'body.password', description: 'not your current password' }]);
      }
      await throttle.succeeded(attempt);
      return;
    }
    if (!active) throw invalidArgument('two-factor sign-in is not confirmed yet: prove it is you with your password', 'TWO_FACTOR_CODE_INVALID', [{ field: 'body.code', description: 'send password instead' }]);
    const attempt = await throttle.beginSecondFactor(userId, address);
    if (!(await spendCode(active, proof.code!))) throw codeWrong('body.code');
    await throttle.secondFactorSucceeded(attempt);
  }

  /** Removes the factor (active or pending) and its recovery codes; sign-in asks for the password only again. */
  async function disable(userId: string, proof: AccountProof, address: string, requestId: string | null): Promise<TwoFactorStatus> {
    const row = await repo.findTotp(db, userId);
    if (!row) throw notEnabled();
    const active = row.confirmed_at !== null ? row : null;
    await checkProof(userId, proof, active, address);
    await db.transaction().execute(async (tx) => {
      const removed = await repo.deleteTotp(tx, userId);
      await repo.deleteRecoveryCodes(tx, userId);
      if (active && removed > 0) await deps.factorChanged(tx, { userId, enabled: false, at: clock.now(), requestId });
    });
    return status(userId);
  }

  async function regenerateRecoveryCodes(userId: string, proof: AccountProof, address: string): Promise<{ recovery_codes: string[] }> {
    const active = await activeRow(userId);
    if (!active) throw notEnabled();
    await checkProof(userId, proof, active, address);
    const codes = await db.transaction().execute((tx) => storeNewRecoveryCodes(tx, userId));
    return { recovery_codes: codes };
  }

  /**
   * The second step of every sign-in with a password (POST /v1/auth/sessions, the web app, the
   * device page), after the password was right: nothing when the account has no active factor;
   * else `code` must be a current TOTP code or an unused recovery code (401
   * TWO_FACTOR_CODE_REQUIRED without one, TWO_FACTOR_CODE_INVALID when wrong or used; 429 while
   * throttled). Returns how the second factor was proven, or null when none is asked.
   */
  async function checkSignIn(userId: string, code: string | undefined, address: string): Promise<'totp' | 'recovery_code' | null> {
    const active = await activeRow(userId);
    if (!active) return null;
    if (code === undefined || code.trim() === '') throw codeRequired();
    const attempt = await throttle.beginSecondFactor(userId, address);
    const how = await spendCode(active, code);
    if (!how) throw codeWrongAtSignIn();
    await throttle.secondFactorSucceeded(attempt);
    return how;
  }

  /** Whether the account has an active factor (a workspace that requires one asks this at each request). */
  function hasActiveFactor(userId: string): Promise<boolean> {
    return repo.hasActiveTotp(db, userId);
  }

  function usersWithActiveFactor(userIds: string[]): Promise<Set<string>> {
    return repo.usersWithActiveTotp(db, userIds);
  }

  return { status, enroll, confirm, disable, regenerateRecoveryCodes, checkSignIn, hasActiveFactor, usersWithActiveFactor };
}

export type TwoFactorService = ReturnType<typeof createTwoFactorService>;

/** Factors are managed with a session (a session token or the web app's cookie); anything else is 403. */
export function assertSessionCredential(p: { via: string }): void {
  if (p.via !== 'session' && p.via !== 'cookie') {
    throw permissionDenied('two-factor sign-in is managed with a session (sign in with a password, or the web app), not with this credential', 'SESSION_CREDENTIAL_REQUIRED');
  }
}
