// A real OpenID provider for the single sign-on tests: `oidc-provider` (the certified OpenID
// Connect server library) on a random port of 127.0.0.1, with one confidential client (this
// service, its redirect URI given), PKCE required, and accounts the test sets up (sub, e-mail,
// whether it is verified, name). Its development interactions sign in as whatever login is typed
// (the password is not checked), so a test signs in "as" an account by its sub, over HTTP
// (`signIn`) or in Chromium through the provider's own pages. Consent is granted at once for the
// one client, as a company's provider does for its own applications.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export interface StandinAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
}

export interface OidcStandin {
  /** the issuer identifier, as SVC_OIDC_ISSUER takes it (`http://127.0.0.1:<port>`) */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** the provider's accounts by sub; change them at will between sign-ins */
  accounts: Map<string, StandinAccount>;
  /** the SVC_OIDC_* variables that point the service at this provider */
  env(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /**
   * Follows the provider's authorization URL as a browser would, signs in as `sub` on its login
   * form, and returns the URL the provider sends the browser back to (the service's callback).
   */
  signIn(authorizationUrl: string, sub: string): Promise<URL>;
  close(): Promise<void>;
}

/**
 * oidc-provider prints its development warnings and notices (in-memory adapter, devInteractions,
 * default TTLs, Node 20) with console.warn and console.info: right for a deployment, noise in a
 * test's output. Only lines that start with its own prefix are dropped.
 */
function quietProviderNotices(): void {
  for (const level of ['warn', 'info'] as const) {
    const original = console[level];
    if ((original as { svcQuiet?: boolean }).svcQuiet) continue;
    const quiet = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && /oidc-provider (WARNING|NOTICE):/.test(args[0])) return;
      original.apply(console, args);
    };
    (quiet as { svcQuiet?: boolean }).svcQuiet = true;
    console[level] = quiet;
  }
}

export async function startOidcStandin(opts: { redirectUri: string; port?: number }): Promise<OidcStandin> {
  quietProviderNotices();
  // Imported here, after the notices are quieted: it warns about the Node version as it loads.
  const { default: Provider } = await import('oidc-provider');
  const accounts = new Map<string, StandinAccount>();
  const clientId = 'svc-test-client';
  const clientSecret = randomBytes(24).toString('hex');
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'standin', alg: 'RS256', use: 'sig' };
  // The issuer needs the port, which the server has once it listens: listen first, then hand the
  // provider's callback to the server.
  const { createServer } = await import('node:http');
  let handler: ((req: unknown, res: unknown) => void) | null = null;
  const server = createServer((req, res) => handler!(req, res));
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const provider = new Provider(issuer, {
    clients: [{
      client_id: clientId, client_secret: clientSecret, redirect_uris: [opts.redirectUri],
      grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic',
    }],
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    async findAccount(_ctx: unknown, sub: string) {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return { accountId: sub, claims: async () => ({ ...accounts.get(sub) }) };
    },
    // This service is the provider's own first-party client: consent is given without asking.
    async loadExistingGrant(ctx: any) {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid email profile');
      await grant.save();
      return grant;
    },
  });
  handler = provider.callback();

  async function signIn(authorizationUrl: string, sub: string): Promise<URL> {
    const jar = new Map<string, string>();
    const remember = (res: Response) => {
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const i = pair!.indexOf('=');
        jar.set(pair!.slice(0, i), pair!.slice(i + 1));
      }
    };
    const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    let url = new URL(authorizationUrl);
    let form: Record<string, string> | null = null;
    for (let hop = 0; hop < 10; hop++) {
      if (url.href.startsWith(opts.redirectUri)) return url;
      const res = await fetch(url, {
        redirect: 'manual',
        headers: { cookie: cookie(), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
        ...(form ? { method: 'POST', body: new URLSearchParams(form).toString() } : {}),
      });
      remember(res);
      form = null;
      const location = res.headers.get('location');
      if (location) {
        url = new URL(location, url);
        continue;
      }
      const html = await res.text();
      const action = /<form[^>]*action="([^"]+)"[^>]*method="post"/.exec(html);
      if (res.status !== 200 || !action || !/name="prompt" value="login"/.test(html)) {
        throw new Error(`the provider answered ${res.status} at ${url.pathname}: ${html.slice(0, 300)}`);
      }
      url = new URL(action[1]!.replace(/&amp;/g, '&'), url);
      form = { prompt: 'login', login: sub, password: 'any' };
    }
    throw new Error('the provider did not send the browser back within 10 hops');
  }

  return {
    issuer, clientId, clientSecret, accounts, signIn,
    env: (extra = {}) => ({ SVC_OIDC_ISSUER: issuer, SVC_OIDC_CLIENT_ID: clientId, SVC_OIDC_CLIENT_SECRET: clientSecret, ...extra }),
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
