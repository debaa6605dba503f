// The OpenID Connect relying party (issue 34, single sign-on) over `openid-client`: the
// authorization code flow with PKCE, state and nonce, against the one provider the operator
// configured (SVC_OIDC_*). The package is loaded, and the provider's metadata discovered, at the
// first sign-in rather than at start: `svc serve` starts as fast with OIDC configured as without,
// and a provider that is down at start does not stop the service. A successful discovery is kept
// for the life of the process; a failed one is not, so the next sign-in tries again. Every request
// to the provider is bounded by OIDC_TIMEOUT_SECONDS.
//
// Tested against a real provider (`oidc-provider`, test/oidc-standin.ts); nothing here is mocked.
import type { OidcConfig } from '../../config.js';

export const OIDC_TIMEOUT_SECONDS = 10;

/** What a sign-in must remember between the redirect to the provider and its way back. */
export interface PendingOidcLogin {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The provider's account as its ID token and userinfo describe it. */
export interface OidcAccount {
  /** the issuer that vouched (the ID token's `iss`) */
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
}

/** Why talking to the provider failed, in words for the person signing in; `detail` is for the log. */
export class OidcFailure extends Error {
  constructor(
    readonly kind: 'unreachable' | 'rejected' | 'refused',
    message: string,
    readonly detail: string,
  ) {
    super(message);
  }
}

export interface OidcRelyingParty {
  /** A new login: its secrets and the provider's authorization URL to send the browser to. */
  begin(): Promise<{ url: string; pending: PendingOidcLogin }>;
  /** The provider's answer at the callback URL, checked (state, PKCE, nonce) and traded for the account. */
  complete(callbackUrl: URL, pending: PendingOidcLogin): Promise<OidcAccount>;
}

type Client = typeof import('openid-client');
type Configuration = import('openid-client').Configuration;

const SCOPE = 'openid email profile';

function describe(err: unknown): string {
  const e = err as { name?: string; message?: string; code?: string; error?: string; error_description?: string; cause?: unknown };
  const parts = [e?.name, e?.code, e?.error, e?.error_description, e?.message].filter((p) => typeof p === 'string' && p);
  const cause = e?.cause as { message?: string; code?: string } | undefined;
  if (cause && typeof cause === 'object' && (cause.code || cause.message)) parts.push(`cause: ${cause.code ?? ''} ${cause.message ?? ''}`.trim());
  return parts.join(': ').slice(0, 500) || String(err).slice(0, 500);
}

/** A request that never reached an answer: the network, a timeout, or a provider answering 5xx. */
function isTransport(err: unknown): boolean {
  const e = err as { name?: string; code?: string; status?: number };
  if (err instanceof TypeError) return true;
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return true;
  return e?.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' && typeof e.status === 'number' && e.status >= 500;
}

export function createOidcRelyingParty(config: OidcConfig): OidcRelyingParty {
  let discovered: Promise<{ client: Client; configuration: Configuration }> | null = null;

  /** The package and the provider's metadata, discovered once; a failure is forgotten so the next call retries. */
  function provider(): Promise<{ client: Client; configuration: Configuration }> {
    discovered ??= (async () => {
      const client = await import('openid-client');
      const insecure = new URL(config.issuer).protocol === 'http:';
      try {
        const configuration = await client.discovery(new URL(config.issuer), config.clientId, config.clientSecret, undefined, {
          timeout: OIDC_TIMEOUT_SECONDS,
          ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
        });
        return { client, configuration };
      } catch (err) {
        throw new OidcFailure('unreachable', 'The sign-in provider cannot be reached right now.', `discovery of ${config.issuer} failed: ${describe(err)}`);
      }
    })();
    discovered.catch(() => {
      discovered = null;
    });
    return discovered;
  }

  return {
    async begin() {
      const { client, configuration } = await provider();
      const pending: PendingOidcLogin = { state: client.randomState(), nonce: client.randomNonce(), codeVerifier: client.randomPKCECodeVerifier() };
      const url = client.buildAuthorizationUrl(configuration, {
        redirect_uri: config.redirectUri,
        scope: SCOPE,
        response_type: 'code',
        state: pending.state,
        nonce: pending.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(pending.codeVerifier),
        code_challenge_method: 'S256',
      });
      return { url: url.href, pending };
    },

    async complete(callbackUrl, pending) {
      const { client, configuration } = await provider();
      let tokens: Awaited<ReturnType<Client['authorizationCodeGrant']>>;
      try {
        tokens = await client.authorizationCodeGrant(configuration, callbackUrl, {
          pkceCodeVerifier: pending.codeVerifier,
          expectedState: pending.state,
          expectedNonce: pending.nonce,
          idTokenExpected: true,
        });
      } catch (err) {
        if (err instanceof client.AuthorizationResponseError) {
          // The provider sent the browser back with an error (the person cancelled, say).
          throw new OidcFailure('refused', `The sign-in provider did not sign you in (${err.error}${err.error_description ? `: ${err.error_description}` : ''}).`, describe(err));
        }
        if (isTransport(err)) throw new OidcFailure('unreachable', 'The sign-in provider cannot be reached right now.', describe(err));
        throw new OidcFailure('rejected', 'The sign-in provider\'s answer did not pass this service\'s checks, so nobody was signed in.', describe(err));
      }
      const claims = tokens.claims();
      if (!claims) throw new OidcFailure('rejected', 'The sign-in provider sent no ID token, so nobody was signed in.', 'no id_token in the token response');
      let info: Record<string, unknown> = claims;
      // Many providers put e-mail claims in the userinfo answer only, not in the ID token.
      if (claims.email === undefined || claims.email_verified === undefined) {
        let userinfo: Record<string, unknown>;
        try {
          userinfo = await client.fetchUserInfo(configuration, tokens.access_token, claims.sub);
        } catch (err) {
          if (isTransport(err)) throw new OidcFailure('unreachable', 'The sign-in provider cannot be reached right now.', describe(err));
          throw new OidcFailure('rejected', 'The sign-in provider\'s account details could not be read, so nobody was signed in.', describe(err));
        }
        // the ID token's claims win; userinfo (whose `sub` was checked to be the same) fills in what it left out
        info = { ...userinfo, ...Object.fromEntries(Object.entries(claims).filter(([, v]) => v !== undefined)) };
      }
      const email = typeof info.email === 'string' ? info.email : null;
      const verified = info.email_verified === true || info.email_verified === 'true';
      const name = typeof info.name === 'string' && info.name.trim() ? info.name.trim().slice(0, 100) : null;
      return { issuer: claims.iss, subject: claims.sub, email, emailVerified: verified, name };
    },
  };
}
