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
  { $id: 'OAuthClient', description: 'An OAuth client of the workspace (client-credentials grant). The secret is never listed.' },
);
export type OAuthClientItemT = Static<typeof OAuthClientItem>;

export const CreateOAuthClientBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'label for the client' }),
    role: Type.Optional(OAuthClientRole),
  },
  { additionalProperties: false },
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
  { description: 'The created client with its secret, shown once.' },
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
  { description: 'JSON Web Key Set (RFC 7517) of the keys that sign this service\'s access tokens.' },
);
