import { Type, type Static } from 'typebox';
import { StringEnum } from '../../platform/http.js';
import { UnixSecondsInput } from '../../platform/integer-bounds.js';

export const ApiTokenRole = StringEnum(['admin', 'member'], {
  description: 'the role the token acts with; never above its creator\'s (default member)',
});

export const ApiTokenItem = Type.Object(
  {
    id: Type.String({ description: 'tok_ id' }),
    workspace_id: Type.String(),
    name: Type.String(),
    prefix: Type.String({ description: 'the first 12 characters of the token (`sk_svc_` + 5), to recognise it' }),
    role: ApiTokenRole,
    created_at: Type.Integer({ description: 'Unix seconds' }),
    last_used_at: Type.Optional(Type.Integer({ description: 'Unix seconds, at most a minute stale; absent until first use' })),
    expires_at: Type.Optional(Type.Integer({ description: 'Unix seconds; absent when the token does not expire' })),
  },
  {
    $id: 'ApiToken',
    description: 'A workspace API token. The token value itself is never listed.',
    examples: [{ id: 'tok_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', name: 'ci', prefix: 'sk_svc_a1B2c', role: 'member', created_at: 1767225600, last_used_at: 1767229200 }],
  },
);
export type ApiTokenItemT = Static<typeof ApiTokenItem>;

export const CreateApiTokenBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'label for the token' }),
    expires_at: Type.Optional(UnixSecondsInput('must be in the future (at most 10 years ahead)')),
    role: Type.Optional(ApiTokenRole),
  },
  { additionalProperties: false, description: 'The new token\'s label, role and optional expiry.', examples: [{ name: 'ci', role: 'admin', expires_at: 1798761600 }] },
);

export const CreatedApiToken = Type.Object(
  {
    id: Type.String({ description: 'tok_ id' }),
    name: Type.String(),
    token: Type.String({ description: 'the full secret (`sk_svc_...`): returned only in this response, not retrievable later' }),
    expires_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix seconds; null when the token does not expire' }),
    prefix: Type.String(),
    role: ApiTokenRole,
    workspace_id: Type.String(),
    created_at: Type.Integer(),
  },
  {
    $id: 'CreatedApiToken',
    description: 'The created token with its secret, shown once.',
    examples: [{
      id: 'tok_01kaxq3m7y0c9v8t6r5p4n3m2k', name: 'ci', token: 'sk_svc_a1B2cD3eF4gH5iJ6kL7mN8oP9qR0sT1uV2', expires_at: 1798761600,
      prefix: 'sk_svc_a1B2c', role: 'admin', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', created_at: 1767225600,
    }],
  },
);
export type CreatedApiTokenT = Static<typeof CreatedApiToken>;
