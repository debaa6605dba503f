// Validation of a user-supplied kubeconfig, at cluster registration and again before every driver
// call. A kubeconfig is user input stored on our server, and the stock loaders act on some of its
// fields while parsing (`token-file` is read, `exec` runs a command, `auth-provider` plugins run):
// so only inline credentials are accepted, every field is checked against an allowlist here, and
// the driver builds its client from the validated result, never from the raw text.
// Error messages name fields and entries, never their values (which may be secrets).
import { X509Certificate, createPrivateKey } from 'node:crypto';
import yaml from 'js-yaml';
import { invalidArgument, type ApiError } from '../../platform/errors.js';
import { ClusterDriverError, type ClusterTarget } from './driver.js';

export const KUBECONFIG_MAX_BYTES = 256 * 1024;

export class KubeconfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeconfigError';
  }
}

export interface KubeconfigCluster {
  name: string;
  /** http or https URL of the API server, without a trailing slash */
  server: string;
  /** base64 PEM CA bundle */
  caData?: string;
  skipTlsVerify: boolean;
  tlsServerName?: string;
}

export interface KubeconfigUser {
  name: string;
  token?: string;
  username?: string;
  password?: string;
  /** base64 PEM */
  clientCertificateData?: string;
  /** base64 PEM */
  clientKeyData?: string;
}

/** The current context of a valid kubeconfig, resolved. */
export interface ParsedKubeconfig {
  context: string;
  namespace?: string;
  cluster: KubeconfigCluster;
  user: KubeconfigUser;
}

type Obj = Record<string, unknown>;

const MINIFY_HINT = 'export a self-contained kubeconfig with `kubectl config view --minify --flatten`';
const TOP_KEYS = new Set(['apiVersion', 'kind', 'preferences', 'clusters', 'users', 'contexts', 'current-context', 'extensions']);
const CLUSTER_KEYS = new Set(['server', 'certificate-authority-data', 'insecure-skip-tls-verify', 'tls-server-name', 'disable-compression', 'extensions']);
const USER_KEYS = new Set(['token', 'username', 'password', 'client-certificate-data', 'client-key-data', 'extensions']);
const CONTEXT_KEYS = new Set(['cluster', 'user', 'namespace', 'extensions']);
const IMPERSONATION_FIELDS = new Set(['as', 'as-uid', 'as-groups', 'as-user-extra']);
/** Fields that make the client read a file of our server. */
const FILE_FIELDS = new Set(['certificate-authority', 'client-certificate', 'client-key', 'token-file', 'tokenFile']);

function fail(message: string): never {
  throw new KubeconfigError(message);
}

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses the text as JSON or YAML (JSON first when it looks like JSON, for its exact error). */
function parseText(text: string): unknown {
  if (text.trimStart().startsWith('{')) {
    try {
      return JSON.parse(text);
    } catch {
      // YAML is a superset of JSON in practice; give the YAML parser the last word.
    }
  }
  try {
    // FAILSAFE_SCHEMA: every scalar stays the text written, as kubectl reads string fields (a
    // password `1e3` must not become the number 1000); the few booleans are read from that text.
    return yaml.load(text, { schema: yaml.FAILSAFE_SCHEMA });
  } catch (err) {
    // js-yaml's own message quotes the offending lines, which may hold a token: keep only the reason and position.
    if (err instanceof yaml.YAMLException) {
      const line = err.mark ? ` at line ${err.mark.line + 1}` : '';
      fail(`kubeconfig is neither valid YAML nor JSON: ${err.reason || 'syntax error'}${line}`);
    }
    fail('kubeconfig is neither valid YAML nor JSON');
  }
}

function checkKeys(obj: Obj, allowed: Set<string>, where: string, fileHint: boolean): void {
  for (const key of Object.keys(obj)) {
    if (allowed.has(key)) continue;
    if (key === 'exec') fail(`${where}.exec is not accepted: it would run a command on the service's server; use an inline token or client certificate (${MINIFY_HINT})`);
    if (key === 'auth-provider') fail(`${where}.auth-provider is not accepted: auth-provider plugins are not supported; use an inline token or client certificate`);
    if (FILE_FIELDS.has(key)) {
      const inline = key.startsWith('token') ? 'token' : `${key}-data`;
      fail(`${where}.${key} is not accepted: it names a file; give the content inline as ${inline}${fileHint ? ` (${MINIFY_HINT})` : ''}`);
    }
    if (key === 'proxy-url') fail(`${where}.proxy-url is not supported`);
    if (IMPERSONATION_FIELDS.has(key)) fail(`${where}.${key} is not supported: impersonation is not available`);
    fail(`${where}.${key} is not a supported kubeconfig field`);
  }
}

function optString(obj: Obj, key: string, where: string, max: number): string | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') fail(`${where}.${key} must be a string`);
  if (v.length > max) fail(`${where}.${key} is longer than ${max} characters`);
  return v;
}

function optBool(obj: Obj, key: string, where: string): boolean | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string' && /^(true|false)$/i.test(v)) return v.toLowerCase() === 'true';
  fail(`${where}.${key} must be true or false`);
}

/** Visible ASCII only: the value goes into an HTTP header, where a newline would inject another one. */
function headerSafe(value: string, where: string): string {
  if (value.length === 0 || !/^[\x21-\x7e]+$/.test(value)) fail(`${where} must be non-empty printable ASCII without spaces`);
  return value;
}

/** Decodes inline base64 PEM data, checking it is what its field says. */
function pemData(value: string, where: string, kind: 'certificate' | 'key'): Buffer {
  const compact = value.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) fail(`${where} must be base64-encoded PEM`);
  const pem = Buffer.from(compact, 'base64');
  try {
    if (kind === 'certificate') new X509Certificate(pem);
    else createPrivateKey(pem);
  } catch {
    fail(`${where} does not hold a PEM ${kind === 'certificate' ? 'certificate' : 'private key'}`);
  }
  return pem;
}

function serverUrl(value: string | undefined, where: string): string {
  if (!value) fail(`${where}.server is required`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail(`${where}.server is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') fail(`${where}.server must be an http or https URL`);
  if (url.username || url.password) fail(`${where}.server must not carry credentials`);
  if (url.search || url.hash) fail(`${where}.server must not have a query or fragment`);
  return value.replace(/\/+$/, '');
}

function readCluster(entry: Obj, where: string): KubeconfigCluster {
  const c = entry.cluster;
  if (!isObj(c)) fail(`${where}.cluster must be a mapping`);
  checkKeys(c, CLUSTER_KEYS, `${where}.cluster`, true);
  const server = serverUrl(optString(c, 'server', `${where}.cluster`, 2048), `${where}.cluster`);
  const caData = optString(c, 'certificate-authority-data', `${where}.cluster`, KUBECONFIG_MAX_BYTES);
  const skipTlsVerify = optBool(c, 'insecure-skip-tls-verify', `${where}.cluster`) ?? false;
  const tlsServerName = optString(c, 'tls-server-name', `${where}.cluster`, 253);
  optBool(c, 'disable-compression', `${where}.cluster`);
  if (caData !== undefined) pemData(caData, `${where}.cluster.certificate-authority-data`, 'certificate');
  if (caData !== undefined && skipTlsVerify) fail(`${where}.cluster: certificate-authority-data and insecure-skip-tls-verify exclude each other`);
  return { name: entry.name as string, server, skipTlsVerify, ...(caData ? { caData } : {}), ...(tlsServerName ? { tlsServerName } : {}) };
}

function readUser(entry: Obj, where: string): KubeconfigUser {
  const u = entry.user ?? {};
  if (!isObj(u)) fail(`${where}.user must be a mapping`);
  checkKeys(u, USER_KEYS, `${where}.user`, true);
  const w = `${where}.user`;
  const token = optString(u, 'token', w, 16_384);
  const username = optString(u, 'username', w, 1024);
  const password = optString(u, 'password', w, 1024);
  const cert = optString(u, 'client-certificate-data', w, KUBECONFIG_MAX_BYTES);
  const key = optString(u, 'client-key-data', w, KUBECONFIG_MAX_BYTES);
  if (token !== undefined) headerSafe(token, `${w}.token`);
  if ((username === undefined) !== (password === undefined)) fail(`${w}: username and password go together`);
  if (username !== undefined && (username.includes(':') || !/^[\x20-\x7e]+$/.test(username))) fail(`${w}.username must be printable ASCII without ':'`);
  if (password !== undefined && !/^[\x20-\x7e]*$/.test(password)) fail(`${w}.password must be printable ASCII`);
  if (token !== undefined && username !== undefined) fail(`${w}: set either token or username and password, not both`);
  if ((cert === undefined) !== (key === undefined)) fail(`${w}: client-certificate-data and client-key-data go together`);
  if (cert !== undefined && key !== undefined) {
    const x509 = new X509Certificate(pemData(cert, `${w}.client-certificate-data`, 'certificate'));
    const privateKey = createPrivateKey(pemData(key, `${w}.client-key-data`, 'key'));
    if (!x509.checkPrivateKey(privateKey)) fail(`${w}: client-key-data does not match client-certificate-data`);
  }
  return {
    name: entry.name as string,
    ...(token !== undefined ? { token } : {}),
    ...(username !== undefined ? { username, password } : {}),
    ...(cert !== undefined ? { clientCertificateData: cert, clientKeyData: key } : {}),
  };
}

/** Validates the named list (clusters, users, contexts) and returns its entries by name. */
function namedList(doc: Obj, key: string): Map<string, { entry: Obj; where: string }> {
  const list = doc[key] ?? [];
  if (!Array.isArray(list)) fail(`${key} must be a list`);
  const byName = new Map<string, { entry: Obj; where: string }>();
  list.forEach((entry: unknown, i) => {
    const where = `${key}[${i}]`;
    if (!isObj(entry)) fail(`${where} must be a mapping`);
    checkKeys(entry, new Set(['name', key.slice(0, -1)]), where, false);
    if (typeof entry.name !== 'string' || entry.name.length === 0 || entry.name.length > 253) fail(`${where}.name must be a string of 1-253 characters`);
    if (byName.has(entry.name)) fail(`${key} has two entries named ${JSON.stringify(entry.name)}`);
    byName.set(entry.name, { entry, where });
  });
  return byName;
}

/**
 * Validates a kubeconfig (YAML or JSON, at most 256 KiB) and returns its current context resolved.
 * Every cluster and user entry is checked, used or not, because the whole text is stored.
 * Throws KubeconfigError.
 */
export function parseKubeconfig(text: string): ParsedKubeconfig {
  if (typeof text !== 'string') fail('kubeconfig must be a string');
  if (Buffer.byteLength(text, 'utf8') > KUBECONFIG_MAX_BYTES) fail(`kubeconfig is larger than ${KUBECONFIG_MAX_BYTES / 1024} KiB`);
  if (text.trim() === '') fail('kubeconfig is empty');
  const doc = parseText(text);
  if (!isObj(doc)) fail('kubeconfig must be a mapping (a Config document)');
  checkKeys(doc, TOP_KEYS, 'kubeconfig', false);
  if (doc.kind !== undefined && doc.kind !== 'Config') fail('kubeconfig kind must be Config');
  if (doc.apiVersion !== undefined && doc.apiVersion !== 'v1') fail('kubeconfig apiVersion must be v1');

  const clusters = new Map<string, KubeconfigCluster>();
  for (const [name, { entry, where }] of namedList(doc, 'clusters')) clusters.set(name, readCluster(entry, where));
  const users = new Map<string, KubeconfigUser>();
  for (const [name, { entry, where }] of namedList(doc, 'users')) users.set(name, readUser(entry, where));
  const contexts = namedList(doc, 'contexts');
  for (const { entry, where } of contexts.values()) {
    if (!isObj(entry.context)) fail(`${where}.context must be a mapping`);
    checkKeys(entry.context, CONTEXT_KEYS, `${where}.context`, false);
  }

  const current = doc['current-context'];
  if (typeof current !== 'string' || current === '') fail('kubeconfig has no current-context');
  const ctx = contexts.get(current);
  if (!ctx) fail(`current-context ${JSON.stringify(current.slice(0, 253))} does not name an entry of contexts`);
  const c = ctx.entry.context as Obj;
  const clusterName = optString(c, 'cluster', `${ctx.where}.context`, 253);
  const userName = optString(c, 'user', `${ctx.where}.context`, 253);
  const namespace = optString(c, 'namespace', `${ctx.where}.context`, 63);
  if (!clusterName) fail(`${ctx.where}.context.cluster is required`);
  if (!userName) fail(`${ctx.where}.context.user is required`);
  const cluster = clusters.get(clusterName);
  if (!cluster) fail(`${ctx.where}.context.cluster does not name an entry of clusters`);
  const user = users.get(userName);
  if (!user) fail(`${ctx.where}.context.user does not name an entry of users`);
  return { context: current, cluster, user, ...(namespace ? { namespace } : {}) };
}

/** The 400 the clusters module answers for a bad kubeconfig. */
export function kubeconfigApiError(err: KubeconfigError, field = 'body.kubeconfig'): ApiError {
  return invalidArgument(`invalid kubeconfig: ${err.message}`, 'INVALID_KUBECONFIG', [{ field, description: err.message }]);
}

/** Registration-time check: throws the 400 ApiError when the text is not an acceptable kubeconfig. */
export function assertValidKubeconfig(text: string, field = 'body.kubeconfig'): ParsedKubeconfig {
  try {
    return parseKubeconfig(text);
  } catch (err) {
    if (err instanceof KubeconfigError) throw kubeconfigApiError(err, field);
    throw err;
  }
}

/** The target's kubeconfig parsed, for a driver call: missing or invalid is a ClusterDriverError no retry fixes. */
export function kubeconfigOf(target: ClusterTarget): ParsedKubeconfig {
  if (!target.kubeconfig) throw new ClusterDriverError('the cluster has no kubeconfig', false);
  try {
    return parseKubeconfig(target.kubeconfig);
  } catch (err) {
    if (err instanceof KubeconfigError) throw new ClusterDriverError(`invalid kubeconfig: ${err.message}`, false);
    throw err;
  }
}

/** The credential values of a kubeconfig's user, which must never appear in an error message. */
export function credentialSecrets(user: ParsedKubeconfig['user']): string[] {
  return [user.token, user.password, user.clientKeyData, user.clientCertificateData].filter((s): s is string => !!s && s.length >= 4);
}

/** A text from the cluster with every secret replaced, cut to 300 characters: what an error may say. */
export function redactSecrets(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join('[redacted]');
  return out.length > 300 ? `${out.slice(0, 300)}...` : out;
}

/**
 * How a plain node:http(s) request reaches the API server with the kubeconfig's credentials (for
 * what the client library does not stream: pod logs, the service proxy): its Authorization
 * header, if any, and its TLS options (CA, server name, client certificate).
 */
export function requestAccessOf(kc: ParsedKubeconfig): { authorization?: string; tls: { ca?: Buffer; servername?: string; cert?: Buffer; key?: Buffer; rejectUnauthorized: boolean } } {
  const { cluster, user } = kc;
  const authorization = user.token ? `Bearer ${user.token}`
    : user.username !== undefined ? `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}` : undefined;
  return {
    ...(authorization ? { authorization } : {}),
    tls: {
      rejectUnauthorized: !cluster.skipTlsVerify,
      ...(cluster.caData ? { ca: Buffer.from(cluster.caData, 'base64') } : {}),
      ...(cluster.tlsServerName ? { servername: cluster.tlsServerName } : {}),
      ...(user.clientCertificateData && user.clientKeyData
        ? { cert: Buffer.from(user.clientCertificateData, 'base64'), key: Buffer.from(user.clientKeyData, 'base64') }
        : {}),
    },
  };
}
