// Operational endpoints: liveness, readiness, Prometheus metrics and the OpenAPI document.
// Public (no credentials: load balancers call them), except /metrics: it tells how busy the service
// is and what it runs, so on the public port it answers only a bearer of SVC_METRICS_TOKEN (or is
// served on a listen address of its own, SVC_METRICS_ADDRESS: metrics.ts).
import { Type } from 'typebox';
import { ping } from '../../db/database.js';
import { safeEqual, sha256Hex } from '../../platform/crypto.js';
import { ApiError, credentialsRequired, unauthenticated } from '../../platform/errors.js';
import { errorResponse, headerOf, refTo, type App } from '../../platform/http.js';
import { codingFor, documentBytes, noneMatchHas } from './openapi-bytes.js';
import type { Services } from '../../services.js';

const tags = ['system'];
export const Status = Type.Object(
  { status: Type.Literal('ok', { description: 'always `ok` when the probe passes' }) },
  { $id: 'ProbeStatus', description: 'The probe passed', examples: [{ status: 'ok' }] },
);
export const OpenApiDocument = Type.Object({}, {
  $id: 'OpenApiDocument',
  additionalProperties: true,
  description: 'The OpenAPI 3.1 document',
  examples: [{ openapi: '3.1.0', info: { title: 'svc: workspace platform API', version: '1.0.0' }, paths: {} }],
});

export function systemRoutes(app: App, s: Pick<Services, 'db' | 'config'>): void {
  // Made on the first request: the document lists every route, which are all registered by then.
  const openApi = documentBytes(() => app.swagger());

  app.get('/healthz', {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'healthz', summary: 'Liveness',
      description: 'The process is up and serving HTTP. 503 once the instance has started draining on SIGTERM.',
      response: { 200: refTo(Status) },
    },
  }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'readyz', summary: 'Readiness',
      description: 'The database answers a query. 503 UNAVAILABLE (reason DATABASE_DOWN) when it does not, and while the instance drains.',
      response: { 200: refTo(Status), 503: errorResponse(503) },
    },
  }, async () => {
    try {
      await ping(s.db);
    } catch {
      throw new ApiError('UNAVAILABLE', 'database is not reachable', { reason: 'DATABASE_DOWN', headers: { 'retry-after': '5' } });
    }
    return { status: 'ok' as const };
  });

  app.get('/metrics', {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'metrics', summary: 'Prometheus metrics',
      description:
        'Prometheus text format: `svc_http_requests_total` and `svc_http_request_duration_seconds` by method, route template and ' +
        'status code; `svc_operation_wait_notifications_total` (operation notifications received for pending `:wait` calls, ' +
        'and the waits they woke); plus the default Node.js process metrics. Off the public port by default (404): with ' +
        'SVC_METRICS_TOKEN set, it answers a request bearing that token (`authorization: Bearer ...`; any other is 401); with ' +
        'SVC_METRICS_ADDRESS set, the same text is served without a credential at `/metrics` on that address of its own.',
      security: [{ metricsToken: [] }],
      headers: Type.Object({ authorization: Type.Optional(Type.String({ maxLength: 1024, description: '`Bearer` and SVC_METRICS_TOKEN' })) }),
      response: {
        200: {
          description: 'Prometheus text exposition format (version 0.0.4)',
          content: { 'text/plain': { schema: Type.String({ description: 'metric families, one sample per line' }) } },
        },
        401: errorResponse(401),
        404: errorResponse(404),
      },
    },
  }, async (request, reply) => {
    const token = s.config.metrics.token;
    if (token === null) {
      throw new ApiError('NOT_FOUND', 'metrics are not served on this port: set SVC_METRICS_TOKEN (and send it as a bearer token) or SVC_METRICS_ADDRESS', { reason: 'NOT_FOUND' });
    }
    const sent = /^Bearer (\S+)$/i.exec(headerOf(request, 'authorization') ?? '')?.[1];
    if (sent === undefined) throw credentialsRequired('/metrics needs SVC_METRICS_TOKEN as a bearer token');
    if (!safeEqual(sha256Hex(sent), sha256Hex(token))) throw unauthenticated('this is not the metrics token (SVC_METRICS_TOKEN)');
    reply.type(app.metricsRegistry.contentType);
    return app.metricsRegistry.metrics();
  });

  app.get('/v1/openapi.json', {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'getOpenApi', summary: 'This API as OpenAPI 3.1',
      description:
        'Generated from the route schemas (the same schemas that validate requests); use it to generate clients. Compressed with ' +
        'br or gzip when Accept-Encoding allows; carries a strong ETag, and If-None-Match with it is 304 without a body.',
      headers: Type.Object({
        'accept-encoding': Type.Optional(Type.String({ maxLength: 1024, description: 'br and gzip are offered' })),
        'if-none-match': Type.Optional(Type.String({ maxLength: 1024, description: 'an ETag of this document: 304 when it is still current' })),
      }),
      response: { 200: refTo(OpenApiDocument), 400: errorResponse(400), 304: { description: 'the ETag sent in If-None-Match is still current', type: 'null' } },
    },
  }, async (request, reply) => {
    const variant = await openApi(codingFor(headerOf(request, 'accept-encoding')));
    reply.header('etag', variant.etag).header('vary', 'accept-encoding').header('cache-control', 'no-cache');
    if (noneMatchHas(headerOf(request, 'if-none-match'), variant.etag)) return reply.code(304).send(null);
    if (variant.coding !== 'identity') reply.header('content-encoding', variant.coding);
    return reply.type('application/json; charset=utf-8').send(variant.bytes);
  });
}
