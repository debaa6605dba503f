// Prefixed, time-sortable ids: `${prefix}_` + 26 lowercase Crockford base32 characters (ULID,
// monotonic within a millisecond), so "newest first" is `order by id desc` and never ties.
import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

export const ID_PREFIXES = {
  workspace: 'ws',
  machine: 'mch',
  cluster: 'clu',
  package: 'pkg',
  install: 'inst',
  repositoryChangeRequest: 'rcr',
  repository: 'repo',
  orderDraft: 'odft',
  secret: 'sec',
  secretVersion: 'secv',
  member: 'wsm',
  invitation: 'inv',
  user: 'usr',
  operation: 'op',
  apiToken: 'tok',
  packageVersion: 'pkv',
  render: 'rnd',
  previewHostname: 'phn',
  agent: 'agt',
  agentSession: 'ags',
  agentTurn: 'agtt',
  snippet: 'snp',
  snippetRun: 'snpr',
  offer: 'ofr',
  order: 'ord',
  checkoutSession: 'chk',
  notification: 'ntf',
  subscriptionChangeRequest: 'scr',
  subscription: 'sub',
  planCheckout: 'pck',
  planSubscription: 'psub',
  oauthClient: 'oac',
  session: 'ses',
  mailMessage: 'mail',
  passwordReset: 'pwr',
  /** a TOTP factor of an account (issue 34) */
  totpFactor: 'tfa',
  recoveryCode: 'rcv',
  deviceCode: 'dvc',
  signingKey: 'key',
  job: 'job',
  auditEvent: 'aud',
  workerBootstrap: 'wbs',
  machineCredential: 'mcr',
  localServer: 'lsrv',
  agentEvent: 'agev',
  approvalRequest: 'apr',
  agentStep: 'agst',
  delivery: 'dlv',
  /** the local payment provider's events: Stripe's prefix, as its webhooks carry them */
  paymentEvent: 'evt',
  /** domain events (src/events/, API.md 8.11); the prefix webhooks carry */
  event: 'evt',
  localPayment: 'pay',
  localSubscription: 'lsub',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

// The same cryptographic randomness ulid would draw, taken from a pool: ulid's default asks the
// system for one byte per character (16 calls per id), which showed in profiles of write-heavy
// routes such as an audited :access. A byte / 256 picks one of 32 characters uniformly.
const pool = Buffer.alloc(4096);
let poolAt = pool.length;
function pooledRandom(): number {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  return pool[poolAt++]! / 256;
}

const nextUlid = monotonicFactory(pooledRandom);

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${nextUlid().toLowerCase()}`;
}

const ULID_BODY = /^[0-9a-hjkmnp-tv-z]{26}$/;

/**
 * The id of a resource that exists exactly once per another for that one's whole life (a
 * workspace's subscription): the other's time-sortable body under its own prefix, so it is stable
 * before any row of its own is written.
 */
export function derivedId(kind: IdKind, fromId: string): string {
  return `${ID_PREFIXES[kind]}_${fromId.slice(fromId.indexOf('_') + 1)}`;
}

/** True when `value` is a well-formed id of this kind; anything else is treated as not found. */
export function isId(kind: IdKind, value: string): boolean {
  const prefix = ID_PREFIXES[kind] + '_';
  return value.startsWith(prefix) && ULID_BODY.test(value.slice(prefix.length));
}
