import { Type, type Static } from 'typebox';
import { StringEnum } from '../../platform/http.js';

export const WorkspaceId = Type.String({ minLength: 1, maxLength: 53, description: 'workspace id (ws_...)' });
export const RoleSchema = StringEnum(['owner', 'admin', 'member'], { description: 'owner, admin or member' });

export const Workspace = Type.Object(
  {
    id: Type.String({ description: 'ws_ id' }),
    name: Type.String({ description: 'display name, 1-100 characters' }),
    slug: Type.String({ description: 'unique url-safe handle, 3-39 of [a-z0-9-]' }),
    plan: Type.Object(
      {
        tier: Type.String({ description: 'subscription tier, `free` until changed' }),
        billed_by: Type.String({ description: 'who bills the workspace: `platform` (this service\'s operator) or `seller`; see its subscription' }),
      },
      { description: 'the subscription plan' },
    ),
    role: Type.Optional(RoleSchema),
    state: StringEnum(['active', 'deleting'], {
      description: 'active, or deleting while a workspace.delete operation runs (new clusters and other work are then refused with 422)',
    }),
    require_two_factor: Type.Boolean({
      description:
        'true: every member must have two-factor sign-in on (GitHub organizations\' rule). It is decided at each request: a member ' +
        'without an active factor who acts in the workspace with their user credential (session, web app, user JWT) is refused with ' +
        '403 TWO_FACTOR_REQUIRED until they set one up on their account page (POST /v1/me/two_factor:enroll); nobody is removed. ' +
        'The workspace\'s own credentials (API tokens, OAuth clients) are not people and keep working. Only an owner changes it',
    }),
    created_at: Type.Integer({ description: 'Unix seconds' }),
    updated_at: Type.Integer({ description: 'Unix seconds' }),
    etag: Type.String({ description: 'changes on every write; send it back in if-match' }),
  },
  {
    $id: 'Workspace',
    description: 'A workspace: the unit of tenancy. `role` is the caller\'s role in it.',
    examples: [{
      id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', name: 'Acme', slug: 'acme', plan: { tier: 'free', billed_by: 'self' },
      role: 'owner', state: 'active', require_two_factor: false, created_at: 1767225600, updated_at: 1767225600, etag: '1',
    }],
  },
);
export type WorkspaceT = Static<typeof Workspace>;

const Slug = Type.String({ minLength: 3, maxLength: 39, pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$', description: '3-39 of [a-z0-9-], not starting or ending with -' });
const Name = Type.String({ minLength: 1, maxLength: 100, description: 'display name' });

export const CreateWorkspaceBody = Type.Object(
  { name: Name, slug: Type.Optional(Slug) },
  { additionalProperties: false, description: 'The caller becomes the owner. A slug is derived from the name when omitted.', examples: [{ name: 'Acme', slug: 'acme' }] },
);
export const PatchWorkspaceBody = Type.Object(
  {
    name: Type.Optional(Name),
    slug: Type.Optional(Slug),
    require_two_factor: Type.Optional(Type.Boolean({
      description: 'require two-factor sign-in of every member (see Workspace.require_two_factor). Only an owner changes it (403 ROLE_TOO_LOW), ' +
        'and an owner turns it on only with two-factor sign-in on for their own account (422 OWN_TWO_FACTOR_REQUIRED), so they are not shut out',
    })),
  },
  { additionalProperties: false, minProperties: 1, description: 'Fields to change; at least one.', examples: [{ name: 'Acme Inc.' }, { require_two_factor: true }] },
);

export const Member = Type.Object(
  {
    id: Type.String({ description: 'wsm_ id' }),
    user_id: Type.String({ description: 'usr_ id' }),
    email: Type.String({ description: "the member's e-mail address" }),
    role: RoleSchema,
    joined_at: Type.String({ format: 'date-time', description: 'when the user joined, an ISO 8601 date-time string' }),
    two_factor: Type.Optional(Type.Boolean({
      description: 'whether the member has two-factor sign-in on; in the members list and a member\'s record, for owners and admins only (as GitHub shows it to organization owners)',
    })),
  },
  {
    $id: 'WorkspaceMember',
    description: 'A member of a workspace: the user, their e-mail address and their role.',
    examples: [{ id: 'wsm_01kaxq3m7y0c9v8t6r5p4n3m2k', user_id: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', email: 'ada@example.com', role: 'admin', joined_at: '2026-01-01T00:00:00.000Z' }],
  },
);
export type MemberT = Static<typeof Member>;

export const AddMemberBody = Type.Object(
  {
    email: Type.Optional(Type.String({ minLength: 3, maxLength: 254, description: 'the user to add, by e-mail' })),
    user_id: Type.Optional(Type.String({ minLength: 1, maxLength: 53, description: 'the user to add, by id' })),
    role: RoleSchema,
  },
  { additionalProperties: false, description: 'Exactly one of email or user_id; the user must exist.', examples: [{ email: 'ada@example.com', role: 'admin' }] },
);
export const PatchMemberBody = Type.Object({ role: RoleSchema }, { additionalProperties: false, description: 'The new role.', examples: [{ role: 'member' }] });
export const MemberPathParams = Type.Object({ id: WorkspaceId, user_id: Type.String({ minLength: 1, maxLength: 53, description: 'usr_ id of the member' }) });

export const INVITATION_STATES = ['pending', 'accepted', 'revoked', 'expired'] as const;

export const Invitation = Type.Object(
  {
    id: Type.String({ description: 'inv_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    email: Type.String({ description: 'who is invited, lowercased' }),
    role: RoleSchema,
    state: StringEnum(INVITATION_STATES, {
      description: 'pending (its link works until expires_at), accepted, revoked (by an owner or admin, or by a newer invitation of the same e-mail), or expired',
    }),
    invited_by: Type.String({ description: 'usr_ id of the owner or admin who invited' }),
    created_at: Type.Integer({ description: 'Unix seconds' }),
    expires_at: Type.Integer({ description: 'Unix seconds: 7 days after created_at' }),
    accept_url: Type.Optional(Type.String({
      description: 'the link that accepts it (`{public_url}/invite#<token>`), in the answer that made the invitation only: hand it to the person. Its token is stored hashed and shown nowhere else',
    })),
  },
  {
    $id: 'WorkspaceInvitation',
    description: 'An invitation to join a workspace, made when a member is added by an e-mail that has no account.',
    examples: [{
      id: 'inv_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', email: 'grace@example.com', role: 'member', state: 'pending',
      invited_by: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', created_at: 1767225600, expires_at: 1767830400, accept_url: 'https://svc.example.com/invite#3kq8Xw1pL0aZ7mN2bV9cR4tY6uI5oE8s',
    }],
  },
);
export type InvitationT = Static<typeof Invitation>;

export const InvitationToken = Type.String({ minLength: 32, maxLength: 32, pattern: '^[A-Za-z0-9]{32}$', description: 'the token of the invitation link: what follows `#` in its accept_url' });

export const InvitationPreview = Type.Object(
  {
    workspace_name: Type.String({ description: 'the workspace the invitation is to' }),
    email: Type.String({ description: 'the e-mail invited: the account is made with it, or must be it' }),
    role: RoleSchema,
    expires_at: Type.Integer({ description: 'Unix seconds' }),
    account_exists: Type.Boolean({ description: 'true: accepting needs that account\'s password; false: accepting makes the account, with the password given' }),
  },
  {
    $id: 'WorkspaceInvitationPreview', description: 'What an invitation\'s link shows before it is accepted.',
    examples: [{ workspace_name: 'Acme', email: 'grace@example.com', role: 'member', expires_at: 1767830400, account_exists: false }],
  },
);

export const AcceptedInvitation = Type.Object(
  {
    user_id: Type.String({ description: 'usr_ id of the account that joined' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    role: RoleSchema,
    account_created: Type.Boolean({ description: 'true when accepting made the account' }),
  },
  {
    $id: 'AcceptedWorkspaceInvitation', description: 'The invitation was accepted: the account is a member now; sign in next.',
    examples: [{ user_id: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', role: 'member', account_created: true }],
  },
);
