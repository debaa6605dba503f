import { sql } from 'kysely';
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.js';
import { responses, type App } from '../../platform/http.js';
import type { Services } from '../../services.js';

const tags = ['system'];
const Status = Type.Object({ status: Type.String() });

export function systemRoutes(app: App, s: Services): void {
  app.get('/healthz', {
    schema: { tags, operationId: 'healthz', summary: 'Liveness', description: 'The process is up.', response: { 200: Status } },
  }, async () => ({ status: 'ok' }));

  app.get('/readyz', {
    schema: {
      tags, operationId: 'readyz', summary: 'Readiness', description: 'The database answers; 503 otherwise.',
      response: responses({ 200: Status }, [503]),
    },
  }, async () => {
    try {
      await sql`select 1`.execute(s.db);
    } catch {
      throw new ApiError('UNAVAILABLE', 'database is not reachable', { reason: 'DATABASE_DOWN', headers: { 'retry-after': '5' } });
    }
    return { status: 'ok' };
  });

  app.get('/metrics', {
    schema: {
      tags, operationId: 'metrics', summary: 'Prometheus metrics',
      description: 'Request counts and latency histograms by route template and status, plus process metrics, in the Prometheus text format.',
      response: { 200: Type.String({ description: 'Prometheus text exposition format' }) },
    },
  }, async (_request, reply) => {
    reply.type(app.metricsRegistry.contentType);
    return app.metricsRegistry.metrics();
  });

  app.get('/v1/openapi.json', {
    schema: {
      tags, operationId: 'getOpenApi', summary: 'This API as OpenAPI 3.1',
      description: 'Generated from the route schemas; use it to generate clients.',
      response: { 200: Type.Object({}, { additionalProperties: true, description: 'OpenAPI 3.1 document' }) },
    },
  }, async () => app.swagger());
}
