// The /device page (RFC 8628 section 3.3): sign in, enter or follow a user code, approve or deny.
// Browser pages, not API: hidden from the OpenAPI document; every failure is a page with a clear
// message rather than a JSON error. The routes are `auth: 'none'` for the API's bearer hook
// because a signed-out visitor must see the sign-in form, not a 401; each handler resolves the
// cookie session itself.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { UserPrincipal } from '../platform/auth.js';
import { clock } from '../platform/clock.js';
import { ApiError } from '../platform/errors.js';
import type { App } from '../platform/http.js';
import { findUserById } from '../modules/users/users.service.js';
import type { UserCodeLookup } from '../modules/device/device.service.js';
import type { Services } from '../services.js';
import { createCookieSessions } from './cookie.session.js';
import { codeView, confirmView, enterCodeView, resultView, signInView, type Message } from './device.views.js';
import { sendPage } from './layout.js';
import { ssoStartHref } from './oidc.views.js';
import { nextAppPath } from './app-paths.js';

/** The throttle's counters: the browser session, and the client address. */
const attemptOf = (request: FastifyRequest, user: UserPrincipal) => ({ session: user.sessionId ?? user.userId, address: request.ip });

const FormText = (maxLength: number) => Type.Optional(Type.String({ maxLength }));

// `next` is bounded loosely here so that a value nextAppPath refuses (over 512 characters, say)
// is ignored rather than failing the whole form.
const PageQuery = Type.Object({ user_code: FormText(64), next: FormText(2048) });
const SignInForm = Type.Object(
  {
    email: FormText(254), password: FormText(256), user_code: FormText(64), next: FormText(2048), csrf: FormText(128),
    // the second step of a sign-in with two factors (codeView)
    code: FormText(32), ticket: FormText(256),
  },
  { additionalProperties: false },
);
const DecisionForm = Type.Object({ user_code: FormText(64), csrf: FormText(128) }, { additionalProperties: false });
const SignOutForm = Type.Object({ csrf: FormText(128) }, { additionalProperties: false });

const FORGED: Message = { kind: 'error', text: 'This form has expired or did not come from this site. Nothing was changed; please try again.' };
const INVALID_FORM: Message = { kind: 'error', text: 'The form could not be read. Please try again.' };

/** Why a code cannot be approved, as a status and a sentence a person can act on. */
function problemOf(state: UserCodeLookup['state']): { status: number; message: Message } {
  switch (state) {
    case 'expired':
      return { status: 410, message: { kind: 'error', text: 'That code has expired. Start the sign-in again in your terminal to get a new code.' } };
    case 'approved':
    case 'denied':
    case 'exchanged':
      return { status: 409, message: { kind: 'error', text: 'That code has already been used. Start the sign-in again in your terminal if you need a new one.' } };
    default:
      return { status: 404, message: { kind: 'error', text: 'That code is not valid. Check the code shown in your terminal and try again.' } };
  }
}

/**
 * A user code lookup by a signed-in person, or the 429 page when the wrong-code throttle (RFC 8628
 * section 5.1) makes this session or address wait: every code is refused until then, the right
 * one included, so guessing gains nothing.
 */
async function throttledCode(
  reply: FastifyReply, page: Parameters<typeof enterCodeView>[0], userCode: string | undefined, lookup: () => Promise<UserCodeLookup>,
): Promise<UserCodeLookup | null> {
  try {
    return await lookup();
  } catch (err) {
    if (!(err instanceof ApiError) || err.options.reason !== 'USER_CODE_THROTTLED') throw err;
    const wait = Number(err.options.headers?.['retry-after'] ?? 1);
    reply.header('retry-after', String(wait));
    const text = `Too many wrong codes from this browser or network. Wait ${wait < 90 ? `${wait} seconds` : `${Math.ceil(wait / 60)} minutes`} and try again; until then no code can be checked, not even the right one.`;
    await sendPage(reply, 429, 'Connect a device', enterCodeView({ ...page, userCode, message: { kind: 'error', text } }));
    return null;
  }
}

export function devicePageRoutes(app: App, s: Pick<Services, 'config' | 'db' | 'device' | 'sessions' | 'twoFactor'>): void {
  const cookies = createCookieSessions({ config: s.config, sessions: s.sessions });
  const { basePath } = cookies;
  const routeConfig = { auth: 'none' as const };

  async function signedIn(user: UserPrincipal) {
    const row = await findUserById(s.db, user.userId);
    return { basePath, email: row?.email ?? user.userId, csrf: cookies.csrfTokenFor(user) };
  }

  /**
   * The "Sign in with {name}" link when single sign-on is set up: the sign-in through the provider
   * comes back to the page this form would have led to (`next`, or this code's device page).
   */
  function ssoLink(extra: { userCode?: string | undefined; next?: string | undefined }) {
    const sso = s.config.oidc;
    if (!sso) return undefined;
    const back = extra.next ?? (extra.userCode ? `/device?user_code=${encodeURIComponent(extra.userCode)}` : '/device');
    return { name: sso.name, href: ssoStartHref(basePath, back) };
  }

  function showSignIn(request: FastifyRequest, reply: FastifyReply, status: number, extra: { userCode?: string | undefined; email?: string | undefined; next?: string | undefined; message?: Message } = {}) {
    return sendPage(reply, status, 'Sign in', signInView({ basePath, csrf: cookies.signInCsrfToken(request, reply), ...extra, sso: ssoLink(extra) }));
  }

  app.get('/device', {
    config: routeConfig,
    attachValidation: true,
    schema: { hide: true, querystring: PageQuery },
  }, async (request, reply) => {
    const input = request.validationError ? undefined : request.query.user_code?.trim() || undefined;
    // Only a path of the web app is followed after sign-in (never an open redirect).
    const next = request.validationError ? undefined : nextAppPath(request.query.next);
    const user = await cookies.cookieUser(request);
    if (!user) return showSignIn(request, reply, 200, { userCode: input, next });
    if (next) return reply.code(303).header('location', `${basePath}${next}`).header('cache-control', 'no-store').send();
    const page = await signedIn(user);
    if (!input) return sendPage(reply, 200, 'Connect a device', enterCodeView(page));
    const found = await throttledCode(reply, page, input, () => s.device.lookupUserCodeAs(attemptOf(request, user), input));
    if (!found) return reply;
    if (found.state === 'pending' && found.userCode && found.clientId && found.expiresAt) {
      const minutesLeft = Math.max(1, Math.ceil((found.expiresAt - clock.now()) / 60));
      return sendPage(reply, 200, 'Approve this device?', confirmView({ ...page, userCode: found.userCode, clientId: found.clientId, minutesLeft }));
    }
    const problem = problemOf(found.state);
    return sendPage(reply, problem.status, 'Connect a device', enterCodeView({ ...page, userCode: input, message: problem.message }));
  });

  app.post('/device/sign-in', {
    config: routeConfig,
    attachValidation: true,
    schema: { hide: true, body: SignInForm },
  }, async (request, reply) => {
    if (request.validationError || !request.body) return showSignIn(request, reply, 400, { message: INVALID_FORM });
    const { email, password, user_code: userCode, csrf, code, ticket } = request.body;
    const next = nextAppPath(request.body.next);
    if (!cookies.checkSignInCsrf(request, csrf)) return showSignIn(request, reply, 403, { userCode, email, next, message: FORGED });
    const throttledPage = (err: ApiError, text: string) => {
      for (const [name, value] of Object.entries(err.options.headers ?? {})) reply.header(name, value);
      return showSignIn(request, reply, 429, { userCode, email, next, message: { kind: 'error', text } });
    };
    let userId: string;
    if (ticket !== undefined) {
      // The second step: the ticket stands for the password checked a moment ago, in this browser.
      const ticketUser = cookies.openTwoFactorTicket(request, ticket);
      if (!ticketUser) {
        return showSignIn(request, reply, 422, { userCode, next, message: { kind: 'error', text: 'That sign-in took too long or did not come from this browser. Sign in again.' } });
      }
      const askAgain = (status: number, text: string) =>
        sendPage(reply, status, 'Two-factor sign-in', codeView({ basePath, csrf: cookies.signInCsrfToken(request, reply), ticket, userCode, next, message: { kind: 'error', text } }));
      if (!code?.trim()) return askAgain(422, 'Enter the code from your authenticator app.');
      try {
        await s.twoFactor.checkSignIn(ticketUser, code, request.ip);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        if (err.code === 'RESOURCE_EXHAUSTED') return throttledPage(err, 'Too many wrong codes for this account. Wait a few minutes and sign in again.');
        if (err.code !== 'UNAUTHENTICATED') throw err;
        return askAgain(422, 'That code is not right, or was used already. Enter the current code from your app, or an unused recovery code.');
      }
      userId = ticketUser;
    } else {
      if (!email || !password) {
        return showSignIn(request, reply, 422, { userCode, email, next, message: { kind: 'error', text: 'Enter your email and password.' } });
      }
      try {
        userId = await s.sessions.checkPassword(email, password, request.ip);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        if (err.code === 'RESOURCE_EXHAUSTED') return throttledPage(err, 'Too many failed sign-ins for this email. Wait a few minutes and try again.');
        if (err.code !== 'UNAUTHENTICATED') throw err;
        return showSignIn(request, reply, 422, { userCode, email, next, message: { kind: 'error', text: 'Wrong email or password.' } });
      }
      if (await s.twoFactor.hasActiveFactor(userId)) {
        // The password was right; the code comes in a second form, which carries a ticket rather than the password.
        return sendPage(reply, 200, 'Two-factor sign-in', codeView({ basePath, csrf: cookies.signInCsrfToken(request, reply), ticket: cookies.twoFactorTicket(request, userId), userCode, next }));
      }
    }
    await cookies.signInBrowser(reply, userId);
    const target = next ? `${basePath}${next}` : userCode ? `${basePath}/device?user_code=${encodeURIComponent(userCode)}` : `${basePath}/device`;
    return reply.code(303).header('location', target).header('cache-control', 'no-store').send();
  });

  for (const decision of ['approved', 'denied'] as const) {
    const path = decision === 'approved' ? '/device/approve' : '/device/deny';
    app.post(path, {
      config: routeConfig,
      attachValidation: true,
      schema: { hide: true, body: DecisionForm },
    }, async (request, reply) => {
      const body = request.validationError ? undefined : request.body;
      const user = await cookies.cookieUser(request);
      if (!user) {
        const message: Message = { kind: 'error', text: 'You are signed out. Sign in again; nothing was approved or denied yet.' };
        return showSignIn(request, reply, 403, { userCode: body?.user_code, message });
      }
      const page = await signedIn(user);
      if (!body) return sendPage(reply, 400, 'Connect a device', enterCodeView({ ...page, message: INVALID_FORM }));
      if (!cookies.checkCsrf(user, body.csrf)) {
        return sendPage(reply, 403, 'Connect a device', enterCodeView({ ...page, userCode: body.user_code, message: FORGED }));
      }
      const result = await throttledCode(reply, page, body.user_code, () => s.device.decideUserCodeAs(attemptOf(request, user), body.user_code ?? '', user.userId, decision));
      if (!result) return reply;
      if (result.state === decision) {
        return decision === 'approved'
          ? sendPage(reply, 200, 'Device approved', resultView({ ...page, title: 'Device approved', message: { kind: 'ok', text: 'Device approved. You can close this window and return to your terminal.' } }))
          : sendPage(reply, 200, 'Request denied', resultView({ ...page, title: 'Request denied', message: { kind: 'ok', text: 'Request denied. The device was not given access to your account.' } }));
      }
      const problem = problemOf(result.state);
      return sendPage(reply, problem.status, 'Connect a device', enterCodeView({ ...page, userCode: body.user_code, message: problem.message }));
    });
  }

  app.post('/device/sign-out', {
    config: routeConfig,
    attachValidation: true,
    schema: { hide: true, body: SignOutForm },
  }, async (request, reply) => {
    const user = await cookies.cookieUser(request);
    if (user) {
      const csrf = request.validationError ? undefined : request.body?.csrf;
      if (!cookies.checkCsrf(user, csrf)) return sendPage(reply, 403, 'Connect a device', enterCodeView({ ...(await signedIn(user)), message: FORGED }));
      await cookies.signOutBrowser(reply, user);
    }
    return reply.code(303).header('location', `${basePath}/device`).header('cache-control', 'no-store').send();
  });
}
