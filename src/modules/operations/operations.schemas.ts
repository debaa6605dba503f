// The Operation resource of spec 2.1 with the rules of API.md section 5.
import { Type, type Static, type TSchema } from 'typebox';
import { StringEnum } from '../../platform/http.js';

export const OWNER_TYPES = ['install', 'repository_change_request', 'repository', 'workspace', 'machine', 'cluster', 'package', 'order_draft'] as const;
export type OwnerType = (typeof OWNER_TYPES)[number];

export const OPERATION_STATES = ['RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type OperationState = (typeof OPERATION_STATES)[number];
export const STEP_STATUSES = ['pending', 'running', 'completed', 'failed', 'skipped'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

/** The closed predicates over operation states, in one place. */
export const isTerminal = (state: string): boolean => state !== 'RUNNING';

export const OperationId = Type.String({ minLength: 1, maxLength: 53, description: 'op_ id' });

const Timestamp = (description: string) => Type.Integer({ minimum: 0, description: `${description} (Unix seconds)` });

export const OperationStep = Type.Object({
  name: Type.String({ description: 'step name, unique within the workflow' }),
  status: StringEnum(STEP_STATUSES, {
    description: 'pending, running, completed, failed (waiting for a retry, or the failure that ended the operation) or skipped (a skippable step that failed for good)',
  }),
  attempts: Type.Integer({ minimum: 0, description: 'times the step has been started' }),
  started_at: Type.Optional(Timestamp('first start of the step; absent while pending')),
  completed_at: Type.Optional(Timestamp('when the step completed or was skipped; absent before')),
  error_message: Type.Optional(Type.String({ description: 'the latest failure of this step; absent once it succeeds' })),
  retryable: Type.Boolean({ description: 'a failure of this step is retried with capped exponential backoff' }),
  skippable: Type.Boolean({ description: 'a failure of this step that exhausts its retries skips it instead of failing the operation' }),
});

const Str = (description: string) => Type.String({ description });
const NullableStr = (description: string) => Type.Union([Type.String(), Type.Null()], { description });
const ClusterIdField = Type.Union([Type.String(), Type.Null()], { description: 'the cluster the operation acts on; null for workspace.delete' });
const UrlList = Type.Array(Type.Object({ route_key: Str('the route of the package'), url: Str('where it is reachable') }), { description: 'the install\'s reachable URLs after this render' });

/**
 * What each workflow puts in `metadata` (from its start) and in `response` (when it succeeds),
 * beyond `type` and `cluster_id`: one named variant per workflow, discriminated by `type`.
 */
const WORKFLOWS: { type: string; name: string; metadata: Record<string, TSchema>; response: Record<string, TSchema> }[] = [
  { type: 'workspace.delete', name: 'WorkspaceDelete', metadata: {}, response: { workspace_id: Str('the deleted workspace') } },
  { type: 'cluster.create', name: 'ClusterCreate', metadata: { cluster_name: Str('the cluster\'s name'), provider: Str('local or kubernetes') }, response: {} },
  { type: 'cluster.capabilities.refresh', name: 'ClusterCapabilitiesRefresh', metadata: {}, response: {} },
  { type: 'cluster.delete', name: 'ClusterDelete', metadata: { cluster_name: Str('the cluster\'s name'), provider: Str('local or kubernetes') }, response: {} },
  ...(['create', 'update'] as const).map((verb) => ({
    type: `install.${verb}`,
    name: verb === 'create' ? 'InstallCreate' : 'InstallUpdate',
    metadata: { install_id: Str('inst_ id'), package_id: Str('pkg_ id'), package_version_id: Str('pkv_ id being deployed'), semver: Str('its version') },
    response: { install_id: Str('inst_ id'), render_id: Str('rnd_ id of the render now current'), urls: UrlList },
  })),
  { type: 'machine.create', name: 'MachineCreate', metadata: { machine_name: NullableStr('the machine\'s name, or null'), provider: Str('the compute provider: local or hcloud'), instance_type: Str('the provider\'s server type') }, response: {} },
  { type: 'machine.delete', name: 'MachineDelete', metadata: {
    machine_name: NullableStr('the machine\'s name, or null'), provider: Str('byo, local or hcloud'),
    reason: Str('requested (a person), expired (its expires_at passed) or machine.create failed / cancelled (its cleanup)'),
  }, response: {} },
  { type: 'machine.suspend', name: 'MachineSuspend', metadata: { machine_name: NullableStr('the machine\'s name, or null') }, response: {} },
  { type: 'machine.resume', name: 'MachineResume', metadata: { machine_name: NullableStr('the machine\'s name, or null') }, response: {} },
  { type: 'install.delete', name: 'InstallDelete', metadata: { install_id: Str('inst_ id'), package_id: Str('pkg_ id') }, response: { install_id: Str('the deleted install') } },
  ...(['floating', 'pinned'] as const).map((kind) => ({
    type: `preview_hostname.bind_${kind}`,
    name: kind === 'floating' ? 'PreviewHostnameBindFloating' : 'PreviewHostnameBindPinned',
    metadata: { install_id: Str('inst_ id'), preview_hostname_id: Str('phn_ id'), hostname: Str('the hostname'), track: Str('the track'), render_id: Str('rnd_ id being bound') },
    response: { install_id: Str('inst_ id'), preview_hostname_id: Str('phn_ id'), hostname: Str('the hostname, now serving the render') },
  })),
  { type: 'preview_hostname.release', name: 'PreviewHostnameRelease', metadata: { install_id: Str('inst_ id'), preview_hostname_id: Str('phn_ id'), hostname: Str('the hostname') }, response: {} },
  ...(['change_tier', 'cancel', 'reactivate'] as const).map((verb) => ({
    type: `workspace.subscription.${verb}`,
    name: verb === 'change_tier' ? 'SubscriptionChangeTier' : verb === 'cancel' ? 'SubscriptionCancel' : 'SubscriptionReactivate',
    metadata: { change_request_id: Str('the change request (scr_ id) this operation carries out') },
    response: {
      workspace_id: Str('ws_ id'), change_request_id: Str('scr_ id'), kind: Str('upgrade, downgrade or cancel'), requested_tier: Str('the tier asked for'),
      status: Str('the change request\'s status after the operation: applied (an upgrade, at once) or pending (at the period end)'),
      effective_at: Str('when it takes effect (ISO 8601)'),
    },
  })),
  { type: 'order_draft.compute', name: 'OrderDraftCompute', metadata: { order_draft_id: Str('the order draft (odft_ id) whose compute phase this is') }, response: {} },
  { type: 'order_draft.deliver', name: 'OrderDraftDeliver', metadata: { order_draft_id: Str('odft_ id'), order_id: Str('the order (ord_ id) being delivered') }, response: {} },
  { type: 'order_draft.cleanup', name: 'OrderDraftCleanup', metadata: {
    order_draft_id: Str('odft_ id'), termination_reason: Str('why the draft ends: timeout, revoked, offer_expired, install_failed, cluster_allocation_failed or quota_exceeded'),
  }, response: {} },
];
export const OPERATION_TYPES = WORKFLOWS.map((w) => w.type);

function variant(w: (typeof WORKFLOWS)[number], part: 'metadata' | 'response') {
  const suffix = part === 'metadata' ? 'Metadata' : 'Result';
  return Type.Object(
    { type: Type.Literal(w.type, { description: 'the workflow (discriminator)' }), cluster_id: ClusterIdField, ...w[part] },
    {
      $id: `${w.name}${suffix}`,
      description: part === 'metadata' ? `metadata of a ${w.type} operation` : `response of a ${w.type} operation that SUCCEEDED`,
      examples: [Object.fromEntries([['type', w.type], ['cluster_id', w.type.startsWith('workspace.') ? null : 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k'],
        ...Object.entries(w[part]).map(([k, v]) => [k, exampleOf(k, v)])])],
    },
  );
}

function exampleOf(key: string, schema: TSchema): unknown {
  if ((schema as { type?: string }).type === 'array') return [{ route_key: 'web', url: 'https://web--inst-01kaxq3m7y0c9v8t6r5p4n3m2k.preview.example.com' }];
  const samples: Record<string, string> = {
    machine_name: 'build-01', instance_type: 'local-small', reason: 'requested', order_draft_id: 'odft_01kaxq3m7y0c9v8t6r5p4n3m2k',
    order_id: 'ord_01kaxq3m7y0c9v8t6r5p4n3m2k', termination_reason: 'revoked',
    workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', cluster_name: 'dev', provider: 'local', install_id: 'inst_01kaxq3m7y0c9v8t6r5p4n3m2k',
    package_id: 'pkg_01kaxq3m7y0c9v8t6r5p4n3m2k', package_version_id: 'pkv_01kaxq3m7y0c9v8t6r5p4n3m2k', semver: '1.2.0',
    render_id: 'rnd_01kaxq3m7y0c9v8t6r5p4n3m2k', preview_hostname_id: 'phn_01kaxq3m7y0c9v8t6r5p4n3m2k', hostname: 'main--inst-01kaxq3m7y0c9v8t6r5p4n3m2k.preview.example.com', track: 'main',
  };
  return samples[key] ?? 'x';
}

const METADATA_VARIANTS = WORKFLOWS.map((w) => variant(w, 'metadata'));
const RESULT_VARIANTS = WORKFLOWS.map((w) => variant(w, 'response'));

/**
 * `metadata` and `response` as the serializer sees them: `type` and `cluster_id` plus whatever the
 * workflow added, passed through (a closed union would make the serializer test every variant
 * per operation, and an operation of a workflow without a variant would fail to serialize).
 */
function open(id: string, description: string) {
  return Type.Object(
    { type: Type.String({ description: 'the workflow (discriminator)' }), cluster_id: ClusterIdField },
    { $id: id, additionalProperties: true, description },
  );
}
const OperationMetadata = open('OperationMetadata', 'what the operation does, by workflow (`type`)');
const OperationResult = open('OperationResult', 'the result of a SUCCEEDED operation, by workflow (`type`)');

/**
 * The same two schemas as the OpenAPI document shows them, for client generators: a oneOf over one
 * named variant per workflow with a discriminator on `type` (merged into the document by
 * system/openapi.ts), plus the variants themselves.
 */
function discriminated(base: TSchema, variants: TSchema[]) {
  return {
    description: (base as { description?: string }).description,
    oneOf: variants.map((v) => ({ $ref: `#/components/schemas/${String((v as { $id?: string }).$id)}` })),
    discriminator: {
      propertyName: 'type',
      mapping: Object.fromEntries(WORKFLOWS.map((w, i) => [w.type, `#/components/schemas/${String((variants[i] as { $id?: string }).$id)}`])),
    },
  };
}
export const OPERATION_DOCUMENT_SCHEMAS: Record<string, unknown> = {
  ...Object.fromEntries([...METADATA_VARIANTS, ...RESULT_VARIANTS].map((v) => {
    const { $id, ...rest } = JSON.parse(JSON.stringify(v)) as Record<string, unknown>;
    return [String($id), rest];
  })),
  OperationMetadata: discriminated(OperationMetadata, METADATA_VARIANTS),
  OperationResult: discriminated(OperationResult, RESULT_VARIANTS),
};

const Metadata = Type.Unsafe<Static<typeof OperationMetadata>>({ $ref: 'OperationMetadata#' });
const Response = Type.Union([Type.Unsafe<Static<typeof OperationResult>>({ $ref: 'OperationResult#' }), Type.Null()], {
  description: 'the result: set only when state is SUCCEEDED, else null',
});

export const Operation = Type.Object(
  {
    id: OperationId,
    workspace_id: Type.Union([Type.String({ minLength: 1, maxLength: 53 }), Type.Null()], { description: 'ws_ id the operation belongs to' }),
    organization_id: Type.Union([Type.String({ minLength: 1, maxLength: 54 }), Type.Null()], { description: 'always null: this service has no organizations' }),
    owner_type: StringEnum(OWNER_TYPES, { description: 'the collection the operation acts on' }),
    owner_id: Type.String({ description: 'prefixed id of the target; the prefix matches owner_type' }),
    parent_operation_id: Type.Union([OperationId, Type.Null()], { description: 'the operation that started this one, if any' }),
    state: StringEnum(OPERATION_STATES, { description: 'RUNNING until it ends; SUCCEEDED, FAILED and CANCELLED are terminal and never change again' }),
    done: Type.Boolean({ description: 'true if and only if state is terminal' }),
    html_url: Type.String({ format: 'uri', description: 'the dashboard view of the operation' }),
    metadata: Metadata,
    response: Response,
    error: Type.Union([Type.Object({ message: Type.String() }), Type.Null()], { description: 'set only when state is FAILED or CANCELLED, else null' }),
    last_error: Type.Union([Type.Object({ message: Type.String(), step_name: Type.String() }), Type.Null()], {
      description: 'the latest error of any failed step, also while RUNNING (retries); cleared when that step succeeds on retry',
    }),
    created_by: Type.String({
      description: 'who started it: the usr_, tok_ or oac_ id of the caller whose request started it (for an order\'s steps, the ' +
        'customer\'s usr_ id), or `system` for work the service started on its own (a machine\'s expiry, the cleanup of a failed create)',
    }),
    created_by_name: Type.Union([Type.String(), Type.Null()], {
      description: 'the name people know the creator by, as it is now: the user\'s display name, or the API token\'s or OAuth client\'s ' +
        'name; null for `system`, for a user without a name (read created_by_email), or once the creator is deleted',
    }),
    created_by_email: Type.Union([Type.String(), Type.Null()], {
      description: 'the creator\'s e-mail when a user started it (and still has an account); null otherwise',
    }),
    started_at: Timestamp('when the operation was accepted'),
    completed_at: Type.Union([Timestamp('when it ended'), Type.Null()], { description: 'null while RUNNING' }),
    steps: Type.Optional(Type.Array(OperationStep, { description: 'the workflow\'s steps in order; omitted in list items' })),
  },
  {
    $id: 'Operation',
    description: 'A long-running operation: work a request started, with its state and steps; GET it or wait on it until `done`',
    examples: [{
      id: 'op_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', organization_id: null, owner_type: 'cluster',
      owner_id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k', parent_operation_id: null, state: 'RUNNING', done: false,
      html_url: 'https://svc.example.com/operations/op_01kaxq3m7y0c9v8t6r5p4n3m2k',
      metadata: { type: 'cluster.create', cluster_id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k', cluster_name: 'dev', provider: 'local' },
      response: null, error: null, last_error: null, created_by: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2m', created_by_name: 'Ada Lovelace',
      created_by_email: 'ada@example.com', started_at: 1767225600, completed_at: null,
      steps: [{ name: 'provision', status: 'running', attempts: 1, started_at: 1767225601, retryable: true, skippable: false }],
    }],
  },
);
export type OperationT = Static<typeof Operation>;

/** The operation's named schemas, registered on the app (src/schemas.ts). */
export const OPERATION_SCHEMAS: TSchema[] = [OperationMetadata, OperationResult, Operation];
export type OperationStepT = Static<typeof OperationStep>;

export const OperationRef = Type.Unsafe<OperationT>({ $ref: 'Operation#' });

export const ListOperationsQuery = Type.Object(
  {
    owner_type: Type.Optional(StringEnum(OWNER_TYPES, { description: 'only operations on this collection' })),
    owner_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'only operations on this resource' })),
    state: Type.Optional(StringEnum(OPERATION_STATES, { description: 'only operations in this state: RUNNING (still under way) or how they ended' })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'next_cursor of a previous page' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'items per page, 1-100' })),
  },
  { additionalProperties: false },
);

export const WaitQuery = Type.Object(
  {
    timeout: Type.Optional(Type.Integer({ minimum: 1, maximum: 60, default: 30, description: 'seconds to wait at most, 1-60' })),
  },
  { additionalProperties: false },
);
