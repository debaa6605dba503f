// Password reset by an e-mailed link (issue 34): ask, see what a link is for, use it.
import { Type } from 'typebox';
import { responses, verbPath, type App } from '../../platform/http.js';
import type { Services } from '../../services.js';
import { PasswordChanged } from './sessions.routes.js';

const tags = ['identity'];

const Token = Type.String({ minLength: 1, maxLength: 64, description: 'the token after `#` in the link of the e-mail' });

const RequestResetBody = Type.Object(
  { email: Type.String({ minLength: 3, maxLength: 254, description: 'the e-mail address of the account' }) },
  { additionalProperties: false, description: 'Whose password to reset.', examples: [{ email: 'ada@example.com' }] },
);

export const ResetRequested = Type.Object(
  { message: Type.String({ description: 'what happens next, the same whether an account has this address or not' }) },
  { $id: 'PasswordResetRequested', description: 'The request was taken.', examples: [{ message: 'if an account has this address, a link to choose a new password is on its way; it works once, for 30 minutes' }] },
);

const ResolveResetBody = Type.Object({ token: Token }, { additionalProperties: false, description: 'The link\'s token.', examples: [{ token: 'Q7wE9rT1yU3iO5pA7sD9fG1hJ3kL5zX7' }] });

export const ResetPreview = Type.Object(
  {
    email: Type.String({ description: 'the account whose password the link sets' }),
    expires_at: Type.Integer({ description: 'Unix seconds: the link stops working then' }),
  },
  { $id: 'PasswordResetPreview', description: 'What a working link is for.', examples: [{ email: 'ada@example.com', expires_at: 1767227400 }] },
);

const CompleteResetBody = Type.Object(
  { token: Token, new_password: Type.String({ minLength: 8, maxLength: 256, description: '8-256 characters' }) },
  { additionalProperties: false, description: 'The link\'s token and the new password.', examples: [{ token: 'Q7wE9rT1yU3iO5pA7sD9fG1hJ3kL5zX7', new_password: 'correct horse battery staple' }] },
);

export function passwordResetRoutes(app: App, s: Pick<Services, 'passwordResets'>): void {
  app.post('/v1/password_resets', {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'requestPasswordReset', summary: 'Ask for a link to choose a new password',
      description:
        'Needs no credential. Answers 200 and the same message whether an account has this address or not (so nobody learns ' +
        'which addresses have one); an account that has it and is not disabled is e-mailed a link (`{public URL}/reset-password#token`) ' +
        'that works once, for 30 minutes, and replaces any earlier link. The token is stored only as its SHA-256. At most 3 asks ' +
        'an hour per address and 10 per client address: beyond, 429 (reason PASSWORD_RESET_THROTTLED, with retry-after). With ' +
        'the local mail driver (SVC_MAIL=local, the default) the operator reads the message with `svc admin mail list`.',
      body: RequestResetBody,
      response: responses({ 200: ResetRequested }, [400, 429]),
    },
  }, async (request, reply) => {
    await s.passwordResets.request(request.body.email, request.ip);
    reply.header('cache-control', 'no-store');
    return reply.code(200).send({ message: 'if an account has this address, a link to choose a new password is on its way; it works once, for 30 minutes' });
  });

  app.post(verbPath('/v1/password_resets', 'resolve'), {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'resolvePasswordReset', summary: 'What a reset link is for',
      description:
        'Needs no credential: the page the link opens sends the token in the body (never in a URL that logs keep). Answers the ' +
        'account\'s e-mail and when the link stops working. A link that does not work (unknown, used, replaced, expired, or of a ' +
        'disabled account) is 404, all alike.',
      body: ResolveResetBody,
      response: responses({ 200: ResetPreview }, [400, 404]),
    },
  }, async (request, reply) => {
    const preview = await s.passwordResets.resolve(request.body.token);
    reply.header('cache-control', 'no-store');
    return { email: preview.email, expires_at: preview.expiresAt };
  });

  app.post(verbPath('/v1/password_resets', 'complete'), {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'completePasswordReset', summary: 'Choose a new password with a reset link',
      description:
        'Needs no credential: the token proves the link. The new password must be 8-256 characters (400 INVALID_PASSWORD, the ' +
        'link still works). Then the password is replaced, every session of the account is signed out at once (API tokens are ' +
        'the workspaces\' and stay), the link is used up, and the account gets a `password_changed` notification. Sign in next. A ' +
        'link that does not work is 404, as for `:resolve`; of two uses at once, one succeeds.',
      body: CompleteResetBody,
      response: responses({ 200: PasswordChanged }, [400, 404]),
    },
  }, async (request) => {
    const done = await s.passwordResets.complete(request.body.token, request.body.new_password);
    return { revoked_sessions: done.revokedSessions };
  });
}
