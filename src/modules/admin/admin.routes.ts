// The instance's administration over HTTP (issue 34): instance admins list, disable, enable and
// delete accounts, give and take the admin role, make password reset links, and read the mail
// outbox. Whether the caller is an instance admin is decided on every request.
import { Type } from 'typebox';
import { userOf } from '../../platform/auth.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import { bearerSecurity, responses, StringEnum, verbPath, type App } from '../../platform/http.js';
import type { FastifyRequest } from 'fastify';
import type { Services } from '../../services.js';

const tags = ['users'];
const mailTags = ['mail'];

const ADMIN_NOTE = 'Needs a user credential of an instance admin (granted with `svc admin users grant-admin`, or named in SVC_ADMIN_EMAILS): anyone else is 403 (reason INSTANCE_ADMIN_REQUIRED).';

const OwnedWorkspace = Type.Object({
  id: Type.String({ description: 'ws_ id' }),
  name: Type.String(),
  slug: Type.String(),
}, { description: 'a workspace the account owns' });

export const AdminUser = Type.Object(
  {
    id: Type.String({ description: 'usr_ id' }),
    email: Type.String(),
    name: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.Integer({ description: 'Unix seconds' }),
    disabled_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix seconds: since when the account is disabled (none of its credentials works); null when it is not' }),
    admin_source: Type.Union([StringEnum(['granted', 'config']), Type.Null()], {
      description: 'why it is an instance admin: granted (by `svc admin users grant-admin` or an admin), config (SVC_ADMIN_EMAILS); null when it is not one',
    }),
    owned_workspaces: Type.Array(OwnedWorkspace, { description: 'the workspaces it owns: an account that owns one cannot be deleted' }),
  },
  {
    $id: 'AdminUser', description: 'An account, as the instance\'s admins see it.',
    examples: [{ id: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', email: 'ada@example.com', name: 'Ada', created_at: 1767225600, disabled_at: null, admin_source: null, owned_workspaces: [{ id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', name: 'Acme', slug: 'acme' }] }],
  },
);

const UserParams = Type.Object({ user_id: Type.String({ minLength: 1, maxLength: 64, description: 'usr_ id (anything else is no account: 404)' }) }, { additionalProperties: false });

export const ResetLink = Type.Object(
  {
    email: Type.String({ description: 'the account' }),
    url: Type.String({ description: 'the link: give it to the person by a channel you trust; it works once, for 30 minutes, and replaces earlier links' }),
    expires_at: Type.Integer({ description: 'Unix seconds' }),
  },
  { $id: 'PasswordResetLink', description: 'A one-time link to choose a new password, made by an admin; nothing is e-mailed.', examples: [{ email: 'ada@example.com', url: 'https://svc.example.com/reset-password#Q7wE9rT1yU3iO5pA7sD9fG1hJ3kL5zX7', expires_at: 1767227400 }] },
);

export const MailMessage = Type.Object(
  {
    id: Type.String({ description: 'mail_ id' }),
    to: Type.String(),
    user_id: Type.Union([Type.String(), Type.Null()], { description: 'the account it went to' }),
    kind: StringEnum(['password_reset', 'notification', 'invitation'], { description: 'why it was sent: a password reset link, a notification the person chose to receive by e-mail, or an invitation to a workspace' }),
    subject: Type.String(),
    body: Type.Union([Type.String(), Type.Null()], { description: 'the text; kept by the local driver, dropped once another driver sent it or gave it up' }),
    state: StringEnum(['queued', 'sent', 'failed'], { description: 'queued (waiting or retrying), sent, or failed (refused for good, or after 10 attempts)' }),
    driver: Type.Union([Type.String(), Type.Null()], { description: 'the driver that handled it: local or smtp' }),
    attempts: Type.Integer({ minimum: 0 }),
    last_error: Type.Union([Type.String(), Type.Null()], { description: 'what the mail server said at the last failed attempt' }),
    created_at: Type.Integer({ description: 'Unix seconds' }),
    sent_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix seconds' }),
  },
  { $id: 'MailMessage', description: 'A message of the outbox.', examples: [{ id: 'mail_01kaxq3m7y0c9v8t6r5p4n3m2k', to: 'ada@example.com', user_id: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', kind: 'password_reset', subject: 'Reset your svc password', body: '…', state: 'sent', driver: 'local', attempts: 1, last_error: null, created_at: 1767225600, sent_at: 1767225601 }] },
);

export const Deleted = Type.Object({ deleted_api_tokens: Type.Integer({ minimum: 0, description: 'the API tokens the account had created, deleted with it' }) }, { $id: 'DeletedUser', description: 'The account is gone.', examples: [{ deleted_api_tokens: 1 }] });

export function adminRoutes(app: App, s: Pick<Services, 'admin' | 'mail'>): void {
  /** The caller, once checked to be an instance admin now. */
  const adminOf = async (request: FastifyRequest) => {
    const { userId } = userOf(request);
    await s.admin.requireAdmin(userId);
    return { userId };
  };

  app.get('/v1/admin/users', {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listUsers', summary: 'List the accounts of this service',
      description: `Every account, newest first, with whether it is disabled or an admin and the workspaces it owns. ${ADMIN_NOTE}`,
      querystring: Type.Object(PageQuery, { additionalProperties: false }),
      response: responses({ 200: pageOf(AdminUser, 'A page of accounts') }, [400, 403]),
    },
  }, async (request) => {
    await adminOf(request);
    return s.admin.listUsers(request.query);
  });

  app.get('/v1/admin/users/:user_id', {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getUser', summary: 'An account', description: ADMIN_NOTE,
      params: UserParams, response: responses({ 200: AdminUser }, [400, 403, 404]),
    },
  }, async (request) => {
    await adminOf(request);
    return s.admin.getUser(request.params.user_id);
  });

  const verbs = [
    {
      verb: 'disable', operationId: 'disableUser', summary: 'Disable an account',
      description: 'Signs the account out everywhere at once and stops every credential of it (sessions, and the API tokens it created: 401 reason ACCOUNT_DISABLED) until it is enabled; its data and memberships stay. Your own account is 422 (reason NOT_YOURSELF).',
      run: (id: string, by: { userId: string }) => s.admin.disable(id, by).then((r) => r.user),
    },
    {
      verb: 'enable', operationId: 'enableUser', summary: 'Enable an account',
      description: 'Its password and the API tokens it created work again (its sessions were signed out when it was disabled).',
      run: (id: string, by: { userId: string }) => s.admin.enable(id, by),
    },
    {
      verb: 'grantAdmin', operationId: 'grantUserAdmin', summary: 'Make an account an instance admin',
      description: 'It sees the Users page and may use these routes.',
      run: (id: string, by: { userId: string }) => s.admin.setAdmin(id, true, by),
    },
    {
      verb: 'revokeAdmin', operationId: 'revokeUserAdmin', summary: 'Take the instance admin role from an account',
      description: 'Not from your own account (422, reason NOT_YOURSELF), nor from one named in SVC_ADMIN_EMAILS (422, reason ADMIN_FROM_CONFIG).',
      run: (id: string, by: { userId: string }) => s.admin.setAdmin(id, false, by),
    },
  ];
  for (const v of verbs) {
    app.post(verbPath('/v1/admin/users/:user_id', v.verb), {
      config: { auth: 'user' },
      schema: {
        tags, security: bearerSecurity, operationId: v.operationId, summary: v.summary, description: `${v.description} ${ADMIN_NOTE}`,
        params: UserParams, response: responses({ 200: AdminUser }, [400, 403, 404, 422]),
      },
    }, async (request) => v.run(request.params.user_id, await adminOf(request)));
  }

  app.post(verbPath('/v1/admin/users/:user_id', 'resetPassword'), {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'makeUserPasswordResetLink', summary: 'Make a password reset link for an account',
      description: `A one-time link (30 minutes) for the person to choose a new password, to hand over by a channel you trust; nothing is e-mailed and the current password keeps working until the link is used. ${ADMIN_NOTE}`,
      params: UserParams, response: responses({ 200: ResetLink }, [400, 403, 404]),
    },
  }, async (request, reply) => {
    const link = await s.admin.resetLink(request.params.user_id, await adminOf(request));
    reply.header('cache-control', 'no-store');
    return { email: link.email, url: link.url, expires_at: link.expiresAt };
  });

  app.delete('/v1/admin/users/:user_id', {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'deleteUser', summary: 'Delete an account',
      description:
        'Deletes the account with its sessions, memberships, notifications and the API tokens it created. Refused while it owns a ' +
        `workspace (422, reason OWNS_WORKSPACES, naming them): make someone else the owner, or delete the workspace, first. Your own account is 422 (reason NOT_YOURSELF). ${ADMIN_NOTE}`,
      params: UserParams, response: responses({ 200: Deleted }, [400, 403, 404, 422]),
    },
  }, async (request) => {
    const done = await s.admin.remove(request.params.user_id, await adminOf(request));
    return { deleted_api_tokens: done.deletedTokens };
  });

  app.get('/v1/admin/mail_messages', {
    config: { auth: 'user' },
    schema: {
      tags: mailTags, security: bearerSecurity, operationId: 'listMail', summary: 'The mail outbox',
      description: `Messages the service sent or is sending, newest first; \`to\` keeps those to one address. With the local driver (SVC_MAIL=local) this is where they are read. ${ADMIN_NOTE}`,
      querystring: Type.Object({ ...PageQuery, to: Type.Optional(Type.String({ minLength: 3, maxLength: 254, description: 'only messages to this address' })) }, { additionalProperties: false }),
      response: responses({ 200: pageOf(MailMessage, 'A page of messages') }, [400, 403]),
    },
  }, async (request, reply) => {
    await adminOf(request);
    reply.header('cache-control', 'no-store');
    return s.mail.list(request.query);
  });
}
