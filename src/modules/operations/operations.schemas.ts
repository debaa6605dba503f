// The Operation resource of spec 2.1 with the rules of API.md section 5.
import { Type, type Static } from 'typebox';
import { StringEnum } from '../../platform/http.js';

export const OWNER_TYPES = ['install', 'repository_change_request', 'repository', 'workspace', 'machine', 'cluster', 'package'] as const;
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

const Metadata = Type.Object(
  {
    type: Type.String({ description: 'the workflow, e.g. workspace.delete, cluster.create' }),
    cluster_id: Type.Union([Type.String(), Type.Null()], { description: 'the cluster the operation acts on, if any' }),
  },
  { additionalProperties: true, description: 'what the operation does; members beyond type and cluster_id depend on the type' },
);

const Response = Type.Union(
  [
    Type.Object(
      {
        type: Type.String({ description: 'the workflow (discriminator)' }),
        cluster_id: Type.Union([Type.String(), Type.Null()], { description: 'the cluster concerned, if any' }),
      },
      { additionalProperties: true },
    ),
    Type.Null(),
  ],
  { description: 'the result: set only when state is SUCCEEDED, else null' },
);

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
    started_at: Timestamp('when the operation was accepted'),
    completed_at: Type.Union([Timestamp('when it ended'), Type.Null()], { description: 'null while RUNNING' }),
    steps: Type.Optional(Type.Array(OperationStep, { description: 'the workflow\'s steps in order; omitted in list items' })),
  },
  { $id: 'Operation', description: 'A long-running operation (spec 2.1)' },
);
export type OperationT = Static<typeof Operation>;
export type OperationStepT = Static<typeof OperationStep>;

export const OperationRef = Type.Unsafe<OperationT>({ $ref: 'Operation#' });

export const ListOperationsQuery = Type.Object(
  {
    owner_type: Type.Optional(StringEnum(OWNER_TYPES, { description: 'only operations on this collection' })),
    owner_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'only operations on this resource' })),
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
