import { Type, type Static } from 'typebox';
import { StringEnum } from '../../platform/http.js';

export const OAuthClientRole = StringEnum(['admin', 'member'], {
  description: 'the role the client\'s tokens act with; never above its creator\'s (default member)',
});

export const OAuthClientId = Type.String({ minLength: 1, maxLength: 53, description: 'oac_ id; also the OAuth `client_id`' });

export const OAuthClientItem = Type.Object(
  {
    id: Type.String({ description: 'oac_ id; the OAuth `client_id`' }),
    client_id: Type.String({ description: 'the `client_id` to send to `POST /oauth/token` (the same value as `id`)' }),
    name: Type.String(),
    role: OAuthClientRole,
    workspace_id: Type.String(),
    created_at: Type.Integer({ description: 'Unix seconds' }),
    last_used_at: Type.Optional(Type.Integer({ description: 'Unix seconds of the last token issued, at most a minute stale; absent until first use' })),
  },
  {
    $id: 'OAuthClient',
    description: 'An OAuth client of the workspace (client-credentials grant). The secret is never listed.',
    examples: [{ id: 'oac_01kaxq3m7y0c9v8t6r5p4n3m2k', client_id: 'oac_01kaxq3m7y0c9v8t6r5p4n3m2k', name: 'deployer', role: 'member', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', created_at: 1767225600 }],
  },
);
export type OAuthClientItemT = Static<typeof OAuthClientItem>;

export const CreateOAuthClientBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'label for the client' }),
    role: Type.Optional(OAuthClientRole),
  },
  { additionalProperties: false, description: 'The new client\'s label and role.', examples: [{ name: 'deployer', role: 'member' }] },
);

export const CreatedOAuthClient = Type.Object(
  {
    id: Type.String({ description: 'oac_ id; the OAuth `client_id`' }),
    client_id: Type.String({ description: 'the `client_id` to send to `POST /oauth/token` (the same value as `id`)' }),
    name: Type.String(),
    role: OAuthClientRole,
    workspace_id: Type.String(),
    created_at: Type.Integer({ description: 'Unix seconds' }),
    client_secret: Type.String({ description: 'the client secret (`svc_cs_...`): returned only in this response, not retrievable later' }),
  },
  {
    $id: 'CreatedOAuthClient',
    description: 'The created client with its secret, shown once.',
    examples: [{
      id: 'oac_01kaxq3m7y0c9v8t6r5p4n3m2k', client_id: 'oac_01kaxq3m7y0c9v8t6r5p4n3m2k', name: 'deployer', role: 'member', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k',
      created_at: 1767225600, client_secret: 'svc_cs_Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe',
    }],
  },
);
export type CreatedOAuthClientT = Static<typeof CreatedOAuthClient>;

export const Jwks = Type.Object(
  {
    keys: Type.Array(
      Type.Object(
        {
          kty: Type.String({ description: 'key type, `OKP` for Ed25519' }),
          kid: Type.String({ description: 'key id, matched against the `kid` header of a token' }),
          alg: Type.String({ description: 'JWS algorithm, `EdDSA`' }),
          use: Type.Literal('sig'),
          crv: Type.Optional(Type.String()),
          x: Type.Optional(Type.String()),
        },
        { additionalProperties: true },
      ),
    ),
  },
  {
    $id: 'JsonWebKeySet',
    description: 'JSON Web Key Set (RFC 7517) of the keys that sign this service\'s access tokens.',
    examples: [{ keys: [{ kty: 'OKP', kid: 'k_2026-01-01', alg: 'EdDSA', use: 'sig', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' }] }],
  },
);
