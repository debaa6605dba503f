// The only reader of process.env. Every setting is typed, validated and documented here;
// docs/configuration.md lists the same settings for operators (test/settings-table.test.ts holds them equal).
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { preparePrivateDir } from './platform/data-dir.js';
import type { PasswordHashCost } from './platform/crypto.js';
import { BUILT_IN_PLANS, parsePlans, PlanCatalog, PlansFileError } from './modules/plans/plans.js';
import { COMPUTE_PROVIDERS } from './drivers/compute/driver.js';
import { HCLOUD_DEFAULT_ENDPOINT, type HcloudOptions } from './drivers/compute/hcloud.js';
import { parseAgents, type AgentsConfig } from './config-agents.js';
import { parseCommerce, type CommerceConfig } from './config-commerce.js';
import { parsePeople, type PeopleConfig } from './config-people.js';
import { parseObservability, type ObservabilityConfig } from './config-observability.js';

export interface TrustedIssuer {
  /** exact `iss` value of accepted tokens */
  issuer: string;
  /** where the issuer publishes its JSON Web Key Set */
  jwksUrl: string;
  /** required `aud` value */
  audience: string;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** postgres://... selects PostgreSQL; unset means embedded SQLite at `${dataDir}/svc.db` */
  databaseUrl: string | null;
  /** public base URL (no trailing slash) used in html_url, verification_uri, JWT iss */
  publicUrl: string;
  logLevel: string;
  /** 32-byte master key; sub-keys for cursors, encryption and signing keys are derived from it */
  secretKey: Buffer;
  /** true when the key was generated into the data dir rather than given */
  secretKeyGenerated: boolean;
  /** modes of the data dir and its files that were too open and got tightened when the key was read (logged at start) */
  dataDirNotes: string[];
  /** earlier master keys (SVC_PREVIOUS_SECRET_KEYS): they still open what was sealed under them, until rotate-keys */
  previousSecretKeys: Buffer[];
  /**
   * key ids of keys lost for good (SVC_LOST_KEY_IDS): values sealed under them do not stop `svc serve`
   * from starting (they answer 422 VALUE_UNREADABLE); any other key id the service lacks does
   */
  lostKeyIds: string[];
  /** how long a deleted secret stays restorable before it is purged (seconds) */
  secretRetentionSeconds: number;
  bootstrap: { email: string; password: string; token: string | null } | null;
  trustedIssuers: TrustedIssuer[];
  /** largest accepted request body, bytes */
  bodyLimit: number;
  /** HTTP server limits against slow or abundant clients (slowloris, connection floods) */
  http: {
    /** the whole request (headers and body) must arrive within this; then 408 and the socket closes */
    requestTimeoutMs: number;
    /** the request headers must arrive within this */
    headersTimeoutMs: number;
    /** an idle keep-alive connection is closed after this */
    keepAliveTimeoutMs: number;
    /** open connections per process; more are closed at once (0: no limit) */
    maxConnections: number;
    /** open connections from one client address; more are closed at once (0: no limit; raise it behind a proxy, whose connections share one address) */
    maxConnectionsPerAddress: number;
    /** a connection that sends no byte within this is closed (shorter than the headers timeout: idle sockets are cheap to open) */
    firstByteTimeoutMs: number;
  };
  /** what one caller may hold of what every caller shares (docs/configuration.md: "HTTP limits and fair use") */
  fairness: {
    /**
     * long-lived responses (agent event streams, operation and agent turn `:wait`) one principal
     * holds open at once in this process (SVC_LONG_REQUESTS_PER_PRINCIPAL); past it, 429. Never
     * more than an eighth of SVC_MAX_CONNECTIONS
     */
    longRequestsPerPrincipal: number;
    /** the same for all principals of one workspace together (SVC_LONG_REQUESTS_PER_WORKSPACE); never more than a quarter of SVC_MAX_CONNECTIONS */
    longRequestsPerWorkspace: number;
    /** signed-out `POST /v1/order_drafts:begin` per client address per 10 minutes (SVC_ORDER_BEGINS_PER_ADDRESS) */
    orderBeginsPerAddress: number;
    /** signed-out `POST /v1/order_drafts:begin` per offer per 10 minutes, from every address (SVC_ORDER_BEGINS_PER_OFFER) */
    orderBeginsPerOffer: number;
  };
  /** time allowed for in-flight requests on SIGTERM before the process exits anyway */
  shutdownGraceMs: number;
  /** what `svc serve` runs: the HTTP API, the job workers, or both (default) */
  role: ServeRole;
  jobs: {
    /** operations one process runs at once */
    concurrency: number;
    /** a claimed job's lease; renewed every third of it; a dead worker's job is taken over after it */
    leaseMs: number;
    /** idle workers look for due jobs this often (notifications wake them sooner) */
    pollMs: number;
    /** multiplies every retry backoff (tests and demos shorten it) */
    backoffScale: number;
  };
  render: {
    /** all rendered resources of one install render together, bytes as JSON */
    maxBytes: number;
    /** one rendered resource, bytes as JSON */
    maxResourceBytes: number;
  };
  /** the plan catalog: built in, or SVC_PLANS_FILE's */
  plans: PlanCatalog;
  quotas: {
    /**
     * false skips every quota check (SVC_QUOTAS_ENFORCED=false): only for benchmarks, which
     * measure what the checks cost; quotas are still reported
     */
    enforced: boolean;
  };
  /**
   * the test hooks (SVC_TEST_HOOKS=1): fault injection on local clusters (`local.faults` of
   * POST /v1/clusters) and the local model's bracketed triggers ([slow], [loop], [sleep-tool],
   * [fail]). Off by default: then a fault body is 400 and the brackets are plain text, so no
   * tenant can slow or fail the service's shared workers on purpose. For tests and demos only.
   */
  testHooks: boolean;
  /**
   * the cost of new password hashes: `standard` (scrypt N=2^15), or `fast` (N=2^10) with the test
   * hook SVC_TEST_PASSWORD_HASH=fast, refused unless SVC_TEST_HOOKS=1: the test suite's thousands of
   * users would otherwise spend minutes of CPU hashing. Never in production.
   */
  passwordHashCost: PasswordHashCost;
  /** how often workers apply due subscription changes, notify of expiring tokens and purge old notifications */
  accountSweepMs: number;
  /**
   * who may create an account with POST /v1/users (SVC_SIGNUP): `closed` (the default) and `invite`
   * (the same, said explicitly): accounts come from invitations, from the operator (`svc admin
   * create-user`) and from offers' links (a customer signs up through an offer they were given);
   * `open`: anyone may.
   */
  signup: SignupMode;
  /**
   * who raises a workspace's plan (SVC_BILLING): `operator` (the default): the operator, with
   * `svc admin workspaces set-plan`; `payments`: the workspace's owners and admins, by paying the
   * plan's price through the payment provider (SVC_PAYMENT_PROVIDER: a plan checkout; the plan
   * changes when the provider confirms the payment). Either way a workspace's admins may lower it,
   * cancel and reactivate (that costs nobody anything).
   */
  billing: BillingMode;
  /**
   * /metrics (SVC_METRICS_TOKEN, SVC_METRICS_ADDRESS): off the public port unless a token is set
   * (then it answers a bearer of that token); with an address, served there without a credential
   * (a listen address that only the scraper reaches).
   */
  metrics: { token: string | null; address: { host: string; port: number } | null };
  /** machines and their agents (API.md 8.5) */
  machines: {
    /** agents heartbeat this often (SVC_MACHINE_HEARTBEAT_S); 3 missed make a machine UNREACHABLE */
    heartbeatSeconds: number;
    /** the executable a worker bootstrap's command and cloud-init start (SVC_MACHINE_AGENT_COMMAND) */
    agentCommand: string;
    /** how long machine.create waits for a provisioned server's agent to join (SVC_MACHINE_JOIN_TIMEOUT_S) */
    joinTimeoutSeconds: number;
  };
  /** the sandbox pool that runs snippets (src/sandbox) and how it shares itself between workspaces */
  sandbox: {
    /** worker threads, each running one snippet at a time */
    workers: number;
    /** runs of one workspace executing at once; the rest of its runs wait */
    perWorkspaceConcurrency: number;
    /** runs of one workspace waiting for a worker; past it, 429 */
    perWorkspaceQueue: number;
    /** runs waiting, all workspaces together; past it, 429 */
    maxQueue: number;
    /** a run waiting longer than this for a worker is refused with 429 */
    queueTimeoutMs: number;
    /**
     * start the workers when svc serve starts (SVC_SANDBOX_PREWARM=true) rather than at the first
     * run: each holds a V8 isolate and a WebAssembly heap (~35 MB), which an instance whose
     * tenants run no snippets should not pay
     */
    prewarm: boolean;
  };
  preview: {
    /** the preview router's listen port (on HOST); also the port its URLs carry when it is not 80 */
    port: number;
    /** hostnames of install URLs and preview hostnames are `<label>.<domain>` */
    domain: string;
    /** a pinned hostname is evicted once its render has been replaced for this long (seconds) */
    pinnedRetentionSeconds: number;
    /** the router's proxy to workloads on kubernetes clusters (issue 36) */
    proxy: PreviewProxyConfig;
  };
  /**
   * the web app's build (index.html and assets/, written by `npm run build`), served at `/`; when
   * it holds no index.html, app paths answer a page saying to build it. The app expects the
   * service at the root of SVC_PUBLIC_URL: a path prefix is not supported by the app yet
   */
  webDir: string;
  /**
   * where provisioned machines' servers come from (POST /v1/machines): `local` (an agent inside
   * the service process) or `hcloud` (Hetzner Cloud, `createHcloudProvider(compute.hcloud)`)
   */
  compute: { provider: 'local'; hcloud: null } | { provider: 'hcloud'; hcloud: HcloudOptions };
  /** agents and their model providers (API.md 8.6; parsed in config-agents.ts) */
  agents: AgentsConfig;
  /** payment providers, checkout sessions and order drafts (API.md 8.7; parsed in config-commerce.ts) */
  commerce: CommerceConfig;
  /** e-mail and the instance's admins (issue 34; parsed in config-people.ts) */
  people: PeopleConfig;
  /** single sign-on with an OpenID provider (SVC_OIDC_*), or null when SVC_OIDC_ISSUER is unset */
  oidc: OidcConfig | null;
  /** the log format (SVC_LOG_FORMAT) and tracing with OpenTelemetry (OTEL_*; parsed in config-observability.ts) */
  observability: ObservabilityConfig;
}

/**
 * Sign-in with an OpenID Connect provider (issue 34). The provider's metadata is discovered at the
 * first sign-in, not at start. The client secret is a non-enumerable property: a config that ends
 * up in a log line or JSON.stringify shows no secret, while `oidc.clientSecret` still reads it.
 */
export interface OidcConfig {
  /** the issuer identifier (SVC_OIDC_ISSUER): https, or http on a loopback address for trying it out */
  issuer: string;
  /** this service's client id at the provider (SVC_OIDC_CLIENT_ID) */
  clientId: string;
  /** its client secret (SVC_OIDC_CLIENT_SECRET), sent to the token endpoint only */
  clientSecret: string;
  /** the button's label: "Sign in with {name}" (SVC_OIDC_NAME) */
  name: string;
  /**
   * SVC_OIDC_CREATE_USERS: false (the default), only people who have an account here (by verified
   * e-mail) sign in; true, a person the provider vouches for gets an account at first sign-in
   */
  createUsers: boolean;
  /** where the provider sends the browser back: `{SVC_PUBLIC_URL}/v1/auth/oidc/callback` (registered at the provider) */
  redirectUri: string;
}

export const SIGNUP_MODES = ['closed', 'invite', 'open'] as const;
export type SignupMode = (typeof SIGNUP_MODES)[number];
export const BILLING_MODES = ['operator', 'payments'] as const;
export type BillingMode = (typeof BILLING_MODES)[number];

/** One of `allowed`, or the first (the default) when unset. */
function oneOf<T extends string>(name: string, value: string | undefined, allowed: readonly T[]): T {
  if (value === undefined || value === '') return allowed[0]!;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${value}"`);
}

/** SVC_METRICS_TOKEN: at least 16 characters when set (a bearer token a scraper keeps). */
function metricsToken(value: string | undefined): string | null {
  if (value === undefined || value === '') return null;
  if (value.length < 16 || /\s/.test(value)) throw new ConfigError('SVC_METRICS_TOKEN must be at least 16 characters, without spaces');
  return value;
}

/** SVC_METRICS_ADDRESS: `host:port` (or `:port`, meaning 127.0.0.1) where /metrics is served alone. */
function metricsAddress(value: string | undefined): { host: string; port: number } | null {
  if (value === undefined || value === '') return null;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]*)):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 1 && port <= 65535)) throw new ConfigError(`SVC_METRICS_ADDRESS must be host:port (say 127.0.0.1:9464), got "${value}"`);
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port };
}

export const SERVE_ROLES = ['all', 'api', 'worker'] as const;
export type ServeRole = (typeof SERVE_ROLES)[number];

export class ConfigError extends Error {}

/** Limits of the preview router's proxy: every wait on an upstream ends, and a request body is bounded. */
export interface PreviewProxyConfig {
  /** the connection to the upstream (gateway or API server) must be made within this */
  connectTimeoutMs: number;
  /** the upstream's response head must arrive within this after the request was sent */
  responseTimeoutMs: number;
  /** a proxied exchange (body or WebSocket) with nothing flowing either way for this long is closed */
  idleTimeoutMs: number;
  /** request bodies larger than this are refused (413) */
  bodyLimitBytes: number;
  /** proxied requests and WebSockets open at once per install; more are 503 */
  streamsPerInstall: number;
  /** a cluster's gateway_url may lead to loopback, private and link-local addresses (closed by default: see platform/addresses.ts) */
  allowPrivateGateways: boolean;
}

/** A DNS name of labels of [a-z0-9-] (a wildcard DNS record `*.<domain>` points at the router). */
const DOMAIN = /^(?=.{1,190}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

function parsePreviewDomain(raw: string | undefined): string {
  const domain = (raw || 'preview.localhost').toLowerCase().replace(/\.$/, '');
  if (!DOMAIN.test(domain)) throw new ConfigError(`SVC_PREVIEW_DOMAIN must be a DNS name of at most 190 characters, got "${raw}"`);
  return domain;
}

const LOG_LEVELS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** A numeric setting within [min, max]; `integer: false` accepts fractions (scales). */
/** The agent's executable as it appears in a shell line: a path or a command, without shell syntax. */
function agentCommandSetting(raw: string | undefined): string {
  const value = raw?.trim() || 'svc';
  if (!/^[A-Za-z0-9_./@:+ -]{1,200}$/.test(value)) {
    throw new ConfigError(`SVC_MACHINE_AGENT_COMMAND must be a command such as "svc" or "/usr/local/bin/svc" (letters, digits, spaces and _./@:+-), got "${value}"`);
  }
  return value;
}

function numberSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number, integer = true): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!(integer ? Number.isInteger(value) : Number.isFinite(value)) || value < min || value > max) {
    throw new ConfigError(`${name} must be ${integer ? 'an integer' : 'a number'} between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

export function parseRole(raw: string | undefined): ServeRole {
  if (raw === undefined || raw === '') return 'all';
  if (!(SERVE_ROLES as readonly string[]).includes(raw)) throw new ConfigError(`role must be one of ${SERVE_ROLES.join(', ')}, got "${raw}"`);
  return raw as ServeRole;
}

function parseSecretKey(raw: string, name = 'SVC_SECRET_KEY'): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError(`${name} must be 32 bytes, as 64 hex characters or base64`);
  return key;
}

/** SVC_PREVIOUS_SECRET_KEYS: comma-separated keys in SVC_SECRET_KEY's form; the current key itself is left out. */
function parsePreviousKeys(raw: string | undefined, current: Buffer): Buffer[] {
  const keys = (raw ?? '').split(',').map((k) => k.trim()).filter(Boolean).map((k, i) => parseSecretKey(k, `SVC_PREVIOUS_SECRET_KEYS[${i}]`));
  return keys.filter((k, i) => !k.equals(current) && keys.findIndex((other) => other.equals(k)) === i);
}

/** SVC_LOST_KEY_IDS: comma-separated key ids (16 hex characters each, as the service prints them). */
function parseLostKeyIds(raw: string | undefined): string[] {
  const ids = (raw ?? '').split(',').map((k) => k.trim()).filter(Boolean);
  for (const id of ids) if (!/^[0-9a-f]{16}$/.test(id)) throw new ConfigError(`SVC_LOST_KEY_IDS must list key ids of 16 hex characters, got "${id}"`);
  return ids;
}

/** Where the key lives when SVC_SECRET_KEY is not set. */
export const keyFilePath = (dataDir: string) => join(dataDir, 'secret.key');

/** The key in `${dataDir}/secret.key`, or null when there is no such file. */
export function readKeyFile(dataDir: string): Buffer | null {
  const file = keyFilePath(dataDir);
  if (!existsSync(file)) return null;
  return parseSecretKey(readFileSync(file, 'utf8').trim(), file);
}

/**
 * Replaces `${dataDir}/secret.key` with `key`, atomically: a reader sees the old file or the new
 * one, never a part. The new file is owner only (0600) from its creation and on disk before the
 * rename (`svc admin rotate-keys`, once nothing is sealed under the old key any more).
 */
export function replaceKeyFile(dataDir: string, key: Buffer): void {
  const file = keyFilePath(dataDir);
  const temporary = `${file}.${process.pid}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, key.toString('hex') + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temporary, file);
  } catch (err) {
    rmSync(temporary, { force: true });
    throw err;
  }
}

/**
 * Reads the key from SVC_SECRET_KEY, else from (or into) `${dataDir}/secret.key`, in a data dir
 * made owner only (`notes`: modes found too open and tightened, for the server to log).
 */
function loadSecretKey(env: NodeJS.ProcessEnv, dataDir: string): { key: Buffer; generated: boolean; notes: string[] } {
  const raw = env.SVC_SECRET_KEY;
  if (raw) return { key: parseSecretKey(raw.trim()), generated: false, notes: [] };
  const notes = preparePrivateDir(dataDir);
  const existing = readKeyFile(dataDir);
  if (existing) return { key: existing, generated: true, notes };
  const key = randomBytes(32);
  // 'wx' fails if another process created it first; then read theirs so both agree.
  try {
    writeFileSync(keyFilePath(dataDir), key.toString('hex') + '\n', { flag: 'wx', mode: 0o600 });
    return { key, generated: true, notes };
  } catch {
    return { key: readKeyFile(dataDir)!, generated: true, notes };
  }
}

function parseTrustedIssuers(raw: string | undefined): TrustedIssuer[] {
  if (!raw) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('SVC_TRUSTED_ISSUERS must be a JSON array of {issuer, jwks_url, audience}');
  }
  if (!Array.isArray(parsed)) throw new ConfigError('SVC_TRUSTED_ISSUERS must be a JSON array');
  return parsed.map((item: unknown, i) => {
    const o = item as Record<string, unknown>;
    if (typeof o?.issuer !== 'string' || typeof o.jwks_url !== 'string' || typeof o.audience !== 'string') {
      throw new ConfigError(`SVC_TRUSTED_ISSUERS[${i}] needs string issuer, jwks_url and audience`);
    }
    return { issuer: o.issuer, jwksUrl: o.jwks_url, audience: o.audience };
  });
}

/** The operator's plans file, or the built-in catalog when SVC_PLANS_FILE is unset. */
function loadPlans(file: string | undefined): PlanCatalog {
  if (!file) return new PlanCatalog(BUILT_IN_PLANS);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`SVC_PLANS_FILE cannot be read: ${(err as Error).message}`);
  }
  try {
    return parsePlans(text);
  } catch (err) {
    if (err instanceof PlansFileError) throw new ConfigError(`SVC_PLANS_FILE ${file} ${err.message}`);
    throw err;
  }
}

function booleanSetting(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw !== 'true' && raw !== 'false') throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  return raw === 'true';
}

/** SVC_TEST_HOOKS: `1` (or `true`) turns the test hooks on; unset, empty, `0` or `false` leaves them off. */
function parsePasswordHashCost(raw: string | undefined, testHooks: boolean): PasswordHashCost {
  if (raw === undefined || raw === '' || raw === 'standard') return 'standard';
  if (raw !== 'fast') throw new ConfigError(`SVC_TEST_PASSWORD_HASH must be fast or standard, got "${raw}"`);
  if (!testHooks) throw new ConfigError('SVC_TEST_PASSWORD_HASH=fast weakens password hashes for tests: it needs SVC_TEST_HOOKS=1, and neither belongs in production');
  return 'fast';
}

function parseTestHooks(raw: string | undefined): boolean {
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new ConfigError(`SVC_TEST_HOOKS must be 1 or 0, got "${raw}"`);
}

/**
 * SVC_COMPUTE_PROVIDER and, for hcloud, its SVC_HCLOUD_* settings. The token is a non-enumerable
 * property: a config (or its compute part) that ends up in a log line or JSON.stringify shows no
 * token, while `compute.hcloud.token` still reads it. No message here ever quotes the token.
 */
function parseCompute(env: NodeJS.ProcessEnv): Config['compute'] {
  const provider = env.SVC_COMPUTE_PROVIDER || 'local';
  if (!(COMPUTE_PROVIDERS as readonly string[]).includes(provider)) {
    throw new ConfigError(`SVC_COMPUTE_PROVIDER must be one of ${COMPUTE_PROVIDERS.join(', ')}, got "${provider}"`);
  }
  if (provider === 'local') return { provider: 'local', hcloud: null };
  const token = (env.SVC_HCLOUD_TOKEN ?? '').trim();
  if (!token) {
    throw new ConfigError('SVC_COMPUTE_PROVIDER=hcloud needs SVC_HCLOUD_TOKEN: a Hetzner Cloud API token with Read & Write permission (Cloud Console: the project > Security > API tokens)');
  }
  if (!/^[\x21-\x7e]+$/.test(token)) throw new ConfigError('SVC_HCLOUD_TOKEN must be printable ASCII without spaces (its value is not shown)');
  const endpoint = (env.SVC_HCLOUD_ENDPOINT || HCLOUD_DEFAULT_ENDPOINT).replace(/\/+$/, '');
  const url = URL.canParse(endpoint) ? new URL(endpoint) : null;
  if (!url || !/^https?:$/.test(url.protocol) || url.username || url.password || url.search || url.hash) {
    throw new ConfigError(`SVC_HCLOUD_ENDPOINT must be an http(s) URL without credentials or query, got "${endpoint}"`);
  }
  const location = env.SVC_HCLOUD_LOCATION || 'fsn1';
  if (!/^[a-z0-9-]{1,32}$/.test(location)) throw new ConfigError(`SVC_HCLOUD_LOCATION must be a Hetzner location name such as fsn1, nbg1 or hel1, got "${location}"`);
  const image = env.SVC_HCLOUD_IMAGE || 'debian-12';
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(image)) throw new ConfigError(`SVC_HCLOUD_IMAGE must be an image name or id such as debian-12, got "${image}"`);
  const sshKeys = (env.SVC_HCLOUD_SSH_KEYS ?? '').split(',').map((k) => k.trim()).filter(Boolean);
  for (const key of sshKeys) {
    if (!/^[\x20-\x7e]{1,128}$/.test(key)) throw new ConfigError(`SVC_HCLOUD_SSH_KEYS must list SSH key names or ids of the project, comma-separated, got "${key.slice(0, 130)}"`);
  }
  const hcloud: HcloudOptions = { token, endpoint, location, image, sshKeys };
  Object.defineProperty(hcloud, 'token', { enumerable: false });
  return { provider: 'hcloud', hcloud };
}

const OIDC_VARIABLES = ['SVC_OIDC_ISSUER', 'SVC_OIDC_CLIENT_ID', 'SVC_OIDC_CLIENT_SECRET', 'SVC_OIDC_NAME', 'SVC_OIDC_CREATE_USERS'] as const;

/** SVC_OIDC_*: all of issuer, client id and secret, or none of the variables. No message quotes the secret. */
function parseOidc(env: NodeJS.ProcessEnv, publicUrl: string): OidcConfig | null {
  const issuer = (env.SVC_OIDC_ISSUER ?? '').trim();
  if (!issuer) {
    const stray = OIDC_VARIABLES.filter((name) => env[name]);
    if (stray.length) throw new ConfigError(`${stray.join(', ')} ${stray.length === 1 ? 'is' : 'are'} set but SVC_OIDC_ISSUER is not: set the provider's issuer URL too, or unset them`);
    return null;
  }
  const url = URL.canParse(issuer) ? new URL(issuer) : null;
  const loopback = url !== null && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (!url || !(url.protocol === 'https:' || (url.protocol === 'http:' && loopback)) || url.username || url.password || url.search || url.hash) {
    throw new ConfigError(`SVC_OIDC_ISSUER must be the provider's issuer URL, https (http only on 127.0.0.1 or localhost), without credentials, query or fragment (say https://accounts.example.com), got "${issuer}"`);
  }
  const clientId = (env.SVC_OIDC_CLIENT_ID ?? '').trim();
  const clientSecret = (env.SVC_OIDC_CLIENT_SECRET ?? '').trim();
  if (!clientId || !clientSecret) {
    throw new ConfigError('SVC_OIDC_ISSUER needs SVC_OIDC_CLIENT_ID and SVC_OIDC_CLIENT_SECRET: register this service as a confidential client (authorization code flow) at the provider, with the redirect URI ' +
      `${publicUrl}/v1/auth/oidc/callback`);
  }
  if (!/^[\x21-\x7e]{1,255}$/.test(clientId)) throw new ConfigError(`SVC_OIDC_CLIENT_ID must be 1-255 printable ASCII characters without spaces, got "${clientId.slice(0, 260)}"`);
  if (!/^[\x21-\x7e]{1,512}$/.test(clientSecret)) throw new ConfigError('SVC_OIDC_CLIENT_SECRET must be 1-512 printable ASCII characters without spaces (its value is not shown)');
  const name = (env.SVC_OIDC_NAME ?? '').trim() || 'single sign-on';
  if (name.length > 40 || /[\p{Cc}<>]/u.test(name)) throw new ConfigError(`SVC_OIDC_NAME must be at most 40 characters of text (the button says "Sign in with {name}"), got "${name.slice(0, 60)}"`);
  const oidc: OidcConfig = {
    issuer, clientId, clientSecret, name,
    createUsers: booleanSetting(env, 'SVC_OIDC_CREATE_USERS', false),
    redirectUri: `${publicUrl}/v1/auth/oidc/callback`,
  };
  Object.defineProperty(oidc, 'clientSecret', { enumerable: false });
  return oidc;
}

/** `<package root>/dist/app`: this file sits one level below the package root in src/ and in dist/ alike. */
const DEFAULT_WEB_DIR = fileURLToPath(new URL('../dist/app', import.meta.url));

/** Where a restore writes, and the keys it may compare the archive's key ids with. */
export interface StorageConfig {
  dataDir: string;
  databaseUrl: string | null;
  /** SVC_SECRET_KEY, else the key file of the data dir, else null: never generated (a restore must not make a key) */
  secretKey: Buffer | null;
  previousSecretKeys: Buffer[];
}

/**
 * The storage settings alone (SVC_DATA_DIR, DATABASE_URL and the keys), validated as loadConfig
 * does, for `svc admin restore`: unlike loadConfig it creates nothing, neither the data dir nor a
 * key file, since the target is to receive what the archive holds, and a key generated there would
 * open none of the restored values.
 */
export function loadStorageConfig(env: NodeJS.ProcessEnv = process.env): StorageConfig {
  const dataDir = resolve(env.SVC_DATA_DIR || './data');
  const databaseUrl = env.DATABASE_URL || null;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://');
  }
  const secretKey = env.SVC_SECRET_KEY ? parseSecretKey(env.SVC_SECRET_KEY.trim()) : readKeyFile(dataDir);
  return { dataDir, databaseUrl, secretKey, previousSecretKeys: secretKey ? parsePreviousKeys(env.SVC_PREVIOUS_SECRET_KEYS, secretKey) : [] };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = numberSetting(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const dataDir = resolve(env.SVC_DATA_DIR || './data');
  const databaseUrl = env.DATABASE_URL || null;
  const testHooks = parseTestHooks(env.SVC_TEST_HOOKS);
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://');
  }
  const publicUrl = (env.SVC_PUBLIC_URL || `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`).replace(/\/+$/, '');
  try {
    new URL(publicUrl);
  } catch {
    throw new ConfigError(`SVC_PUBLIC_URL is not a URL: "${publicUrl}"`);
  }
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.has(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${[...LOG_LEVELS].join(', ')}`);
  const { key, generated, notes: dataDirNotes } = loadSecretKey(env, dataDir);

  let bootstrap: Config['bootstrap'] = null;
  if (env.SVC_BOOTSTRAP_EMAIL || env.SVC_BOOTSTRAP_PASSWORD) {
    if (!env.SVC_BOOTSTRAP_EMAIL || !env.SVC_BOOTSTRAP_PASSWORD) {
      throw new ConfigError('SVC_BOOTSTRAP_EMAIL and SVC_BOOTSTRAP_PASSWORD go together');
    }
    const token = env.SVC_BOOTSTRAP_TOKEN || null;
    if (token !== null && !/^[A-Za-z0-9]{32}$/.test(token)) {
      throw new ConfigError('SVC_BOOTSTRAP_TOKEN must be exactly 32 characters of [A-Za-z0-9]');
    }
    bootstrap = { email: env.SVC_BOOTSTRAP_EMAIL, password: env.SVC_BOOTSTRAP_PASSWORD, token };
  } else if (env.SVC_BOOTSTRAP_TOKEN) {
    throw new ConfigError('SVC_BOOTSTRAP_TOKEN needs SVC_BOOTSTRAP_EMAIL and SVC_BOOTSTRAP_PASSWORD');
  }

  const sandboxWorkers = numberSetting(env, 'SVC_SANDBOX_WORKERS', availableParallelism(), 1, 256);
  return {
    port,
    host,
    dataDir,
    databaseUrl,
    publicUrl,
    logLevel,
    secretKey: key,
    secretKeyGenerated: generated,
    dataDirNotes,
    previousSecretKeys: parsePreviousKeys(env.SVC_PREVIOUS_SECRET_KEYS, key),
    lostKeyIds: parseLostKeyIds(env.SVC_LOST_KEY_IDS),
    secretRetentionSeconds: numberSetting(env, 'SVC_SECRET_RETENTION', 7 * 24 * 3600, 0, 365 * 24 * 3600),
    bootstrap,
    trustedIssuers: parseTrustedIssuers(env.SVC_TRUSTED_ISSUERS),
    bodyLimit: numberSetting(env, 'SVC_BODY_LIMIT', 1024 * 1024, 1024, 64 * 1024 * 1024),
    http: {
      requestTimeoutMs: numberSetting(env, 'SVC_REQUEST_TIMEOUT_MS', 30_000, 1000, 600_000),
      headersTimeoutMs: numberSetting(env, 'SVC_HEADERS_TIMEOUT_MS', 10_000, 1000, 600_000),
      keepAliveTimeoutMs: numberSetting(env, 'SVC_KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
      maxConnections: numberSetting(env, 'SVC_MAX_CONNECTIONS', 1024, 0, 1_000_000),
      maxConnectionsPerAddress: numberSetting(env, 'SVC_MAX_CONNECTIONS_PER_ADDRESS', 256, 0, 1_000_000),
      firstByteTimeoutMs: numberSetting(env, 'SVC_FIRST_BYTE_TIMEOUT_MS', 2_000, 100, 600_000),
    },
    fairness: {
      longRequestsPerPrincipal: numberSetting(env, 'SVC_LONG_REQUESTS_PER_PRINCIPAL', 16, 1, 100_000),
      longRequestsPerWorkspace: numberSetting(env, 'SVC_LONG_REQUESTS_PER_WORKSPACE', 64, 1, 1_000_000),
      orderBeginsPerAddress: numberSetting(env, 'SVC_ORDER_BEGINS_PER_ADDRESS', 30, 1, 1_000_000),
      orderBeginsPerOffer: numberSetting(env, 'SVC_ORDER_BEGINS_PER_OFFER', 300, 1, 1_000_000),
    },
    shutdownGraceMs: numberSetting(env, 'SVC_SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    role: parseRole(env.SVC_ROLE),
    jobs: {
      concurrency: numberSetting(env, 'SVC_WORKER_CONCURRENCY', 16, 1, 1000),
      leaseMs: numberSetting(env, 'SVC_JOB_LEASE_MS', 30_000, 300, 3_600_000),
      pollMs: numberSetting(env, 'SVC_JOB_POLL_MS', 1000, 10, 60_000),
      backoffScale: numberSetting(env, 'SVC_RETRY_BACKOFF_SCALE', 1, 0, 100, false),
    },
    render: {
      maxBytes: numberSetting(env, 'SVC_RENDER_MAX_BYTES', 4 * 1024 * 1024, 1024, 256 * 1024 * 1024),
      maxResourceBytes: numberSetting(env, 'SVC_RENDER_MAX_RESOURCE_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    },
    plans: loadPlans(env.SVC_PLANS_FILE),
    quotas: { enforced: booleanSetting(env, 'SVC_QUOTAS_ENFORCED', true) },
    testHooks,
    passwordHashCost: parsePasswordHashCost(env.SVC_TEST_PASSWORD_HASH, testHooks),
    accountSweepMs: numberSetting(env, 'SVC_ACCOUNT_SWEEP_MS', 60_000, 100, 3_600_000),
    signup: oneOf('SVC_SIGNUP', env.SVC_SIGNUP, SIGNUP_MODES),
    billing: oneOf('SVC_BILLING', env.SVC_BILLING, BILLING_MODES),
    metrics: { token: metricsToken(env.SVC_METRICS_TOKEN), address: metricsAddress(env.SVC_METRICS_ADDRESS) },
    machines: {
      heartbeatSeconds: numberSetting(env, 'SVC_MACHINE_HEARTBEAT_S', 15, 1, 3600),
      agentCommand: agentCommandSetting(env.SVC_MACHINE_AGENT_COMMAND),
      joinTimeoutSeconds: numberSetting(env, 'SVC_MACHINE_JOIN_TIMEOUT_S', 600, 5, 24 * 3600),
    },
    sandbox: {
      workers: sandboxWorkers,
      perWorkspaceConcurrency: numberSetting(env, 'SVC_SNIPPET_CONCURRENCY', Math.ceil(sandboxWorkers / 2), 1, 256),
      perWorkspaceQueue: numberSetting(env, 'SVC_SNIPPET_QUEUE', 16, 0, 10_000),
      maxQueue: numberSetting(env, 'SVC_SANDBOX_QUEUE', 128, 0, 100_000),
      queueTimeoutMs: numberSetting(env, 'SVC_SANDBOX_QUEUE_TIMEOUT_MS', 10_000, 100, 600_000),
      prewarm: booleanSetting(env, 'SVC_SANDBOX_PREWARM', false),
    },
    preview: {
      port: numberSetting(env, 'SVC_PREVIEW_PORT', 8081, 0, 65535),
      domain: parsePreviewDomain(env.SVC_PREVIEW_DOMAIN),
      pinnedRetentionSeconds: numberSetting(env, 'SVC_PREVIEW_PINNED_RETENTION', 7 * 24 * 3600, 0, 10 * 365 * 24 * 3600),
      proxy: {
        connectTimeoutMs: Math.round(numberSetting(env, 'SVC_PREVIEW_PROXY_CONNECT_TIMEOUT_S', 5, 0.05, 300, false) * 1000),
        responseTimeoutMs: Math.round(numberSetting(env, 'SVC_PREVIEW_PROXY_TIMEOUT_S', 60, 0.05, 3600, false) * 1000),
        idleTimeoutMs: Math.round(numberSetting(env, 'SVC_PREVIEW_PROXY_IDLE_TIMEOUT_S', 300, 0.05, 24 * 3600, false) * 1000),
        bodyLimitBytes: numberSetting(env, 'SVC_PREVIEW_PROXY_BODY_LIMIT_BYTES', 100 * 1024 * 1024, 0, 64 * 1024 * 1024 * 1024),
        streamsPerInstall: numberSetting(env, 'SVC_PREVIEW_PROXY_STREAMS_PER_INSTALL', 256, 1, 100_000),
        allowPrivateGateways: booleanSetting(env, 'SVC_PREVIEW_PROXY_ALLOW_PRIVATE', false),
      },
    },
    webDir: resolve(env.SVC_WEB_DIR || DEFAULT_WEB_DIR),
    compute: parseCompute(env),
    agents: parseAgents(env, (name, fallback, min, max) => numberSetting(env, name, fallback, min, max)),
    commerce: parseCommerce(env, (name, fallback, min, max) => numberSetting(env, name, fallback, min, max)),
    people: parsePeople(env),
    oidc: parseOidc(env, publicUrl),
    observability: parseObservability(env, (name, fallback, min, max) => numberSetting(env, name, fallback, min, max)),
  };
}
