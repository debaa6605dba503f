// Maps every failure, ours and the framework's, onto the one error body (API.md section 2).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, errorBody, type FieldViolation } from './errors.js';

interface AjvIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

const CONTEXT_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

function violationsOf(issues: AjvIssue[], context: string | undefined): FieldViolation[] {
  const where = CONTEXT_NAMES[context ?? 'body'] ?? 'body';
  return issues.map((issue) => {
    const path = (issue.instancePath ?? '').split('/').filter(Boolean).join('.');
    let field = path ? `${where}.${path}` : where;
    let description = issue.message ?? 'is invalid';
    if (issue.keyword === 'additionalProperties' && typeof issue.params?.additionalProperty === 'string') {
      field = `${field}.${issue.params.additionalProperty}`;
      description = 'unknown field';
    } else if (issue.keyword === 'required' && typeof issue.params?.missingProperty === 'string') {
      field = `${field}.${issue.params.missingProperty}`;
      description = 'is required';
    }
    return { field, description };
  });
}

/** Translates framework errors (validation, JSON parsing, body size) into ApiErrors. */
export function toApiError(err: FastifyError): ApiError | null {
  if (err instanceof ApiError) return err;
  if (err.validation) {
    const violations = violationsOf(err.validation as AjvIssue[], err.validationContext);
    const first = violations[0];
    return new ApiError('INVALID_ARGUMENT', first ? `${first.field} ${first.description}` : 'request is invalid', {
      reason: 'VALIDATION_FAILED',
      fieldViolations: violations,
    });
  }
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('INVALID_ARGUMENT', 'request body is not valid JSON', { reason: 'MALFORMED_JSON' });
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('INVALID_ARGUMENT', 'request body is larger than the server accepts', { reason: 'BODY_TOO_LARGE', status: 413 });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('INVALID_ARGUMENT', 'unsupported content-type; send application/json', { reason: 'UNSUPPORTED_MEDIA_TYPE' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('INVALID_ARGUMENT', 'content-length does not match the body', { reason: 'BAD_CONTENT_LENGTH' });
  }
  if (err instanceof SyntaxError || (err as { type?: string }).type === 'entity.parse.failed') {
    return new ApiError('INVALID_ARGUMENT', 'request body is not valid JSON', { reason: 'MALFORMED_JSON' });
  }
  const status = err.statusCode ?? 500;
  if (status === 404) return new ApiError('NOT_FOUND', err.message || 'not found', { reason: 'NOT_FOUND' });
  if (status >= 400 && status < 500) return new ApiError('INVALID_ARGUMENT', err.message || 'bad request', { reason: 'BAD_REQUEST' });
  return null;
}

export function sendApiError(request: FastifyRequest, reply: FastifyReply, err: ApiError) {
  for (const [name, value] of Object.entries(err.options.headers ?? {})) reply.header(name, value);
  return reply.code(err.status).type('application/json').send(errorBody(err, request.id));
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const apiError = toApiError(error);
    if (apiError) {
      if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
      return sendApiError(request, reply, apiError);
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendApiError(request, reply, new ApiError('INTERNAL', `internal error; quote request id ${request.id}`, { reason: 'INTERNAL' }));
  });

  app.setNotFoundHandler((request, reply) =>
    sendApiError(request, reply, new ApiError('NOT_FOUND', `no route for ${request.method} ${request.url.split('?')[0]}`, { reason: 'ROUTE_NOT_FOUND' })),
  );
}
