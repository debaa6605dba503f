// Secrets and their versions (spec 2.7, endpoint 5; API.md 8.1).
import { Type, type Static } from 'typebox';
import { StringEnum } from '../../platform/http.js';
import { PageQuery } from '../../platform/pagination.js';

export const SECRET_KINDS = ['generic', 'api_key', 'oci_registry', 'webhook_signing', 'kubeconfig'] as const;
export type SecretKind = (typeof SECRET_KINDS)[number];
export const SECRET_STATES = ['active', 'soft_deleted'] as const;
export type SecretState = (typeof SECRET_STATES)[number];
export const VERSION_STATES = ['enabled', 'disabled', 'destroyed'] as const;
export type VersionState = (typeof VERSION_STATES)[number];

/** A value is 1 byte to 64 KiB of UTF-8 (the schema bounds characters; the service counts bytes). */
export const VALUE_MAX_BYTES = 64 * 1024;
export const ALIAS_PATTERN = '^[a-z][a-z0-9_-]{0,62}$';
export const MAX_ALIASES = 50;
const LABEL_KEY_PATTERN = '^[a-z0-9_.-]{1,63}$';

export const SecretId = Type.String({ minLength: 1, maxLength: 54, description: 'secret id (sec_...)' });
export const VersionId = Type.String({ minLength: 1, maxLength: 55, description: 'secret version id (secv_...)' });
export const AccessVersionId = Type.String({
  minLength: 1,
  maxLength: 55,
  description: 'which version: its id (secv_...), its version number (e.g. `3`), `latest` (the highest enabled version) or one of the secret\'s version_aliases',
});

const Timestamp = (description: string) => Type.Integer({ minimum: 0, description: `${description} (Unix seconds)` });
const NullableTimestamp = (description: string) =>
  Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: `${description} (Unix seconds)` });

const Labels = Type.Record(Type.String({ pattern: LABEL_KEY_PATTERN }), Type.String({ maxLength: 200 }), {
  maxProperties: 32,
  additionalProperties: false,
  description: 'at most 32 labels; keys 1-63 of [a-z0-9_.-], values at most 200 characters',
});

const Aliases = Type.Record(Type.String({ pattern: ALIAS_PATTERN }), Type.Integer({ minimum: 1 }), {
  maxProperties: MAX_ALIASES,
  additionalProperties: false,
  description:
    'alias -> version number, at most 50; an alias is 1-63 of [a-z0-9_-] starting with a letter, not `latest`. ' +
    '`:access` takes an alias in place of the version id',
});

const SecretValue = Type.String({
  minLength: 1,
  maxLength: VALUE_MAX_BYTES,
  description: 'the secret value: 1 byte to 64 KiB of UTF-8 text. Stored encrypted, never echoed, never listed, never logged',
});
const Comment = Type.String({ maxLength: 200, description: 'a note on this version, at most 200 characters' });
const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '^[^\\u0000-\\u001f\\u007f]+$',
  description: '1-200 characters without control characters; unique among the workspace\'s secrets (deleted ones included)',
});
const Description = Type.String({ maxLength: 500, description: 'free text, at most 500 characters' });
const Kind = StringEnum(SECRET_KINDS, {
  description: 'what the value is, for people and tools: generic (the default), api_key, oci_registry, webhook_signing or kubeconfig; the service treats all alike',
});

const EXAMPLE_IDS = { ws: 'ws_01jf8x3q6m2c4y7n0k5t9r1b3a', sec: 'sec_01jf8x3q6m2c4y7n0k5t9r1b3f', secv: 'secv_01jf8x3q6m2c4y7n0k5t9r1b3e' };

export const Secret = Type.Object(
  {
    id: Type.String({ description: 'sec_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    name: Type.String({ description: 'unique in the workspace' }),
    description: Type.Union([Type.String(), Type.Null()], { description: 'free text; null when none' }),
    kind: Kind,
    labels: Type.Record(Type.String(), Type.String(), { description: 'labels as set' }),
    state: StringEnum(SECRET_STATES, {
      description: '`active`, or `soft_deleted` (DELETE without force): its values cannot be accessed, and it is purged at `purge_at` unless restored with `:undelete`',
    }),
    version_count: Type.Integer({ minimum: 0, description: 'versions created so far, destroyed ones included; also the highest version number' }),
    enabled_version_count: Type.Integer({ minimum: 0, description: 'versions that are enabled now' }),
    version_aliases: Type.Record(Type.String(), Type.Integer(), { description: 'alias -> version number' }),
    html_url: Type.String({ format: 'uri', description: 'the dashboard view of the secret' }),
    created_at: Timestamp('creation time'),
    updated_at: Timestamp('last write to the secret itself'),
    deleted_at: NullableTimestamp('when it was soft-deleted; null while active'),
    purge_at: NullableTimestamp('when a soft-deleted secret is destroyed for good (deleted_at + SVC_SECRET_RETENTION); null while active'),
    etag: Type.String({
      description: 'changes on every write to the secret (PATCH, DELETE, :undelete); version changes have their own etags. Send it back in if-match',
    }),
  },
  {
    $id: 'Secret',
    description: 'A secret: metadata and versioned values. Never carries a value; read one with `POST /v1/secrets/{id}/versions/{vid}:access`.',
    examples: [{
      id: EXAMPLE_IDS.sec, workspace_id: EXAMPLE_IDS.ws, name: 'registry-password', description: 'pull secret of the CI registry', kind: 'oci_registry',
      labels: { team: 'platform' }, state: 'active', version_count: 3, enabled_version_count: 2, version_aliases: { prod: 2 },
      html_url: `https://svc.example.com/secrets/${EXAMPLE_IDS.sec}`, created_at: 1767225600, updated_at: 1767225600,
      deleted_at: null, purge_at: null, etag: '4',
    }],
  },
);
export type SecretT = Static<typeof Secret>;

export const SecretVersion = Type.Object(
  {
    id: Type.String({ description: 'secv_ id' }),
    secret_id: Type.String({ description: 'sec_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    version_number: Type.Integer({ minimum: 1, description: '1 for the first version, then the highest so far + 1; never reused' }),
    state: StringEnum(VERSION_STATES, {
      description: '`enabled` (can be accessed), `disabled` (kept, cannot be accessed; `:enable` restores it) or `destroyed` (its value is gone for good; final)',
    }),
    created_at: Timestamp('creation time'),
    etag: Type.String({ description: 'changes on every state change; send it back in if-match' }),
    comment: Type.Optional(Type.String({ description: 'the note given at creation; absent when none' })),
    destroyed_at: Type.Optional(Type.Integer({ minimum: 0, description: 'when it was destroyed (Unix seconds); absent unless destroyed' })),
  },
  {
    $id: 'SecretVersion',
    description: 'A version of a secret, without its value.',
    examples: [{
      id: EXAMPLE_IDS.secv, secret_id: EXAMPLE_IDS.sec, workspace_id: EXAMPLE_IDS.ws, version_number: 3, state: 'enabled',
      created_at: 1767225600, etag: '1', comment: 'rotated after the vendor incident',
    }],
  },
);
export type SecretVersionT = Static<typeof SecretVersion>;

export const AccessedSecretVersion = Type.Object(
  {
    secret_id: Type.String({ description: 'sec_ id' }),
    version_id: Type.String({ description: 'secv_ id of the version read (what `latest` or the alias named)' }),
    version_number: Type.Integer({ minimum: 1, description: 'its number' }),
    value: Type.String({ description: 'the value, as stored' }),
  },
  {
    $id: 'AccessedSecretVersion',
    description: 'A secret value, as read by `:access`. Sent with `cache-control: no-store`.',
    examples: [{ secret_id: EXAMPLE_IDS.sec, version_id: EXAMPLE_IDS.secv, version_number: 3, value: 's3cr3t-registry-password' }],
  },
);
export type AccessedSecretVersionT = Static<typeof AccessedSecretVersion>;

export const CreateSecretBody = Type.Object(
  {
    name: Name,
    description: Type.Optional(Description),
    labels: Type.Optional(Labels),
    kind: Type.Optional(Kind),
    value: SecretValue,
    comment: Type.Optional(Comment),
  },
  {
    additionalProperties: false,
    description: 'A new secret with its first value (version 1, enabled).',
    examples: [{ name: 'registry-password', kind: 'oci_registry', labels: { team: 'platform' }, value: 's3cr3t', comment: 'initial' }],
  },
);
export type CreateSecretBodyT = Static<typeof CreateSecretBody>;

export const PatchSecretBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Type.Union([Description, Type.Null()], { description: 'free text, at most 500 characters; null clears it' })),
    labels: Type.Optional(Labels),
    version_aliases: Type.Optional(Aliases),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description: 'The fields to change; `labels` and `version_aliases` replace the current ones as a whole.',
    examples: [{ version_aliases: { prod: 3, canary: 4 } }],
  },
);
export type PatchSecretBodyT = Static<typeof PatchSecretBody>;

export const CreateVersionBody = Type.Object(
  { value: SecretValue, comment: Type.Optional(Comment) },
  { additionalProperties: false, description: 'A new value: the next version, enabled.', examples: [{ value: 'n3w-s3cr3t', comment: 'quarterly rotation' }] },
);
export type CreateVersionBodyT = Static<typeof CreateVersionBody>;

export const ListSecretsQuery = Type.Object(
  {
    ...PageQuery,
    kind: Type.Optional(StringEnum(SECRET_KINDS, { description: 'only secrets of this kind' })),
    state: Type.Optional(StringEnum(SECRET_STATES, { description: 'only secrets in this state; both by default' })),
  },
  { additionalProperties: false },
);
export type ListSecretsQueryT = Static<typeof ListSecretsQuery>;

export const ListVersionsQuery = Type.Object(
  { ...PageQuery, state: Type.Optional(StringEnum(VERSION_STATES, { description: 'only versions in this state' })) },
  { additionalProperties: false },
);
export type ListVersionsQueryT = Static<typeof ListVersionsQuery>;

export const DeleteSecretQuery = Type.Object(
  {
    force: Type.Optional(Type.Boolean({
      default: false,
      description: 'true: destroy every version and remove the secret now (204), instead of a restorable soft delete (200)',
    })),
  },
  { additionalProperties: false },
);
