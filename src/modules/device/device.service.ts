// The OAuth 2.0 Device Authorization Grant (RFC 8628, API.md section 4): the CLI asks for a
// device code, the user approves its user code at /device in a browser, and the CLI's polling of
// POST /oauth/token turns the approved code into a session token, exactly once.
import { randomBytes } from 'node:crypto';
import type { Config } from '../../config.js';
import { isUniqueViolation, type Db } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { randomString, sha256Hex } from '../../platform/crypto.js';
import { newId } from '../../platform/ids.js';
import { OAuthError, type GrantHandler, type TokenResponse } from '../oauth/oauth.errors.js';
import type { SessionService } from '../sessions/sessions.service.js';
import { createSignInThrottle } from '../sessions/sign-in-throttle.js';
import {
  decideDeviceCode, findByDeviceCodeHash, findByUserCode, insertDeviceCode, markExchanged, purgeExpiredDeviceCodes,
  recordPoll, widenInterval, type DeviceCodeRow,
} from './device.repo.js';

export const DEVICE_CODE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';
export const DEFAULT_DEVICE_CLIENT_ID = 'svc-cli';
export const DEVICE_CODE_TTL_SECONDS = 600;
export const DEVICE_POLL_INTERVAL_SECONDS = 5;
/** RFC 8628 section 3.5: each slow_down adds 5 seconds to the interval, for good. */
const SLOW_DOWN_STEP_SECONDS = 5;
/** Consonants only (RFC 8628 section 6.1): no vowels, so no words; no look-alike digits. */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/;
/** Expired rows are kept an hour so a late poll still hears expired_token, then purged. */
const PURGE_AFTER_SECONDS = 3600;

export interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** Who tries a user code at the page: the browser session and the client address (the throttle's counters). */
export interface CodeAttempt {
  session: string;
  address: string;
}

/** What the /device page may say about a user code; `pending` is the only one that can be decided. */
export type UserCodeState = 'pending' | 'approved' | 'denied' | 'exchanged' | 'expired' | 'unknown';

export interface UserCodeLookup {
  state: UserCodeState;
  /** the code as shown to people, XXXX-XXXX; null when the input was not a well-formed code */
  userCode: string | null;
  clientId: string | null;
  expiresAt: number | null;
}

/** Accepts what people type (lower case, with or without the dash, stray spaces); null when it cannot be a code. */
export function normalizeUserCode(input: string): string | null {
  const compact = input.toUpperCase().replace(/[\s-]/g, '');
  return USER_CODE.test(compact) ? compact : null;
}

export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

function stateOf(row: DeviceCodeRow | undefined, now: number): UserCodeState {
  if (!row) return 'unknown';
  if (row.status === 'pending' && row.expires_at <= now) return 'expired';
  return row.status;
}

export function createDeviceService(deps: { db: Db; config: Config; sessions: Pick<SessionService, 'createSession'> }) {
  const { db, config, sessions } = deps;

  async function issueDeviceCode(clientId: string = DEFAULT_DEVICE_CLIENT_ID): Promise<DeviceAuthorization> {
    const now = clock.now();
    await purgeExpiredDeviceCodes(db, now - PURGE_AFTER_SECONDS);
    // 256 random bits; only its hash is stored, so a database leak does not leak pollable codes.
    const deviceCode = randomBytes(32).toString('base64url');
    for (let attempt = 0; ; attempt++) {
      const userCode = randomString(8, USER_CODE_ALPHABET);
      try {
        await insertDeviceCode(db, {
          id: newId('deviceCode'),
          device_code_hash: sha256Hex(deviceCode),
          user_code: userCode,
          client_id: clientId,
          status: 'pending',
          user_id: null,
          interval_s: DEVICE_POLL_INTERVAL_SECONDS,
          last_polled_at: null,
          created_at: now,
          expires_at: now + DEVICE_CODE_TTL_SECONDS,
        });
      } catch (err) {
        // 20^8 codes: a collision with a live code is rare; retry with a fresh one.
        if (isUniqueViolation(err) && attempt < 5) continue;
        throw err;
      }
      const shown = formatUserCode(userCode);
      const verificationUri = `${config.publicUrl}/device`;
      return {
        device_code: deviceCode,
        user_code: shown,
        verification_uri: verificationUri,
        verification_uri_complete: `${verificationUri}?user_code=${encodeURIComponent(shown)}`,
        expires_in: DEVICE_CODE_TTL_SECONDS,
        interval: DEVICE_POLL_INTERVAL_SECONDS,
      };
    }
  }

  /** The device_code grant at POST /oauth/token (RFC 8628 section 3.4-3.5). */
  const exchangeDeviceCode: GrantHandler = async (form, auth): Promise<TokenResponse> => {
    const deviceCode = form.device_code;
    if (!deviceCode) throw new OAuthError('invalid_request', 'device_code is required');
    const row = await findByDeviceCodeHash(db, sha256Hex(deviceCode));
    const clientId = form.client_id ?? auth.clientId;
    // Same answer for an unknown code and another client's code, so neither can be probed.
    if (!row || (clientId !== undefined && clientId !== row.client_id)) {
      throw new OAuthError('invalid_grant', 'unknown device_code');
    }
    if (row.status === 'exchanged') throw new OAuthError('invalid_grant', 'this device_code was already exchanged for a token');
    const now = clock.now();
    if (row.expires_at <= now) throw new OAuthError('expired_token', 'the device_code has expired; request a new one');
    if (row.status === 'denied') throw new OAuthError('access_denied', 'the user denied the request');
    if (row.status === 'approved') {
      if (!row.user_id || !(await markExchanged(db, row.id, now))) {
        throw new OAuthError('invalid_grant', 'this device_code was already exchanged for a token');
      }
      const session = await sessions.createSession(row.user_id);
      return { access_token: session.token, token_type: 'Bearer', expires_in: session.expires_at - clock.now() };
    }
    if (await recordPoll(db, row.id, now)) {
      throw new OAuthError('authorization_pending', 'the user has not approved the request yet');
    }
    const interval = await widenInterval(db, row.id, now, SLOW_DOWN_STEP_SECONDS);
    throw new OAuthError('slow_down', `polling too fast; wait at least ${interval ?? row.interval_s + SLOW_DOWN_STEP_SECONDS} seconds between requests`);
  };

  const throttle = createSignInThrottle(db);

  /**
   * Runs a lookup of a typed user code under the wrong-code throttle (sign-in-throttle.ts): the
   * attempt is counted before the lookup, and given back when the code exists. Throws 429
   * USER_CODE_THROTTLED (retry-after) while the session or the address must wait, the right
   * code included.
   */
  async function throttled(who: CodeAttempt, lookup: () => Promise<UserCodeLookup>): Promise<UserCodeLookup> {
    const keys = await throttle.beginUserCode(who.session, who.address);
    const found = await lookup();
    if (found.state !== 'unknown') await throttle.userCodeFound(keys);
    return found;
  }

  /** What the approval page should say about a user code the person typed or followed. */
  async function lookupUserCode(input: string): Promise<UserCodeLookup> {
    const code = normalizeUserCode(input);
    if (!code) return { state: 'unknown', userCode: null, clientId: null, expiresAt: null };
    const row = await findByUserCode(db, code);
    return {
      state: stateOf(row, clock.now()),
      userCode: formatUserCode(code),
      clientId: row?.client_id ?? null,
      expiresAt: row?.expires_at ?? null,
    };
  }

  /** Approves or denies a pending code for `userId`; returns the resulting state (or why it could not change). */
  async function decideUserCode(input: string, userId: string, decision: 'approved' | 'denied'): Promise<UserCodeLookup> {
    const code = normalizeUserCode(input);
    if (code && (await decideDeviceCode(db, code, decision, userId, clock.now()))) {
      return { state: decision, userCode: formatUserCode(code), clientId: null, expiresAt: null };
    }
    return lookupUserCode(input);
  }

  return {
    issueDeviceCode,
    exchangeDeviceCode,
    /** lookupUserCode for a signed-in person at the page: throttled per session and address */
    lookupUserCodeAs: (who: CodeAttempt, input: string) => throttled(who, () => lookupUserCode(input)),
    /** decideUserCode, throttled the same way */
    decideUserCodeAs: (who: CodeAttempt, input: string, userId: string, decision: 'approved' | 'denied') => throttled(who, () => decideUserCode(input, userId, decision)),
  };
}

export type DeviceService = ReturnType<typeof createDeviceService>;
