// Two-factor sign-in, managed from the account (issue 34): /v1/me/two_factor. The rules are in
// two-factor.service.ts; the descriptions here are what clients read of them.
import { Type } from 'typebox';
import { userOf } from '../../platform/auth.js';
import { bearerSecurity, responses, StringEnum, verbPath, type App } from '../../platform/http.js';
import type { Services } from '../../services.js';
import { assertSessionCredential, RECOVERY_CODE_COUNT, TOTP_PERIOD_SECONDS, TOTP_WINDOW } from './two-factor.service.js';

const tags = ['identity'];

const MANAGED =
  'Needs a session (a session token from `POST /v1/auth/sessions` or `svc login`, or the web app\'s cookie): workspace API tokens ' +
  '(403, reason USER_CREDENTIAL_REQUIRED) and other user credentials such as external JWTs (403, reason SESSION_CREDENTIAL_REQUIRED) may not manage ' +
  'an account\'s factors.';

const Code = Type.String({
  minLength: 1, maxLength: 32,
  description: `a 6-digit code from the authenticator app (the current one, or the one ${TOTP_PERIOD_SECONDS} seconds before or after); spaces are ignored`,
});

export const TwoFactorStatus = Type.Object(
  {
    enabled: Type.Boolean({ description: 'true: every password sign-in of this account also asks for a code' }),
    pending: Type.Boolean({ description: 'true: set up (POST /v1/me/two_factor:enroll) but not confirmed with a code yet; asks nothing at sign-in' }),
    enabled_at: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Unix seconds when it was confirmed; null when not enabled' }),
    recovery_codes_remaining: Type.Integer({ minimum: 0, description: `unused recovery codes (of ${RECOVERY_CODE_COUNT}); make new ones before they run out` }),
  },
  {
    $id: 'TwoFactorStatus', description: 'Whether two-factor sign-in is on for your account.',
    examples: [{ enabled: true, pending: false, enabled_at: 1767225600, recovery_codes_remaining: 9 }],
  },
);

export const TotpEnrollment = Type.Object(
  {
    secret: Type.String({ description: 'the shared secret in base32 (160 bits), to type into an authenticator app that cannot read the URI. Shown only here; stored encrypted' }),
    otpauth_uri: Type.String({ description: 'the same as an `otpauth://totp/...` URI (the Key URI format authenticator apps read, usually from a QR code)' }),
    issuer: Type.String({ description: 'the name the app shows above the code' }),
    account: Type.String({ description: 'the account name the app shows: your e-mail' }),
    algorithm: StringEnum(['SHA1'], { description: 'HMAC algorithm: SHA1, which every authenticator app reads' }),
    digits: Type.Integer({ description: 'digits of a code (6)' }),
    period: Type.Integer({ description: 'seconds a code lasts (30)' }),
  },
  {
    $id: 'TotpEnrollment',
    description: 'A new TOTP secret (RFC 6238), pending until confirmed with a code from it (POST /v1/me/two_factor:confirm).',
    examples: [{
      secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP', otpauth_uri: 'otpauth://totp/svc%20svc.example.com:ada%40example.com?issuer=svc%20svc.example.com&secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&algorithm=SHA1&digits=6&period=30',
      issuer: 'svc svc.example.com', account: 'ada@example.com', algorithm: 'SHA1', digits: 6, period: 30,
    }],
  },
);

export const RecoveryCodes = Type.Object(
  {
    recovery_codes: Type.Array(Type.String(), {
      description: `${RECOVERY_CODE_COUNT} one-time codes (xxxx-xxxx-xxxx) that sign in in place of the app's code, each once. Shown only here: store them somewhere safe. Making new ones voids these`,
    }),
    enabled_at: Type.Optional(Type.Integer({ minimum: 0, description: 'Unix seconds when two-factor sign-in was turned on (in the confirmation\'s answer)' })),
  },
  {
    $id: 'TwoFactorRecoveryCodes', description: 'Recovery codes, shown once.',
    examples: [{ recovery_codes: ['k7pq-2mzx-9hfa', 'c3vw-8ntr-d4ke'], enabled_at: 1767225600 }],
  },
);

const ConfirmBody = Type.Object(
  { code: Code },
  { additionalProperties: false, description: 'A current code of the secret just enrolled.', examples: [{ code: '492039' }] },
);

const ProofBody = Type.Object(
  {
    password: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'your current password' })),
    code: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'or a current code from the authenticator app, or an unused recovery code (it is spent)' })),
  },
  { additionalProperties: false, description: 'Exactly one of password or code: proof that it is you.', examples: [{ password: 'correct horse battery staple' }, { code: '492039' }] },
);

export function twoFactorRoutes(app: App, s: Pick<Services, 'twoFactor'>): void {
  const base = '/v1/me/two_factor';

  app.get(base, {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getTwoFactor', summary: 'Is two-factor sign-in on for you',
      description: 'Needs a user credential; a workspace API token is 403 (reason USER_CREDENTIAL_REQUIRED). Says nothing secret.',
      response: responses({ 200: TwoFactorStatus }, [403]),
    },
  }, async (request) => s.twoFactor.status(userOf(request).userId));

  app.post(verbPath(base, 'enroll'), {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'enrollTwoFactor', summary: 'Set up an authenticator app (step 1 of 2)',
      description:
        `${MANAGED} Makes a new TOTP secret (RFC 6238: SHA-1, 6 digits, 30-second steps) and returns it once, as base32 and as an ` +
        '`otpauth://` URI for the app (the web app\'s account page shows both). It stays pending, and sign-in asks nothing, until ' +
        '`POST /v1/me/two_factor:confirm` with a code from the app; asking again while pending makes another secret and voids the ' +
        'first. Already on: 409 (reason TWO_FACTOR_ALREADY_ENABLED; remove it first to move to another app). The secret is stored encrypted ' +
        'with the service key and never shown again.',
      response: responses({ 200: TotpEnrollment }, [403, 409]),
    },
  }, async (request, reply) => {
    const user = userOf(request);
    assertSessionCredential(user);
    reply.header('cache-control', 'no-store');
    return s.twoFactor.enroll(user.userId);
  });

  app.post(verbPath(base, 'confirm'), {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'confirmTwoFactor', summary: 'Turn two-factor sign-in on (step 2 of 2)',
      description:
        `${MANAGED} Checks a current code of the pending secret (one step of ${TOTP_PERIOD_SECONDS} seconds either side is accepted ` +
        `for clock drift, ${TOTP_WINDOW} step) and turns two-factor sign-in on: from now on every password sign-in (the API, the web ` +
        `app, the device approval page) also asks for a code. Answers ${RECOVERY_CODE_COUNT} recovery codes, once. A wrong code is ` +
        '400 (reason TWO_FACTOR_CODE_INVALID, field body.code) and changes nothing; wrong codes are throttled per account and address like ' +
        'sign-ins (429, reason SIGN_IN_THROTTLED, with retry-after). Nothing enrolled: 422 (reason TWO_FACTOR_NOT_PENDING); already on: 409 ' +
        'TWO_FACTOR_ALREADY_ENABLED. The account gets a `two_factor_enabled` notification, and each of its workspaces\' audit logs ' +
        'a `user.two_factor.enable` event.',
      body: ConfirmBody,
      response: responses({ 200: RecoveryCodes }, [400, 403, 409, 422, 429]),
    },
  }, async (request, reply) => {
    const user = userOf(request);
    assertSessionCredential(user);
    reply.header('cache-control', 'no-store');
    return s.twoFactor.confirm(user.userId, request.body.code, request.ip, request.id);
  });

  app.post(verbPath(base, 'disable'), {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'disableTwoFactor', summary: 'Turn two-factor sign-in off',
      description:
        `${MANAGED} Needs proof that it is you: your password, or a current code (an unused recovery code works too, and is spent); ` +
        'exactly one (400, reason ONE_OF_PASSWORD_CODE). A wrong password is 400 (reason INVALID_CREDENTIALS), a wrong code 400 (reason TWO_FACTOR_CODE_INVALID); ' +
        'both are throttled like sign-ins (429, reason SIGN_IN_THROTTLED). Removes the factor (also a pending one) and its recovery codes: ' +
        'sign-in asks for the password only again, and workspaces that require two factors refuse you (403, reason TWO_FACTOR_REQUIRED) until ' +
        'you set one up again. Nothing set up: 422 (reason TWO_FACTOR_NOT_ENABLED). The account gets a `two_factor_disabled` notification, ' +
        'and its workspaces\' audit logs a `user.two_factor.disable` event.',
      body: ProofBody,
      response: responses({ 200: TwoFactorStatus }, [400, 403, 422, 429]),
    },
  }, async (request) => {
    const user = userOf(request);
    assertSessionCredential(user);
    return s.twoFactor.disable(user.userId, request.body, request.ip, request.id);
  });

  app.post(verbPath(`${base}/recovery_codes`, 'regenerate'), {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'regenerateRecoveryCodes', summary: 'New recovery codes',
      description:
        `${MANAGED} Needs your password or a current code, as turning it off does (the same refusals). Answers ${RECOVERY_CODE_COUNT} ` +
        'new recovery codes, once; the earlier ones stop working at once. Two-factor sign-in off: 422 (reason TWO_FACTOR_NOT_ENABLED).',
      body: ProofBody,
      response: responses({ 200: RecoveryCodes }, [400, 403, 422, 429]),
    },
  }, async (request, reply) => {
    const user = userOf(request);
    assertSessionCredential(user);
    reply.header('cache-control', 'no-store');
    return s.twoFactor.regenerateRecoveryCodes(user.userId, request.body, request.ip);
  });
}
