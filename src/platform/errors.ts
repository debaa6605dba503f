// The one error shape (API.md section 2) and the one code -> status table.
import { Type, type Static } from 'typebox';
import { REASONS, type Reason } from './reasons.js';

export { GLOBAL_REASONS, REASONS, type Reason } from './reasons.js';

export const ERROR_CODES = [
  'INVALID_ARGUMENT',
  'UNAUTHENTICATED',
  'PERMISSION_DENIED',
  'NOT_FOUND',
  'ABORTED',
  'ALREADY_EXISTS',
  'FAILED_PRECONDITION',
  'RESOURCE_EXHAUSTED',
  'INTERNAL',
  'UNAVAILABLE',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export function statusOf(code: ErrorCode): number {
  switch (code) {
    case 'INVALID_ARGUMENT': return 400;
    case 'UNAUTHENTICATED': return 401;
    case 'PERMISSION_DENIED': return 403;
    case 'NOT_FOUND': return 404;
    case 'ABORTED': return 409;
    case 'ALREADY_EXISTS': return 409;
    case 'FAILED_PRECONDITION': return 422;
    case 'RESOURCE_EXHAUSTED': return 429;
    case 'INTERNAL': return 500;
    case 'UNAVAILABLE': return 503;
  }
}

export interface FieldViolation {
  field: string;
  description: string;
}

export interface ApiErrorOptions {
  /** one of the closed set in reasons.ts */
  reason?: Reason;
  metadata?: Record<string, string>;
  fieldViolations?: FieldViolation[];
  /** extra response headers, e.g. retry-after or www-authenticate */
  headers?: Record<string, string>;
  /** the failure underneath (a database error, say): logged with a 5xx, never sent */
  cause?: unknown;
  /** an HTTP status other than the code's own (413 for a body over the size limit, still INVALID_ARGUMENT) */
  status?: number;
}

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: ApiErrorOptions = {},
  ) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.status = options.status ?? statusOf(code);
  }
}

export const notFound = (what: string) => new ApiError('NOT_FOUND', `${what} not found`, { reason: 'NOT_FOUND' });
export const permissionDenied = (message: string, reason: Reason = 'PERMISSION_DENIED') =>
  new ApiError('PERMISSION_DENIED', message, { reason });
export const invalidArgument = (message: string, reason: Reason = 'INVALID_ARGUMENT', fieldViolations?: FieldViolation[]) =>
  new ApiError('INVALID_ARGUMENT', message, { reason, ...(fieldViolations ? { fieldViolations } : {}) });
/** 400 naming one field, whose description is the message itself. */
export const fieldInvalid = (field: string, message: string, reason: Reason = 'INVALID_ARGUMENT') =>
  invalidArgument(message, reason, [{ field, description: message }]);
/** 401 for a token that was sent but is unknown, malformed, expired or revoked (RFC 6750 section 3.1). */
export const unauthenticated = (message = 'missing, invalid, expired or revoked token') =>
  new ApiError('UNAUTHENTICATED', message, {
    reason: 'INVALID_TOKEN',
    headers: { 'www-authenticate': 'Bearer realm="svc", error="invalid_token"' },
  });
/** 401 for a credential of an account the operator disabled (its sessions, the API tokens it created). */
export const accountDisabled = (message = 'this account is disabled by the operator of this service') =>
  new ApiError('UNAUTHENTICATED', message, {
    reason: 'ACCOUNT_DISABLED',
    headers: { 'www-authenticate': 'Bearer realm="svc", error="invalid_token"' },
  });
/**
 * 401 for a request without credentials, or with a scheme other than Bearer: RFC 6750 section 3.1
 * says the challenge then carries no error code.
 */
export const credentialsRequired = (message: string) =>
  new ApiError('UNAUTHENTICATED', message, {
    reason: 'CREDENTIALS_REQUIRED',
    headers: { 'www-authenticate': 'Bearer realm="svc"' },
  });

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.Unsafe<ErrorCode>({ type: 'string', enum: [...ERROR_CODES], description: 'canonical status name' }),
      message: Type.String({ description: 'human-readable explanation; never contains secrets' }),
      reason: Type.Optional(Type.Unsafe<Reason>({ type: 'string', enum: [...REASONS], description: 'UPPER_SNAKE machine-readable detail: one of a closed set; each operation\'s description names those it answers' })),
      metadata: Type.Optional(
        Type.Record(Type.String(), Type.String(), {
          description: 'string map of details, e.g. `etag` (the current etag) on ABORTED',
        }),
      ),
      field_violations: Type.Optional(
        Type.Array(
          Type.Object({
            field: Type.String({ description: 'location of the bad value, e.g. `body.name`' }),
            description: Type.String(),
          }),
        ),
      ),
      request_id: Type.String({ description: 'the x-request-id of the failed request' }),
    }),
  },
  {
    $id: 'Error',
    description: 'The one error body of every non-2xx response.',
    examples: [{
      error: {
        code: 'INVALID_ARGUMENT', message: 'the request is invalid', reason: 'VALIDATION_FAILED',
        field_violations: [{ field: 'body.name', description: 'must NOT have fewer than 1 characters' }], request_id: 'req_5f2c9a1b7d3e4f60000001',
      },
    }],
  },
);

export type ErrorBodyT = Static<typeof ErrorBody>;

export function errorBody(err: ApiError, requestId: string): ErrorBodyT {
  const body: ErrorBodyT['error'] = { code: err.code, message: err.message, request_id: requestId };
  if (err.options.reason) body.reason = err.options.reason;
  if (err.options.metadata) body.metadata = err.options.metadata;
  if (err.options.fieldViolations?.length) body.field_violations = err.options.fieldViolations;
  return { error: body };
}
