// Identity commands (API.md 8.4): `svc login` (RFC 8628 device grant), `svc login --with-token`,
// `svc logout`, `svc auth status`, `svc workspaces use`. The /oauth endpoints get form-encoded
// bodies, as RFC 6749 and RFC 8628 define them.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadSettings, tokenKindOf, updateHost, type Settings, type TokenKind } from './config.js';
import { CliError, EXIT, apiError, createApi, networkError, type Api } from './http.js';
import type { Output } from './output.js';

const CLIENT_ID = 'svc-cli';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

const form = (body: Record<string, string>) => new URLSearchParams(body).toString();
const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' };

/** Opens `url` with the platform's opener; false when there is no display or no opener. */
function openBrowser(url: string, env: NodeJS.ProcessEnv): boolean {
  const platform = process.platform;
  if (platform === 'linux' && !env.DISPLAY && !env.WAYLAND_DISPLAY) return false;
  const [cmd, args] = platform === 'darwin' ? ['open', [url]] : platform === 'win32' ? ['cmd', ['/c', 'start', '""', url]] : ['xdg-open', [url]];
  try {
    const child = spawn(cmd, args as string[], { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
    return true;
  } catch {
    return false;
  }
}

async function whoAmI(api: Api): Promise<string | null> {
  const { data } = await api.typed.GET('/v1/me', {});
  return data?.email ?? null;
}

function store(settings: Settings, token: string, kind: TokenKind, user: string | null): void {
  // A new credential may belong to other workspaces: the old default context is dropped.
  updateHost(settings.apiUrl, () => ({ token, token_kind: kind, ...(user ? { user } : {}) }), { makeDefault: true });
}

/** `svc login --with-token`: the token on stdin, checked against the server before it is stored. */
export async function loginWithToken(o: Output): Promise<number> {
  const token = readFileSync(0, 'utf8').trim();
  const kind = tokenKindOf(token);
  if (!kind) throw new CliError('the token on stdin is neither a session token (32 characters), an API token (sk_svc_...) nor a JWT', EXIT.USAGE);
  const settings = { ...loadSettings({ ...process.env, SVC_TOKEN: '' }), token, tokenKind: kind };
  const api = createApi(settings);
  let user: string | null = null;
  if (kind === 'api_token') {
    // An API token has no user: any workspace-scoped read proves it works.
    await api.call('GET', '/v1/operations', { query: { limit: 1 }, auth: 'workspace' });
  } else {
    const res = await api.call('GET', '/v1/me', { auth: 'user' });
    user = (res.body as { email?: string }).email ?? null;
  }
  store(settings, token, kind, user);
  o.err.write(`${o.errColor.green('✓')} logged in to ${settings.apiUrl}${user ? ` as ${user}` : ' with an API token'}\n`);
  return EXIT.OK;
}

interface DeviceCode { device_code: string; user_code: string; verification_uri: string; verification_uri_complete?: string; expires_in: number; interval?: number }

/** `svc login`: the device authorization grant. */
export async function loginWithDevice(o: Output, opts: { browser: boolean }): Promise<number> {
  const settings = loadSettings({ ...process.env, SVC_TOKEN: '' });
  const api = createApi({ ...settings, token: null });
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once('SIGINT', onSigint);
  try {
    const started = await api.typed.POST('/oauth/device/code', {
      body: { client_id: CLIENT_ID } as never,
      bodySerializer: (b) => form(b as Record<string, string>),
      headers: formHeaders,
      signal: abort.signal,
    }).catch((err: unknown) => { throw abort.signal.aborted ? err : networkError(settings.apiUrl, err); });
    if (!started.response.ok) throw apiError(started.response.status, started.error, started.response.headers);
    const code = started.data as unknown as DeviceCode;
    const url = code.verification_uri_complete ?? code.verification_uri;
    o.err.write(`First copy your one-time code: ${o.errColor.bold(code.user_code)}\n`);
    const opened = opts.browser && openBrowser(url, process.env);
    o.err.write(`${opened ? 'Opened' : 'Open'} ${o.errColor.cyan(url)} ${opened ? 'in your browser' : 'in a browser'} to approve this device (Ctrl-C cancels).\n`);
    let interval = Math.max(1, code.interval ?? 5);
    const deadline = Date.now() + code.expires_in * 1000;
    for (;;) {
      await sleep(interval * 1000, undefined, { signal: abort.signal });
      if (Date.now() > deadline) throw new CliError('the code expired before it was approved; run `svc login` again', EXIT.UNAUTHENTICATED);
      const res = await api.typed.POST('/oauth/token', {
        body: { grant_type: DEVICE_GRANT, device_code: code.device_code, client_id: CLIENT_ID } as never,
        bodySerializer: (b) => form(b as Record<string, string>),
        headers: formHeaders,
        signal: abort.signal,
      }).catch((err: unknown) => { throw abort.signal.aborted ? err : networkError(settings.apiUrl, err); });
      if (res.response.ok) {
        const token = (res.data as { access_token: string }).access_token;
        const email = await whoAmI(createApi({ ...settings, token, tokenKind: 'session' }));
        store(settings, token, 'session', email);
        o.err.write(`${o.errColor.green('✓')} logged in to ${settings.apiUrl}${email ? ` as ${email}` : ''}\n`);
        return EXIT.OK;
      }
      const error = (res.error as { error?: string; error_description?: string } | undefined)?.error;
      if (error === 'authorization_pending') continue;
      if (error === 'slow_down') {
        interval += 5; // RFC 8628 section 3.5
        continue;
      }
      if (error === 'access_denied') throw new CliError('login denied in the browser', EXIT.UNAUTHENTICATED);
      if (error === 'expired_token') throw new CliError('the code expired before it was approved; run `svc login` again', EXIT.UNAUTHENTICATED);
      throw apiError(res.response.status, res.error, res.response.headers);
    }
  } catch (err) {
    if (abort.signal.aborted) throw new CliError('login cancelled', EXIT.INTERRUPTED);
    throw err;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
}

/** `svc logout`: a session is revoked on the server, then forgotten; an API token is only forgotten. */
export async function logout(o: Output): Promise<number> {
  const settings = loadSettings();
  if (settings.tokenSource === 'env') throw new CliError('the token comes from SVC_TOKEN; unset it to log out', EXIT.USAGE);
  if (!settings.token) {
    o.err.write(`not logged in to ${settings.apiUrl}\n`);
    return EXIT.OK;
  }
  if (settings.tokenKind === 'session') {
    try {
      await createApi(settings).call('DELETE', '/v1/auth/sessions/current', { auth: 'user' });
    } catch (err) {
      // Already revoked or expired: nothing left to revoke, so forgetting it is all that remains.
      if (!(err instanceof CliError && err.exitCode === EXIT.UNAUTHENTICATED)) throw err;
    }
  }
  updateHost(settings.apiUrl, () => null);
  const note = settings.tokenKind === 'session' ? 'session revoked' : 'token forgotten; it stays valid until revoked (svc api-tokens revoke)';
  o.err.write(`${o.errColor.green('✓')} logged out of ${settings.apiUrl} (${note})\n`);
  return EXIT.OK;
}

interface Status {
  api_url: string;
  logged_in: boolean;
  /** the user's e-mail; null for a workspace credential (API token, OAuth client) */
  user: string | null;
  token_kind: TokenKind | null;
  token_source: Settings['tokenSource'];
  /** an API token's own name and role */
  token_name: string | null;
  token_role: string | null;
  /** the workspace commands act on: the API token's own, else the selected one (`svc workspaces use`, SVC_CONTEXT) */
  workspace: { id: string; name: string | null } | null;
  context: string | null;
  config_path: string;
  /** why the credential or the workspace could not be read */
  error: string | null;
}

/** The credential's identity, read from the server: the user, or the API token's workspace and name. */
async function identify(api: Api, token: string, status: Status): Promise<void> {
  if (status.token_kind === 'api_token') {
    // An API token has no user; its workspace's token list names the workspace and, by prefix, the token.
    const list = (await api.call('GET', '/v1/api_tokens', { query: { limit: 100 }, auth: 'workspace' })).body as { data: { workspace_id: string; prefix: string; name: string; role: string }[] };
    const own = list.data.find((t) => token.startsWith(t.prefix));
    const workspace = own?.workspace_id ?? list.data[0]?.workspace_id;
    if (workspace) status.workspace = { id: workspace, name: null };
    status.token_name = own?.name ?? null;
    status.token_role = own?.role ?? null;
    return;
  }
  try {
    status.user = ((await api.call('GET', '/v1/me', { auth: 'user' })).body as { email: string }).email;
  } catch (err) {
    // An OAuth client's JWT is a workspace credential: /v1/me refuses it, a workspace route does not.
    if (!(err instanceof CliError && err.exitCode === EXIT.PERMISSION_DENIED && status.token_kind === 'jwt')) throw err;
    await api.call('GET', '/v1/operations', { query: { limit: 1 }, auth: 'workspace' });
  }
}

/** `svc whoami` and `svc auth status [--json]`: who, on which server, in which workspace, with which token; exit 3 when logged out. */
export async function authStatus(o: Output, json: boolean): Promise<number> {
  const settings = loadSettings();
  const status: Status = {
    api_url: settings.apiUrl,
    logged_in: false,
    user: null,
    token_kind: settings.tokenKind,
    token_source: settings.tokenSource,
    token_name: null,
    token_role: null,
    workspace: settings.context && settings.tokenKind !== 'api_token' ? { id: settings.context, name: null } : null,
    context: settings.context,
    config_path: settings.configPath,
    error: null,
  };
  let exit: number = EXIT.UNAUTHENTICATED;
  if (settings.token) {
    const api = createApi(settings);
    try {
      await identify(api, settings.token, status);
      status.logged_in = true;
      exit = EXIT.OK;
      if (status.workspace) {
        const ws = await api.call('GET', '/v1/workspaces/{id}', { path: { id: status.workspace.id }, auth: 'workspace-path' }).catch((err: unknown) => {
          if (!(err instanceof CliError)) throw err;
          status.error = `workspace ${status.workspace!.id}: ${err.message}`;
          return null;
        });
        status.workspace.name = (ws?.body as { name?: string } | undefined)?.name ?? null;
      }
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      status.error = err.message;
      exit = err.exitCode;
    }
  }
  if (json) {
    o.out.write(`${JSON.stringify(status)}\n`);
    return exit;
  }
  const c = o.color;
  const lines = [c.bold(status.api_url)];
  if (!status.logged_in) {
    lines.push(`  ${c.red('X')} Not logged in${status.error ? `: ${status.error}` : ''}`, `  - Log in with \`svc login\` (or \`svc login --with-token\`)`);
  } else {
    const who = status.user ? `as ${c.bold(status.user)}`
      : status.token_kind === 'api_token' ? `with the API token ${c.bold(status.token_name ?? '(unnamed)')}${status.token_role ? ` (role ${status.token_role})` : ''}`
      : 'with an OAuth client token';
    lines.push(`  ${c.green('✓')} Logged in ${who}`);
    const ws = status.workspace;
    lines.push(`  - Workspace: ${ws ? `${ws.name ? `${c.bold(ws.name)} (${ws.id})` : ws.id}` : settings.tokenKind === 'api_token' || settings.tokenKind === 'jwt' && !status.user ? "the token's own" : c.dim('none selected (svc workspaces use ws_...)')}`);
    if (status.error) lines.push(`  - ${c.yellow('!')} ${status.error}`);
  }
  if (status.token_kind) lines.push(`  - Token: ${status.token_kind}, ${status.token_source === 'env' ? 'from SVC_TOKEN' : `stored in ${status.config_path}`}`);
  o.out.write(`${lines.join('\n')}\n`);
  return exit;
}

/** `svc workspaces use ID`: checks the workspace is reachable, then makes it the default svc-context. */
export async function useWorkspace(o: Output, id: string): Promise<number> {
  const settings = loadSettings();
  const res = await createApi(settings).call('GET', '/v1/workspaces/{id}', { path: { id }, auth: 'workspace-path' });
  updateHost(settings.apiUrl, (h) => ({ ...h, context: id }));
  o.err.write(`${o.errColor.green('✓')} using workspace ${id} (${(res.body as { name: string }).name})${process.env.SVC_CONTEXT ? '; SVC_CONTEXT still overrides it' : ''}\n`);
  return EXIT.OK;
}
