// The browser's sign-in, for the /device pages and the web app: an HttpOnly, SameSite=Lax cookie holding a
// session token (a broad user credential, API.md section 4), and CSRF tokens for every form.
//
// The same cookie signs the web app in to the JSON API (registerAuth), where every call but GET
// and HEAD must also carry the x-svc-csrf header, so another site cannot drive the API with form
// posts or fetches.
//
// CSRF: forms of a signed-in page carry HMAC(csrf key, session id); the sign-in form, which has
// no session yet, carries HMAC(csrf key, nonce) where the nonce sits in a second cookie
// (double submit), so another site cannot sign the browser into an attacker's account either.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { UserPrincipal } from '../platform/auth.js';
import { clock } from '../platform/clock.js';
import { deriveKey, hmacBase64Url, randomString, safeEqual } from '../platform/crypto.js';
import { ApiError } from '../platform/errors.js';
import type { SessionService } from '../modules/sessions/sessions.service.js';

export { SESSION_COOKIE } from '../platform/auth.js';
import { SESSION_COOKIE } from '../platform/auth.js';
export const SIGN_IN_NONCE_COOKIE = 'svc_signin_nonce';
const NONCE = /^[A-Za-z0-9]{32}$/;
const TWO_FACTOR_TICKET_SECONDS = 5 * 60;

export function createCookieSessions(deps: { config: Config; sessions: Pick<SessionService, 'createSession' | 'revokeSession' | 'verifier'> }) {
  const { config, sessions } = deps;
  const csrfKey = deriveKey(config.secretKey, 'csrf');
  /** Path prefix of the public URL (a reverse proxy may mount the service under one). */
  const basePath = new URL(config.publicUrl).pathname.replace(/\/+$/, '');
  // The whole service path: the same sign-in serves the /device pages and the web app's calls to
  // the JSON API (see above).
  const cookieOptions = {
    path: `${basePath}/`,
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: config.publicUrl.startsWith('https:'),
  };

  /** The signed-in user of this browser, or null (no cookie, or its session expired or was revoked). */
  async function cookieUser(request: FastifyRequest): Promise<UserPrincipal | null> {
    const token = request.cookies?.[SESSION_COOKIE];
    if (!token) return null;
    try {
      const principal = await sessions.verifier.verify(token);
      if (principal?.kind !== 'user') return null;
      return { kind: 'user', via: 'cookie', userId: principal.userId, sessionId: principal.sessionId };
    } catch (err) {
      if (err instanceof ApiError && err.code === 'UNAUTHENTICATED') return null;
      throw err;
    }
  }

  /** Creates a new session for `userId` and hands its token to the browser. */
  async function signInBrowser(reply: FastifyReply, userId: string): Promise<void> {
    const session = await sessions.createSession(userId);
    reply.setCookie(SESSION_COOKIE, session.token, cookieOptions);
    reply.clearCookie(SIGN_IN_NONCE_COOKIE, cookieOptions);
  }

  async function signOutBrowser(reply: FastifyReply, user: UserPrincipal): Promise<void> {
    if (user.sessionId) await sessions.revokeSession(user.sessionId);
    reply.clearCookie(SESSION_COOKIE, cookieOptions);
  }

  function csrfTokenFor(user: UserPrincipal): string {
    return hmacBase64Url(csrfKey, `session:${user.sessionId ?? user.userId}`);
  }

  function checkCsrf(user: UserPrincipal, submitted: string | undefined): boolean {
    return submitted !== undefined && safeEqual(submitted, csrfTokenFor(user));
  }

  /**
   * The CSRF token of a form that no session stands behind (the sign-in form, the hosted checkout
   * page), bound to `purpose`; sets the nonce cookie it is bound to when the browser has none.
   */
  function nonceCsrfToken(request: FastifyRequest, reply: FastifyReply, purpose: string): string {
    return hmacBase64Url(csrfKey, `${purpose}:${browserNonce(request, reply)}`);
  }

  /**
   * This browser's signed-out nonce (the cookie the sign-in forms' CSRF tokens are bound to), made
   * and set now when it has none; something sealed for this browser alone can name it.
   */
  function browserNonce(request: FastifyRequest, reply: FastifyReply): string {
    let nonce = request.cookies?.[SIGN_IN_NONCE_COOKIE];
    if (!nonce || !NONCE.test(nonce)) {
      nonce = randomString(32);
      reply.setCookie(SIGN_IN_NONCE_COOKIE, nonce, cookieOptions);
    }
    return nonce;
  }

  /** This browser's nonce as the request carries it, or null. */
  function requestNonce(request: FastifyRequest): string | null {
    const nonce = request.cookies?.[SIGN_IN_NONCE_COOKIE];
    return nonce && NONCE.test(nonce) ? nonce : null;
  }

  function checkNonceCsrf(request: FastifyRequest, purpose: string, submitted: string | undefined): boolean {
    const nonce = request.cookies?.[SIGN_IN_NONCE_COOKIE];
    if (!nonce || !NONCE.test(nonce) || submitted === undefined) return false;
    return safeEqual(submitted, hmacBase64Url(csrfKey, `${purpose}:${nonce}`));
  }

  /**
   * The second step of a sign-in with two factors (the /device pages): once the password was right
   * the form asks for the code and carries this ticket instead of the password. It names the
   * account, lasts 5 minutes and is bound to this browser's nonce cookie, so it is of no use
   * elsewhere; the code it waits for is checked (and throttled) when it comes back.
   */
  function twoFactorTicket(request: FastifyRequest, userId: string): string {
    // The sign-in form that got here passed checkSignInCsrf: the nonce cookie is there.
    const nonce = request.cookies?.[SIGN_IN_NONCE_COOKIE] ?? '';
    const expires = clock.now() + TWO_FACTOR_TICKET_SECONDS;
    return `${userId}.${expires}.${hmacBase64Url(csrfKey, `two-factor:${nonce}:${userId}:${expires}`)}`;
  }

  /** The account a ticket names, or null when it is forged, expired or from another browser. */
  function openTwoFactorTicket(request: FastifyRequest, ticket: string | undefined): string | null {
    const nonce = request.cookies?.[SIGN_IN_NONCE_COOKIE];
    const [userId, expires, mac, extra] = (ticket ?? '').split('.');
    if (!nonce || !NONCE.test(nonce) || !userId || !expires || !mac || extra !== undefined) return null;
    if (!/^[0-9]{1,12}$/.test(expires) || Number(expires) < clock.now()) return null;
    return safeEqual(mac, hmacBase64Url(csrfKey, `two-factor:${nonce}:${userId}:${expires}`)) ? userId : null;
  }

  /** The sign-in form's CSRF token (see nonceCsrfToken). */
  const signInCsrfToken = (request: FastifyRequest, reply: FastifyReply) => nonceCsrfToken(request, reply, 'sign-in');
  const checkSignInCsrf = (request: FastifyRequest, submitted: string | undefined) => checkNonceCsrf(request, 'sign-in', submitted);

  return {
    basePath, cookieUser, signInBrowser, signOutBrowser, csrfTokenFor, checkCsrf, signInCsrfToken, checkSignInCsrf, nonceCsrfToken, checkNonceCsrf,
    twoFactorTicket, openTwoFactorTicket, browserNonce, requestNonce,
  };
}

export type CookieSessions = ReturnType<typeof createCookieSessions>;
