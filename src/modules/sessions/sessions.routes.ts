import { Type } from 'typebox';
import { BILLING_MODES } from '../../config.js';
import { CSRF_HEADER, SESSION_COOKIE, userOf } from '../../platform/auth.js';
import { ApiError, notFound, permissionDenied } from '../../platform/errors.js';
import { bearerSecurity, NoContent, refTo, responses, StringEnum, type App } from '../../platform/http.js';
import type { Services } from '../../services.js';
import { findUserById, NOTIFICATION_EMAIL_CHOICES, type UserRow } from '../users/users.service.js';

const tags = ['identity'];

const SignInBody = Type.Object(
  {
    email: Type.String({ minLength: 3, maxLength: 254, description: 'the account e-mail' }),
    password: Type.String({ minLength: 1, maxLength: 256, description: 'the account password' }),
    code: Type.Optional(Type.String({
      minLength: 1, maxLength: 32,
      description: 'the second factor, for an account with two-factor sign-in on: the 6-digit code of its authenticator app, or one of its ' +
        'unused recovery codes (spent by this sign-in). Ignored for an account without it. Send it when a sign-in answered 401 with reason TWO_FACTOR_CODE_REQUIRED',
    })),
  },
  {
    additionalProperties: false, description: 'E-mail and password of an account, and its second factor when it has one.',
    examples: [{ email: 'ada@example.com', password: 'correct horse battery staple' }, { email: 'ada@example.com', password: 'correct horse battery staple', code: '492039' }],
  },
);

const TWO_FACTOR_AT_SIGN_IN =
  'An account with two-factor sign-in on (POST /v1/me/two_factor:enroll) also needs `code`; only once the password is right, a ' +
  'sign-in without one is 401 (reason TWO_FACTOR_CODE_REQUIRED: ask the person for the code, then send all three again), and a wrong code, ' +
  'or one used already (each TOTP code and each recovery code signs in once), 401 (reason TWO_FACTOR_CODE_INVALID). Wrong codes are throttled ' +
  'per account: after 5, growing delays as for passwords (429, reason SIGN_IN_THROTTLED, with retry-after).';

const SignUpBody = Type.Object(
  {
    email: Type.String({ minLength: 3, maxLength: 254, description: 'the account e-mail (stored lowercased)' }),
    password: Type.String({ minLength: 8, maxLength: 256, description: '8-256 characters' }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'how the person is called' })),
    offer: Type.Optional(Type.String({
      minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$',
      description: 'the short hash of the offer link the person signs up through (`/i/{short_hash}`): with SVC_SIGNUP closed or invite, the sign-up is taken when that offer can be ordered now by this e-mail',
    })),
  },
  {
    additionalProperties: false, description: 'A new account.',
    examples: [{ email: 'ada@example.com', password: 'correct horse battery staple', name: 'Ada' }, { email: 'ada@example.com', password: 'correct horse battery staple', offer: 'q3Xk9fPz' }],
  },
);

const ChangePasswordBody = Type.Object(
  {
    current_password: Type.String({ minLength: 1, maxLength: 256, description: 'the password the account has now' }),
    new_password: Type.String({ minLength: 8, maxLength: 256, description: '8-256 characters, not the current one' }),
  },
  {
    additionalProperties: false, description: 'The current password, and the new one.',
    examples: [{ current_password: 'change me now', new_password: 'correct horse battery staple' }],
  },
);

export const PasswordChanged = Type.Object(
  { revoked_sessions: Type.Integer({ minimum: 0, description: 'how many other sessions of the account were signed out' }) },
  { $id: 'PasswordChanged', description: 'The password was changed.', examples: [{ revoked_sessions: 2 }] },
);

export const AuthSettings = Type.Object(
  {
    signup: StringEnum(['closed', 'invite', 'open'], {
      description: 'SVC_SIGNUP: `open`, anyone may make an account (POST /v1/users); `closed` and `invite`, accounts come from invitations, the operator and offers\' links',
    }),
    billing: StringEnum(BILLING_MODES, {
      description:
        'SVC_BILLING: `operator`, a workspace\'s plan is raised only by the operator (`svc admin workspaces set-plan`); `payments`, its owners ' +
        'and admins raise it by paying the plan\'s price through the payment provider (:changeTier answers with a checkout). Either way its admins may lower or cancel it',
    }),
    oidc: Type.Union([
      Type.Object({
        name: Type.String({ description: 'SVC_OIDC_NAME: the provider\'s name as the button says it ("Sign in with {name}")' }),
        start_path: Type.String({ description: 'the path that starts a sign-in through the provider (`/v1/auth/oidc/start`); add `?next=` with the local path to return to' }),
      }, { description: 'single sign-on with the operator\'s OpenID provider' }),
      Type.Null(),
    ], { description: 'single sign-on (SVC_OIDC_ISSUER): how to sign in through the operator\'s OpenID provider, or null when it is not set up' }),
  },
  {
    $id: 'AuthSettings', description: 'How people get an account and a plan on this service: what the sign-in and plan pages tell them.',
    examples: [{ signup: 'closed', billing: 'operator', oidc: null }, { signup: 'closed', billing: 'operator', oidc: { name: 'Acme SSO', start_path: '/v1/auth/oidc/start' } }],
  },
);

export const CreatedUser = Type.Object(
  {
    id: Type.String({ description: 'usr_ id' }),
    email: Type.String(),
    name: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.Integer({ minimum: 0, description: 'Unix seconds' }),
  },
  { $id: 'CreatedUser', description: 'A new account; sign in with POST /v1/auth/sessions (or the web app) to use it.', examples: [{ id: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', email: 'ada@example.com', name: 'Ada', created_at: 1767225600 }] },
);

export const IssuedSession = Type.Object({
  token: Type.String({ description: 'the 32-character session token; shown only here' }),
  user_id: Type.String(),
  expires_at: Type.Integer({ description: 'Unix seconds; renewed to one year after each use' }),
}, {
  $id: 'SessionToken',
  description: 'The new session token',
  examples: [{ token: 'Q7wE9rT1yU3iO5pA7sD9fG1hJ3kL5zX7', user_id: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', expires_at: 1798761600 }],
});

export const Me = Type.Object(
  {
    id: Type.String({ description: 'usr_ id' }),
    email: Type.String(),
    name: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.Integer(),
    credential: StringEnum(['session', 'cookie', 'external_jwt'], {
      description: 'how the caller authenticated',
    }),
    notification_email: StringEnum(NOTIFICATION_EMAIL_CHOICES, {
      description: 'which of your notifications are also e-mailed to you: none (the default), important (warnings and errors: failed operations, expiring tokens, security notices) or all',
    }),
    instance_admin: Type.Boolean({ description: 'whether you administer this service (its Users page and /v1/admin routes): an account given the role by the operator, or named in SVC_ADMIN_EMAILS' }),
    two_factor: Type.Boolean({ description: 'true when two-factor sign-in is on for the account (GET /v1/me/two_factor tells more)' }),
  },
  {
    $id: 'Me',
    description: 'The signed-in user.',
    examples: [{ id: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', email: 'ada@example.com', name: 'Ada', created_at: 1767225600, credential: 'session', notification_email: 'important', instance_admin: false, two_factor: false }],
  },
);

export const BrowserSession = Type.Object({
  user_id: Type.String(),
  expires_at: Type.Integer({ description: 'Unix seconds; renewed to one year after each use' }),
}, {
  $id: 'BrowserSession',
  description: 'The web app\'s new session: its token is only in the HttpOnly cookie, never in the body.',
  examples: [{ user_id: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', expires_at: 1798761600 }],
});

const UpdateMeBody = Type.Object(
  {
    name: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()], { description: 'how you are called; null clears it' })),
    notification_email: Type.Optional(StringEnum(NOTIFICATION_EMAIL_CHOICES, { description: 'which notifications are also e-mailed: none, important or all' })),
  },
  { additionalProperties: false, minProperties: 1, description: 'What to change: at least one field.', examples: [{ notification_email: 'important' }] },
);

async function meOf(s: Pick<Services, 'users' | 'twoFactor'>, user: UserRow, via: 'session' | 'cookie' | 'external_jwt') {
  return {
    id: user.id, email: user.email, name: user.name, created_at: user.created_at, credential: via,
    notification_email: user.notification_email, instance_admin: s.users.adminSource(user) !== null, two_factor: await s.twoFactor.hasActiveFactor(user.id),
  };
}

const COOKIE_MAX_AGE = 365 * 24 * 3600;

/** Set-Cookie for the session cookie: HttpOnly, SameSite=Lax, under the public URL's path; Secure over https. */
function sessionCookie(s: Pick<Services, 'config'>, token: string | null): string {
  const url = new URL(s.config.publicUrl);
  const path = `${url.pathname.replace(/\/+$/, '')}/`;
  const attrs = [`Path=${path}`, 'HttpOnly', 'SameSite=Lax', ...(url.protocol === 'https:' ? ['Secure'] : [])];
  return token === null
    ? [`${SESSION_COOKIE}=`, 'Max-Age=0', ...attrs].join('; ')
    : [`${SESSION_COOKIE}=${token}`, `Max-Age=${COOKIE_MAX_AGE}`, ...attrs].join('; ');
}

export function sessionRoutes(app: App, s: Pick<Services, 'config' | 'db' | 'sessions' | 'users' | 'twoFactor'>): void {
  app.post('/v1/auth/browser_session', {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'createBrowserSession', summary: 'Sign the web app in with e-mail and password',
      description:
        'Signs a browser in: the new session token goes into the `svc_session` cookie (HttpOnly, SameSite=Lax, Secure ' +
        'over https), never into the body, so the app\'s scripts cannot read it. The call must carry the `x-svc-csrf` ' +
        'header, so another site cannot sign a browser into its own account; so must every later call with the cookie ' +
        'except GET and HEAD. Sign out with `DELETE /v1/auth/sessions/current`. Wrong credentials are 401 (reason INVALID_CREDENTIALS), and failed ' +
        `sign-ins are throttled as for \`POST /v1/auth/sessions\`. ${TWO_FACTOR_AT_SIGN_IN}`,
      body: SignInBody,
      response: responses({ 201: BrowserSession }, [400, 403, 429]),
    },
  }, async (request, reply) => {
    if (request.headers[CSRF_HEADER] === undefined) {
      throw permissionDenied(`signing a browser in needs the ${CSRF_HEADER} header (the web app adds it)`, 'CSRF_HEADER_REQUIRED');
    }
    const session = await s.sessions.signIn(request.body.email, request.body.password, request.ip, request.body.code);
    reply.header('cache-control', 'no-store');
    reply.header('set-cookie', sessionCookie(s, session.token));
    return reply.code(201).send({ user_id: session.user_id, expires_at: session.expires_at });
  });

  app.post('/v1/auth/sessions', {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'createSession', summary: 'Sign in with e-mail and password',
      description:
        'Returns a session token (a broad credential) for scripts and tests; the CLI uses the device grant instead. ' +
        'Wrong credentials are 401 (reason INVALID_CREDENTIALS). Failed sign-ins are throttled with growing delays, never a lock: after 5 failures for ' +
        'one account from one client address, 10 for one account (counting only against addresses that have failed for it), ' +
        'or 20 from one address across accounts, the next attempt from that address must wait 1 s, then 2 s, 4 s, ... ' +
        'at most 15 minutes (429 SIGN_IN_THROTTLED with retry-after). The right password from another address is never ' +
        `delayed by these failures; counts start again an hour after the last failure. ${TWO_FACTOR_AT_SIGN_IN}`,
      body: SignInBody,
      response: responses({ 201: IssuedSession }, [400, 429]),
    },
  }, async (request, reply) => {
    const session = await s.sessions.signIn(request.body.email, request.body.password, request.ip, request.body.code);
    reply.header('cache-control', 'no-store');
    return reply.code(201).send({ token: session.token, user_id: session.user_id, expires_at: session.expires_at });
  });

  app.post('/v1/users', {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'createUser', summary: 'Sign up',
      description:
        'Creates an account. With SVC_SIGNUP=open anyone may; with `closed` (the default) or `invite`, only a customer signing up ' +
        'through an offer\'s link (`offer`: its short hash; the offer must be orderable now and, when it names the e-mails that ' +
        'may order, name this one): anything else is 403 SIGNUP_CLOSED, before anything is written (accounts then come from ' +
        'invitations, POST /v1/invitations:accept, and from `svc admin create-user`). An e-mail already taken is 409 EMAIL_TAKEN. The password is stored as an ' +
        'scrypt hash. No session is issued: sign in next.',
      body: SignUpBody,
      response: responses({ 201: CreatedUser }, [400, 403, 409]),
    },
  }, async (request, reply) => {
    const { email, password, name, offer } = request.body;
    const user = await s.users.signUp({ email, password, name: name ?? null, ...(offer !== undefined ? { offer } : {}) });
    reply.header('location', '/v1/me');
    return reply.code(201).send({ id: user.id, email: user.email, name: user.name, created_at: user.created_at });
  });

  app.get('/v1/auth/settings', {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'getAuthSettings', summary: 'How accounts and plans are given here',
      description:
        'Needs no credential: the sign-in page reads it to tell a person how to get an account (SVC_SIGNUP) and whether to offer ' +
        'single sign-on (SVC_OIDC_ISSUER, SVC_OIDC_NAME), the plan page how a plan is raised (SVC_BILLING). Says nothing about any account.',
      response: { 200: refTo(AuthSettings) },
    },
  }, async () => ({
    signup: s.config.signup,
    billing: s.config.billing,
    oidc: s.config.oidc ? { name: s.config.oidc.name, start_path: `${new URL(s.config.publicUrl).pathname.replace(/\/+$/, '')}/v1/auth/oidc/start` } : null,
  }));

  app.delete('/v1/auth/sessions/current', {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'deleteCurrentSession', summary: 'Log out',
      description: 'Revokes the session token used for this call (or the web app\'s session cookie, which is cleared); it stops working at once.',
      response: responses({ 204: NoContent }, [403, 422]),
    },
  }, async (request, reply) => {
    const user = userOf(request);
    if (!user.sessionId) throw new ApiError('FAILED_PRECONDITION', 'this credential is not a session token', { reason: 'NOT_A_SESSION' });
    await s.sessions.revokeSession(user.sessionId);
    if (user.via === 'cookie') reply.header('set-cookie', sessionCookie(s, null));
    return reply.code(204).send();
  });

  app.post('/v1/me/password', {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'changePassword', summary: 'Change your password',
      description:
        'Needs a user credential (a session token, the web app\'s cookie, a user JWT); a workspace API token is 403. The current ' +
        'password is checked as a sign-in checks it: a wrong one is 400 (reason INVALID_CREDENTIALS, field body.current_password) ' +
        'and counts toward the same throttle (429 SIGN_IN_THROTTLED with retry-after). The new one must be 8-256 characters and ' +
        'not the current one (400 INVALID_PASSWORD). Then every other session of the account is signed out at once (the one that ' +
        'asked stays signed in; API tokens are the workspaces\' and stay), and the account gets a `password_changed` notification.',
      body: ChangePasswordBody,
      response: responses({ 200: PasswordChanged }, [400, 403, 429]),
    },
  }, async (request) => {
    const principal = userOf(request);
    const { revokedSessions } = await s.sessions.changePassword(
      { userId: principal.userId, sessionId: principal.sessionId ?? null }, request.body.current_password, request.body.new_password, request.ip,
    );
    return { revoked_sessions: revokedSessions };
  });

  app.get('/v1/me', {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getMe', summary: 'The signed-in user',
      description: 'Needs a user credential; a workspace API token is 403.',
      response: responses({ 200: Me }, [403]),
    },
  }, async (request) => {
    const principal = userOf(request);
    const user = await findUserById(s.db, principal.userId);
    if (!user) throw notFound('user');
    return meOf(s, user, principal.via);
  });

  app.patch('/v1/me', {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'updateMe', summary: 'Change your name or which notifications are e-mailed',
      description:
        'Needs a user credential; a workspace API token is 403. `notification_email` says which of your notifications are also ' +
        'sent to your e-mail address through the service\'s mail driver (SVC_MAIL): none, important (warnings and errors) or all.',
      body: UpdateMeBody,
      response: responses({ 200: Me }, [400, 403]),
    },
  }, async (request) => {
    const principal = userOf(request);
    const { name, notification_email } = request.body;
    await s.users.updateProfile(principal.userId, { ...(name !== undefined ? { name } : {}), ...(notification_email !== undefined ? { notification_email } : {}) });
    const user = await findUserById(s.db, principal.userId);
    if (!user) throw notFound('user');
    return meOf(s, user, principal.via);
  });
}
