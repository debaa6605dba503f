// Sign-in throttling that an attacker cannot turn against the account owner (issue 9): growing
// delays per client address and per account, never a lock. Kept in the database so that every
// instance sees the same counts.
//
// Three counters of failed sign-ins, each with some free failures and then a delay before the next
// attempt that doubles with every further failure (1 s, 2 s, 4 s, ... at most 15 minutes):
//   - `pair:<address> <email>`: one address guessing one account; 5 free failures.
//   - `acct:<email>`: the account from every address; 10 free failures. It delays only addresses
//     that have already failed for this account, so the owner signing in from a fresh address is
//     never delayed by what others did.
//   - `addr:<address>`: one address across all accounts (password spraying); 20 free failures.
// A counter whose last failure is an hour old starts again from zero. A right password clears the
// pair and account counters; the address counter only loses the attempt just made.
//
// The same counters throttle wrong user codes on the device approval page (RFC 8628 section 5.1):
//   - `code-sess:<session>`: one browser session; 5 free wrong codes.
//   - `code-addr:<address>`: one address across sessions; 20 free wrong codes.
// And wrong second-factor codes (a TOTP code or a recovery code, asked once the password was right;
// two-factor.service.ts):
//   - `2fa:<user>`: the account from every address; 5 free wrong codes. Whoever gets here knows
//     the password, so the account is what is guarded; a right code clears it.
//   - `2fa-addr:<address>`: one address across accounts; 20 free wrong codes.
// A code that exists only gives back the attempt just made: it never clears a counter, or a
// guesser holding one real code of its own could reset its delay between guesses. While a delay
// runs every code is refused, the right one included (what section 5.1 asks against brute force).
//
// Every attempt takes its slots before the (slow) password check, in one conditional upsert per
// counter, so a burst of concurrent guesses cannot all pass a check made before any was counted.
import type { Db } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { ApiError } from '../../platform/errors.js';
import { claimThrottleSlot, deleteThrottles, findThrottles, findWindowStart, giveBackFailures, takeWindowAttempt } from './sign-in-throttle.repo.js';

const MAX_DELAY_SECONDS = 15 * 60;
const RESET_AFTER_SECONDS = 60 * 60;
const RULE = { resetAfterSeconds: RESET_AFTER_SECONDS, maxDelaySeconds: MAX_DELAY_SECONDS };

interface Counter {
  key: string;
  /** free failures; null: counted, but delays nothing for this attempt */
  free: number | null;
}

export const SIGN_IN_FREE_FAILURES = { pair: 5, account: 10, address: 20 } as const;

/** Seconds to wait after `failures` failures of a counter with `free` free ones. */
export function delayAfter(failures: number, free: number): number {
  if (failures < free) return 0;
  return Math.min(2 ** (failures - free), MAX_DELAY_SECONDS);
}

export const USER_CODE_FREE_FAILURES = { session: 5, address: 20 } as const;

export const SECOND_FACTOR_FREE_FAILURES = { account: 5, address: 20 } as const;

function throttled(retryAfter: number): ApiError {
  return new ApiError('RESOURCE_EXHAUSTED', 'too many failed sign-ins from this address or for this account; wait and try again', {
    reason: 'SIGN_IN_THROTTLED',
    headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfter))) },
  });
}

function userCodeThrottled(retryAfter: number): ApiError {
  return new ApiError('RESOURCE_EXHAUSTED', 'too many wrong device codes from this session or address; wait and try again', {
    reason: 'USER_CODE_THROTTLED',
    headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfter))) },
  });
}

function secondFactorThrottled(retryAfter: number): ApiError {
  return new ApiError('RESOURCE_EXHAUSTED', 'too many wrong two-factor codes for this account or from this address; wait and try again', {
    reason: 'SIGN_IN_THROTTLED',
    headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfter))) },
  });
}

export function createSignInThrottle(db: Db) {
  /** Counts one failure on the counter if it allows an attempt now; false when it does not. */
  function claim(counter: Counter, now: number): Promise<boolean> {
    return claimThrottleSlot(db, counter.key, counter.free, now, RULE);
  }

  /**
   * Takes the attempt's slots; throws 429 SIGN_IN_THROTTLED with retry-after when a counter
   * still makes this address wait. Returns the keys to settle once the password is checked.
   */
  async function begin(rawAddress: string, email: string): Promise<{ pair: string; account: string; address: string }> {
    const address = rawAddress.slice(0, 64);
    const keys = { pair: `pair:${address} ${email}`, account: `acct:${email}`, address: `addr:${address}` };
    const now = clock.now();
    const rows = await findThrottles(db, [keys.pair, keys.account, keys.address]);
    const byKey = new Map(rows.map((r) => [r.key, r]));
    const failedHereBefore = (byKey.get(keys.pair)?.failures ?? 0) > 0;
    const counters: Counter[] = [
      { key: keys.pair, free: SIGN_IN_FREE_FAILURES.pair },
      // The account counter counts every failure, but delays only addresses that failed here before.
      { key: keys.account, free: failedHereBefore ? SIGN_IN_FREE_FAILURES.account : null },
      { key: keys.address, free: SIGN_IN_FREE_FAILURES.address },
    ];
    await takeSlots(counters, byKey, now, throttled);
    return keys;
  }

  /** Refuses with `refuse(seconds)` while a counter makes the caller wait; else counts the attempt on each. */
  async function takeSlots(counters: Counter[], byKey: Map<string, { failures: number; last_failure_at: number }>, now: number, refuse: (wait: number) => ApiError) {
    let wait = 0;
    for (const c of counters) {
      const row = byKey.get(c.key);
      if (!row || c.free === null || now - row.last_failure_at >= RESET_AFTER_SECONDS) continue;
      // No delay owed: nothing to wait for, even if this instance's clock is behind the one that counted.
      const delay = delayAfter(row.failures, c.free);
      if (delay > 0) wait = Math.max(wait, row.last_failure_at + delay - now);
    }
    if (wait > 0) throw refuse(wait);
    for (const c of counters) {
      // Lost a race with a concurrent attempt that took the last free slot.
      if (!(await claim(c, now))) throw refuse(1);
    }
  }

  /** Gives back the attempt just made on each key (it was no failure); clears nothing. */
  async function giveBack(keys: string[]): Promise<void> {
    await giveBackFailures(db, keys);
  }

  /**
   * Takes a device page attempt at a user code, before the code is looked up; throws 429
   * USER_CODE_THROTTLED with retry-after while this session or address must wait. Returns the
   * keys for userCodeFound.
   */
  async function beginUserCode(session: string, rawAddress: string): Promise<string[]> {
    const keys = [`code-sess:${session}`, `code-addr:${rawAddress.slice(0, 64)}`];
    const now = clock.now();
    const rows = await findThrottles(db, keys);
    const counters: Counter[] = [
      { key: keys[0]!, free: USER_CODE_FREE_FAILURES.session },
      { key: keys[1]!, free: USER_CODE_FREE_FAILURES.address },
    ];
    await takeSlots(counters, new Map(rows.map((r) => [r.key, r])), now, userCodeThrottled);
    return keys;
  }

  /**
   * Takes an attempt at a second-factor code of an account, before the code is checked; throws 429
   * SIGN_IN_THROTTLED with retry-after while the account or the address must wait. Returns the
   * keys for secondFactorSucceeded.
   */
  async function beginSecondFactor(userId: string, rawAddress: string): Promise<{ account: string; address: string }> {
    const keys = { account: `2fa:${userId}`, address: `2fa-addr:${rawAddress.slice(0, 64)}` };
    const rows = await findThrottles(db, [keys.account, keys.address]);
    const counters: Counter[] = [
      { key: keys.account, free: SECOND_FACTOR_FREE_FAILURES.account },
      { key: keys.address, free: SECOND_FACTOR_FREE_FAILURES.address },
    ];
    await takeSlots(counters, new Map(rows.map((r) => [r.key, r])), clock.now(), secondFactorThrottled);
    return keys;
  }

  /** The code was right: the account's count starts again; the address only gets this attempt back. */
  async function secondFactorSucceeded(keys: { account: string; address: string }): Promise<void> {
    await deleteThrottles(db, [keys.account]);
    await giveBack([keys.address]);
  }

  /** The password was right: the attempt was no failure. */
  async function succeeded(keys: { pair: string; account: string; address: string }): Promise<void> {
    await deleteThrottles(db, [keys.pair, keys.account]);
    await giveBack([keys.address]);
  }

  return { begin, succeeded, beginUserCode, userCodeFound: giveBack, beginSecondFactor, secondFactorSucceeded };
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>;

/**
 * Fixed-window rate limits on the same table of counters, for attempts that are not failures (a
 * signed-out `POST /v1/order_drafts:begin` writes a draft whatever happens next): at most `limit`
 * attempts per key in a window of `windowSeconds` that opens at the key's first attempt. Here
 * `failures` counts the window's attempts and `last_failure_at` is when the window opened. One
 * conditional upsert per key, so concurrent attempts cannot all pass a count read before them.
 */
export function createAttemptWindows(db: Db) {
  /** Takes one attempt on the key; 0 when taken, else the seconds until its window ends. */
  async function take(key: string, limit: number, windowSeconds: number): Promise<number> {
    const now = clock.now();
    if (await takeWindowAttempt(db, key, limit, windowSeconds, now)) return 0;
    const opened = await findWindowStart(db, key);
    return Math.max(1, (opened?.last_failure_at ?? now) + windowSeconds - now);
  }

  /**
   * Takes one attempt on each key in turn; throws `refuse(seconds)` (a 429 with retry-after) at the
   * first key whose window is full. An attempt refused by a later key still counts on the earlier ones.
   */
  async function takeAll(keys: { key: string; limit: number }[], windowSeconds: number, refuse: (retryAfter: number) => ApiError): Promise<void> {
    for (const { key, limit } of keys) {
      const wait = await take(key.slice(0, 200), limit, windowSeconds);
      if (wait > 0) throw refuse(wait);
    }
  }

  return { take, takeAll };
}

export type AttemptWindows = ReturnType<typeof createAttemptWindows>;
