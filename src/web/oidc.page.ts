// Single sign-on's two browser routes (issue 34): GET /v1/auth/oidc/start sends the browser to the
// operator's OpenID provider, GET /v1/auth/oidc/callback is where the provider sends it back; the
// sign-in then ends as the e-mail and password sign-ins do, with the session cookie
// (cookie.session.ts), and the browser goes to the local path it started from. The pending login
// travels in its own cookie, sealed by the OIDC service, scoped to these two paths.
//
// An account with two-factor sign-in on is not signed in at the callback: the sign-in waits (5
// minutes, in a cookie sealed the same way, bound to this browser) for the code, which the page at
// /v1/auth/oidc/second_factor asks for and checks as a password sign-in's code (the same throttle,
// each code once), as GitLab and Gitea ask it after an external sign-in.
//
// A browser (Accept: text/html) that cannot be signed in sees a page saying why and what to do;
// any other client gets the same refusal in the one JSON error shape. Both are in the OpenAPI
// document; the CLI has no commands for them (`x-svc-cli: false`): they are a browser's.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { accountDisabled, ApiError, invalidArgument } from '../platform/errors.js';
import { findUserById } from '../modules/users/users.service.js';
import { responses, type App } from '../platform/http.js';
import type { OidcSignIn } from '../modules/oidc/oidc.service.js';
import type { Services } from '../services.js';
import { signInNextPath } from './app-paths.js';
import { createCookieSessions } from './cookie.session.js';
import { sendPage } from './layout.js';
import { secondFactorView, ssoProblemView, ssoStartHref } from './oidc.views.js';

export const OIDC_LOGIN_COOKIE = 'svc_oidc_login';
/** A sign-in the provider vouched for, waiting for the account's second factor (sealed; 5 minutes). */
export const OIDC_SECOND_FACTOR_COOKIE = 'svc_oidc_second_factor';
const SECOND_FACTOR_PATH = '/v1/auth/oidc/second_factor';
/** What the second step's CSRF token is bound to, beside this browser's nonce (cookie.session.ts). */
const SECOND_FACTOR_CSRF = 'oidc-second-factor';

const tags = ['identity'];

const Bounded = (description: string, maxLength = 2048) => Type.Optional(Type.String({ maxLength, description }));

const StartQuery = Type.Object({
  next: Bounded(
    'where the browser goes once signed in: a local path of the web app (`/clusters/clu_…`) or the device approval page ' +
    '(`/device?user_code=…`). Anything else (another site, `//host`, an API path) is ignored and the sign-in ends at `/`.',
  ),
});

const CallbackQuery = Type.Object({
  code: Bounded('the authorization code the provider issued'),
  state: Bounded('the state this service sent, echoed by the provider', 512),
  error: Bounded('the provider\'s error code when it did not sign the person in (`access_denied`, ...)', 256),
  error_description: Bounded('the provider\'s words for that error'),
  error_uri: Bounded('a page of the provider about that error'),
  iss: Bounded('the provider\'s issuer identifier (RFC 9207), checked when sent', 1024),
  session_state: Bounded('the provider\'s session state (OpenID Connect Session Management); not used', 1024),
});

const SecondFactorForm = Type.Object(
  {
    code: Bounded('the 6-digit code of the authenticator app, or an unused recovery code (`xxxx-xxxx-xxxx`; case, spaces and dashes do not matter)', 32),
    csrf: Bounded('the CSRF token of the page\'s form (bound to this browser\'s `svc_signin_nonce` cookie)', 128),
  },
  { additionalProperties: false, examples: [{ code: '492039', csrf: 'kq3Vx0bW1nYz8Jd2fQp4sT6uA9cE7gH5iL0mN3oR2tU' }] },
);

/** A server-rendered page (layout.ts) as a response of the OpenAPI document. */
const Page = (description: string) => ({ description, content: { 'text/html': { schema: { type: 'string', description } } } });

const Redirect = (description: string) => Type.Unsafe<void>({
  type: 'null',
  description,
  headers: { location: { type: 'string', description: 'where the browser goes next' } },
});

/** True when the caller is a browser navigating (it asks for HTML), which gets a page rather than JSON. */
function wantsPage(request: FastifyRequest): boolean {
  return /\btext\/html\b/.test(request.headers.accept ?? '');
}

const secondFactorExpired = () =>
  new ApiError('INVALID_ARGUMENT', 'this sign-in waited more than 5 minutes for its code, or was started in another browser: sign in again', { reason: 'OIDC_SIGN_IN_EXPIRED' });

export function oidcRoutes(app: App, s: Pick<Services, 'config' | 'db' | 'oidc' | 'sessions' | 'twoFactor'>): void {
  const cookies = createCookieSessions({ config: s.config, sessions: s.sessions });
  const { basePath } = cookies;
  const pendingCookie = {
    path: `${basePath}/v1/auth/oidc/`,
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: s.config.publicUrl.startsWith('https:'),
  };
  // The sign-in waiting for its second factor is sent only to the route that asks for the code.
  const secondFactorCookie = { ...pendingCookie, path: `${basePath}${SECOND_FACTOR_PATH}` };

  /**
   * THE place where a sign-in through the provider becomes a session of this browser, or waits for
   * the account's second factor (TOTP); the check that the user is not disabled goes first.
   * `signIn.created` says whether the account was made just now.
   */
  async function finishSignIn(request: FastifyRequest, reply: FastifyReply, signIn: OidcSignIn): Promise<FastifyReply> {
    // The operator's hold on the account applies whatever the provider says.
    if ((await findUserById(s.db, signIn.userId))?.disabled_at != null) return refuse(request, reply, accountDisabled(), signIn.next);
    if (await s.twoFactor.hasActiveFactor(signIn.userId)) {
      // Not signed in yet: the account's code comes first, on the second-factor page, within 5 minutes, in this browser.
      const { cookie, maxAgeSeconds } = s.oidc.holdForSecondFactor(signIn, cookies.browserNonce(request, reply));
      reply.setCookie(OIDC_SECOND_FACTOR_COOKIE, cookie, { ...secondFactorCookie, maxAge: maxAgeSeconds });
      request.log.info({ user_id: signIn.userId }, 'signed in at the OpenID provider; the second factor is asked');
      return reply.code(303).header('location', `${basePath}${SECOND_FACTOR_PATH}`).header('cache-control', 'no-store').send();
    }
    await cookies.signInBrowser(reply, signIn.userId);
    request.log.info({ user_id: signIn.userId, created: signIn.created }, 'signed in through the OpenID provider');
    return reply.code(303).header('location', `${basePath}${signIn.next}`).header('cache-control', 'no-store').send();
  }

  /** A refusal: a page for a browser, the JSON error for anyone else. `next` is where "try again" returns to. */
  function refuse(request: FastifyRequest, reply: FastifyReply, err: unknown, next: string): FastifyReply {
    if (!(err instanceof ApiError)) throw err;
    if (err.options.reason === 'OIDC_RESPONSE_REJECTED' || err.options.reason === 'OIDC_PROVIDER_UNAVAILABLE') {
      // What went wrong at the provider, for the operator (the person sees the general sentence).
      request.log.warn({ reason: err.options.reason, detail: err.cause }, 'single sign-on failed');
    }
    if (!wantsPage(request)) throw err;
    for (const [name, value] of Object.entries(err.options.headers ?? {})) reply.header(name, value);
    const message = err.message.charAt(0).toUpperCase() + err.message.slice(1) + (/[.!?]$/.test(err.message) ? '' : '.');
    return sendPage(reply, err.status, 'Could not sign you in', ssoProblemView({ message, retryHref: ssoStartHref(basePath, next), backHref: `${basePath}${next}` }));
  }

  app.get('/v1/auth/oidc/start', {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'startOidcSignIn', summary: 'Sign in through the OpenID provider',
      'x-svc-cli': false,
      description:
        'Opened by a browser (the "Sign in with …" link of the web app\'s and the device page\'s sign-in): redirects (303) to ' +
        'the operator\'s OpenID provider with a new state, nonce and PKCE challenge, which this service keeps in a short-lived ' +
        'HttpOnly cookie (sealed: the browser can neither read nor change it; 10 minutes). The provider sends the browser back ' +
        'to `GET /v1/auth/oidc/callback`. Single sign-on not set up (SVC_OIDC_ISSUER) is 404 reason OIDC_NOT_CONFIGURED; a ' +
        'provider that cannot be reached (its metadata is read at the first sign-in, each request bounded to 10 seconds) is 503 ' +
        'reason OIDC_PROVIDER_UNAVAILABLE. A browser (Accept: text/html) gets these as a page saying what to do.',
      querystring: StartQuery,
      response: responses({ 303: Redirect('to the provider\'s authorization endpoint') }, [400, 404]),
    },
  }, async (request, reply) => {
    const next = signInNextPath(request.query.next) ?? '/';
    try {
      const { url, cookie, maxAgeSeconds } = await s.oidc.begin(next);
      reply.setCookie(OIDC_LOGIN_COOKIE, cookie, { ...pendingCookie, maxAge: maxAgeSeconds });
      return reply.code(303).header('location', url).header('cache-control', 'no-store').header('referrer-policy', 'no-referrer').send();
    } catch (err) {
      return refuse(request, reply, err, next);
    }
  });

  app.get('/v1/auth/oidc/callback', {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'completeOidcSignIn', summary: 'Where the OpenID provider sends the browser back',
      'x-svc-cli': false,
      description:
        'The redirect URI to register at the provider: `{SVC_PUBLIC_URL}/v1/auth/oidc/callback`. Checks the answer against the ' +
        'pending sign-in of this browser (its cookie: state, then PKCE and the ID token\'s nonce, issuer and audience through the ' +
        'token exchange) and finds the user: the provider\'s account (issuer and subject) once linked to a user is that user ' +
        'whatever e-mail it has now; otherwise the user whose e-mail (lowercased) the provider gives as verified, who is then ' +
        'linked to it; with SVC_OIDC_CREATE_USERS=true an unknown e-mail gets an account. Then the browser is signed in as with ' +
        '`POST /v1/auth/browser_session` (the `svc_session` cookie) and redirected (303) to the `next` the sign-in started with; ' +
        'an account with two-factor sign-in on is not signed in yet but redirected (303) to `GET /v1/auth/oidc/second_factor`, which asks for its code. ' +
        'Refusals, each changing nothing: 400 reason OIDC_SIGN_IN_EXPIRED: no pending sign-in in this browser, one older than ' +
        '10 minutes, or another one\'s state. 403 reason OIDC_RESPONSE_REJECTED: the provider answered with an error (the ' +
        'person cancelled, say), or its answer failed a check. 403 reason OIDC_EMAIL_NOT_VERIFIED: no e-mail, or one the ' +
        'provider has not verified. 403 reason OIDC_NO_ACCOUNT: no account has that e-mail and accounts are not made at ' +
        'sign-in here. 403 reason OIDC_IDENTITY_CONFLICT: the account of that e-mail is linked to another account of the ' +
        'provider. 401 reason ACCOUNT_DISABLED: the operator disabled the account. 404 reason OIDC_NOT_CONFIGURED; 503 reason OIDC_PROVIDER_UNAVAILABLE. ' +
        'A browser (Accept: text/html) gets these as a page saying what to do.',
      querystring: CallbackQuery,
      response: responses({ 303: Redirect('to the `next` path the sign-in started with, signed in; or to the second-factor page') }, [400, 403, 404]),
    },
  }, async (request, reply) => {
    const sealed = request.cookies?.[OIDC_LOGIN_COOKIE];
    // One way back per pending sign-in, whatever happens next.
    reply.clearCookie(OIDC_LOGIN_COOKIE, pendingCookie);
    const q = request.url.indexOf('?');
    const callbackUrl = new URL(s.config.oidc?.redirectUri ?? `${s.config.publicUrl}/v1/auth/oidc/callback`);
    callbackUrl.search = q === -1 ? '' : request.url.slice(q);
    let signIn: OidcSignIn;
    try {
      signIn = await s.oidc.complete(callbackUrl, sealed);
    } catch (err) {
      return refuse(request, reply, err, s.oidc.nextOf(sealed) ?? '/');
    }
    return finishSignIn(request, reply, signIn);
  });
  /**
   * The sign-in of this browser waiting for its second factor, with its account's e-mail; else the
   * refusal is answered (expired, absent, another browser's, or the account disabled meanwhile)
   * and the reply returned.
   */
  async function heldSignIn(request: FastifyRequest, reply: FastifyReply): Promise<{ userId: string; next: string; email: string } | FastifyReply> {
    const sealed = request.cookies?.[OIDC_SECOND_FACTOR_COOKIE];
    const held = s.oidc.openSecondFactor(sealed, cookies.requestNonce(request));
    const user = held ? await findUserById(s.db, held.userId) : undefined;
    if (!held || !user) {
      reply.clearCookie(OIDC_SECOND_FACTOR_COOKIE, secondFactorCookie);
      return refuse(request, reply, secondFactorExpired(), s.oidc.secondFactorNextOf(sealed) ?? '/');
    }
    if (user.disabled_at != null) {
      reply.clearCookie(OIDC_SECOND_FACTOR_COOKIE, secondFactorCookie);
      return refuse(request, reply, accountDisabled(), held.next);
    }
    return { ...held, email: user.email };
  }

  function codePage(request: FastifyRequest, reply: FastifyReply, status: number, held: { next: string; email: string }, message?: string): FastifyReply {
    return sendPage(reply, status, 'Two-factor sign-in', secondFactorView({
      basePath, action: `${basePath}${SECOND_FACTOR_PATH}`, csrf: cookies.nonceCsrfToken(request, reply, SECOND_FACTOR_CSRF),
      email: held.email, restartHref: ssoStartHref(basePath, held.next), message,
    }));
  }

  const SECOND_FACTOR_ABOUT =
    'The second step of a sign-in through the OpenID provider, for an account with two-factor sign-in on: the callback then ' +
    'does not sign the browser in but keeps the sign-in in a sealed HttpOnly cookie (`svc_oidc_second_factor`, sent only to ' +
    'this path, bound to this browser\'s `svc_signin_nonce` cookie, 5 minutes) and redirects (303) here. ';

  app.get(SECOND_FACTOR_PATH, {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'showOidcSecondFactor', summary: 'The code page of a sign-in through the OpenID provider',
      'x-svc-cli': false,
      description:
        SECOND_FACTOR_ABOUT + 'Answers a page (text/html, no scripts) with a form asking for the code from the authenticator app or a ' +
        'recovery code, posted to `POST /v1/auth/oidc/second_factor`. No sign-in waiting in this browser (none, older than 5 minutes, or ' +
        'another browser\'s) is 400 reason OIDC_SIGN_IN_EXPIRED; an account the operator disabled meanwhile is 401 reason ACCOUNT_DISABLED. ' +
        'A browser (Accept: text/html) gets these as a page saying to sign in again.',
      response: { ...responses({}, [400]), 200: Page('the page asking for the code: a form posting to `POST /v1/auth/oidc/second_factor`') },
    },
  }, async (request, reply) => {
    const held = await heldSignIn(request, reply);
    if (!('userId' in held)) return held;
    return codePage(request, reply, 200, held);
  });

  app.post(SECOND_FACTOR_PATH, {
    // The form of a page without scripts: form-encoded, with its CSRF token (the /v1 API is otherwise JSON only).
    config: { auth: 'none', formBody: true },
    attachValidation: true,
    schema: {
      tags, operationId: 'completeOidcSecondFactor', summary: 'Finish a sign-in through the OpenID provider with the second factor',
      'x-svc-cli': false,
      description:
        SECOND_FACTOR_ABOUT + 'Posted by the code page\'s form: checks the code as `POST /v1/auth/sessions` does (a current TOTP code ' +
        'or an unused recovery code, each signing in once), then signs the browser in (the `svc_session` cookie) and redirects (303) to the ' +
        '`next` the sign-in started with. Refusals, each signing nobody in: 400 reason OIDC_SIGN_IN_EXPIRED: no sign-in waiting in this ' +
        'browser (none, older than 5 minutes, or another browser\'s): sign in again. 403 reason CSRF_TOKEN_INVALID: the form\'s `csrf` is ' +
        'missing or not this browser\'s. 401 reason TWO_FACTOR_CODE_REQUIRED: no code; 401 reason TWO_FACTOR_CODE_INVALID: a wrong code, ' +
        'or one used already (the sign-in keeps waiting: try again). Wrong codes are throttled per account and address as at the other ' +
        'sign-ins (429 reason SIGN_IN_THROTTLED, with retry-after). 401 reason ACCOUNT_DISABLED: the operator disabled the account meanwhile. ' +
        'A browser (Accept: text/html) gets these as a page: the form again saying what was wrong, or a page saying to sign in again.',
      consumes: ['application/x-www-form-urlencoded'],
      body: SecondFactorForm,
      response: responses({ 303: Redirect('to the `next` path the sign-in started with, signed in') }, [400, 403, 429]),
    },
  }, async (request, reply) => {
    const held = await heldSignIn(request, reply);
    if (!('userId' in held)) return held;
    /** The refusal: the code page again, saying `text`, for a browser; the JSON error for anyone else. */
    const again = (err: ApiError, text: string): FastifyReply => {
      if (!wantsPage(request)) throw err;
      for (const [name, value] of Object.entries(err.options.headers ?? {})) reply.header(name, value);
      return codePage(request, reply, err.status, held, text);
    };
    const body = request.validationError ? undefined : request.body;
    if (!body) return again(invalidArgument('the form could not be read: send `code` and `csrf`, form-encoded', 'VALIDATION_FAILED'), 'The form could not be read. Please try again.');
    if (!cookies.checkNonceCsrf(request, SECOND_FACTOR_CSRF, body.csrf)) {
      return again(
        new ApiError('PERMISSION_DENIED', 'this form has expired or did not come from this site: send the csrf token of the code page', { reason: 'CSRF_TOKEN_INVALID' }),
        'This form has expired or did not come from this site. Nothing was checked; please enter the code again.',
      );
    }
    try {
      await s.twoFactor.checkSignIn(held.userId, body.code, request.ip);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (err.code === 'RESOURCE_EXHAUSTED') {
        const wait = Number(err.options.headers?.['retry-after'] ?? 1);
        return again(err, `Too many wrong codes for this account or from this network. Wait ${wait < 90 ? `${wait} seconds` : `${Math.ceil(wait / 60)} minutes`} and try again.`);
      }
      if (err.options.reason === 'TWO_FACTOR_CODE_REQUIRED') return again(err, 'Enter the code from your authenticator app, or a recovery code.');
      if (err.options.reason === 'TWO_FACTOR_CODE_INVALID') {
        return again(err, 'That code is not right, or was used already. Enter the current code from your app, or an unused recovery code.');
      }
      throw err;
    }
    reply.clearCookie(OIDC_SECOND_FACTOR_COOKIE, secondFactorCookie);
    await cookies.signInBrowser(reply, held.userId);
    request.log.info({ user_id: held.userId }, 'signed in through the OpenID provider with the second factor');
    return reply.code(303).header('location', `${basePath}${held.next}`).header('cache-control', 'no-store').send();
  });
}
