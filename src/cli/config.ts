// The client's configuration: `$XDG_CONFIG_HOME/svc/config.json` (else `~/.config/svc/config.json`),
// directory 0700 and file 0600 because it holds tokens, written atomically (temporary file in the
// same directory, then rename) so a crash never leaves half a file. One entry per server URL, like
// gh's hosts file, so logging in to a second server does not forget the first.
// SVC_API_URL, SVC_TOKEN and SVC_CONTEXT override what the file says.
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

export const DEFAULT_API_URL = 'http://127.0.0.1:8080';

export type TokenKind = 'session' | 'api_token' | 'jwt';

export interface HostEntry {
  token?: string;
  token_kind?: TokenKind;
  /** the signed-in user's e-mail, for `auth status` (sessions only) */
  user?: string;
  /** the default svc-context (`svc workspaces use`) */
  context?: string;
}

export interface ConfigFile {
  /** the server used when SVC_API_URL is not set: the last one logged in to */
  api_url?: string;
  hosts?: Record<string, HostEntry>;
}

/** What a command runs with, after the environment overrides. */
export interface Settings {
  apiUrl: string;
  token: string | null;
  tokenKind: TokenKind | null;
  /** where the token comes from, for messages */
  tokenSource: 'env' | 'config' | null;
  context: string | null;
  user: string | null;
  configPath: string;
}

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(env.HOME ?? homedir(), '.config');
  return join(base, 'svc');
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(configDir(env), 'config.json');
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): ConfigFile {
  let text: string;
  try {
    text = readFileSync(configPath(env), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as ConfigFile) : {};
  } catch {
    throw new Error(`${configPath(env)} is not valid JSON; fix or delete it`);
  }
}

export function writeConfig(config: ConfigFile, env: NodeJS.ProcessEnv = process.env): void {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const tmp = join(dir, `.config.json.${randomBytes(6).toString('hex')}.tmp`);
  writeFileSync(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, configPath(env));
}

/** Token kinds told apart by their form (API.md section 4). */
export function tokenKindOf(token: string): TokenKind | null {
  if (/^sk_svc_[A-Za-z0-9]{46}$/.test(token)) return 'api_token';
  if (/^[A-Za-z0-9]{32}$/.test(token)) return 'session';
  if (/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token)) return 'jwt';
  return null;
}

export function normalizeUrl(url: string): string {
  return url.replace(/\/+$/, '');
}

export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const file = readConfig(env);
  const apiUrl = normalizeUrl(env.SVC_API_URL || file.api_url || DEFAULT_API_URL);
  const host = file.hosts?.[apiUrl] ?? {};
  const envToken = env.SVC_TOKEN?.trim() || null;
  const token = envToken ?? host.token ?? null;
  return {
    apiUrl,
    token,
    tokenKind: token ? (envToken ? tokenKindOf(token) : (host.token_kind ?? tokenKindOf(token))) : null,
    tokenSource: envToken ? 'env' : token ? 'config' : null,
    context: env.SVC_CONTEXT?.trim() || host.context || null,
    user: envToken ? null : (host.user ?? null),
    configPath: configPath(env),
  };
}

/** Changes the entry of one server (created if absent) and writes the file. */
export function updateHost(apiUrl: string, change: (entry: HostEntry) => HostEntry | null, opts: { makeDefault?: boolean } = {}, env: NodeJS.ProcessEnv = process.env): void {
  const file = readConfig(env);
  const hosts = { ...file.hosts };
  const next = change({ ...hosts[apiUrl] });
  if (next === null) delete hosts[apiUrl];
  else hosts[apiUrl] = next;
  writeConfig({ ...file, ...(opts.makeDefault ? { api_url: apiUrl } : {}), hosts }, env);
}
