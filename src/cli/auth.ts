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

/** `svc auth status [--json]`: who, which server, which workspace, which kind of token. */
export async function authStatus(o: Output, json: boolean): Promise<number> {
  const settings = loadSettings();
  const status = {
    api_url: settings.apiUrl,
    logged_in: Boolean(settings.token),
    token_kind: settings.tokenKind,
    token_source: settings.tokenSource,
    user: null as string | null,
    context: settings.context,
    config_path: settings.configPath,
  };
  let problem: CliError | null = null;
  if (settings.token) {
    try {
      if (settings.tokenKind === 'api_token') await createApi(settings).call('GET', '/v1/operations', { query: { limit: 1 }, auth: 'workspace' });
      else status.user = ((await createApi(settings).call('GET', '/v1/me', { auth: 'user' })).body as { email: string }).email;
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      problem = err;
      status.logged_in = false;
    }
  }
  if (json) o.out.write(`${JSON.stringify(status)}\n`);
  else {
    const c = o.color;
    o.out.write(`${c.bold('server')}     ${status.api_url}\n`);
    o.out.write(`${c.bold('logged in')}  ${status.logged_in ? c.green('yes') : c.red('no')}${problem ? ` (${problem.message})` : ''}\n`);
    if (status.token_kind) o.out.write(`${c.bold('token')}      ${status.token_kind}${status.token_source === 'env' ? ' (from SVC_TOKEN)' : ''}\n`);
    if (status.user) o.out.write(`${c.bold('user')}       ${status.user}\n`);
    o.out.write(`${c.bold('workspace')}  ${status.context ?? (status.token_kind === 'api_token' ? "the token's own" : c.dim('none (svc workspaces use ws_...)'))}\n`);
  }
  if (!settings.token) return EXIT.UNAUTHENTICATED;
  return problem ? problem.exitCode : EXIT.OK;
}

/** `svc workspaces use ID`: checks the workspace is reachable, then makes it the default svc-context. */
export async function useWorkspace(o: Output, id: string): Promise<number> {
  const settings = loadSettings();
  const res = await createApi(settings).call('GET', '/v1/workspaces/{id}', { path: { id }, auth: 'workspace-path' });
  updateHost(settings.apiUrl, (h) => ({ ...h, context: id }));
  o.err.write(`${o.errColor.green('✓')} using workspace ${id} (${(res.body as { name: string }).name})${process.env.SVC_CONTEXT ? '; SVC_CONTEXT still overrides it' : ''}\n`);
  return EXIT.OK;
}
