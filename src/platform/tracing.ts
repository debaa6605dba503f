// What the service knows of tracing: an interface, without an OpenTelemetry import. The
// implementation (platform/otel.ts, the SDK and its instrumentations) is loaded with import() by
// `svc serve` only when tracing is configured (OTEL_EXPORTER_OTLP_ENDPOINT): otherwise not one
// OpenTelemetry module is loaded, and nothing wraps the database, the app or the job runner.
import type { FastifyPluginCallback } from 'fastify';
import type { Dialect as KyselyDialect } from 'kysely';

/** Attribute values of a span: never a secret, a credential or a request's values. */
export type SpanAttributes = Record<string, string | number | boolean>;

/** Runs `fn` as the current span `name` (a child of the current one, or the root of a trace). */
export type InSpan = <T>(name: string, attributes: SpanAttributes, fn: () => Promise<T>) => Promise<T>;

/** Without tracing: runs `fn`, nothing else. */
export const untraced: InSpan = (_name, _attributes, fn) => fn();

export interface Tracing {
  inSpan: InSpan;
  /** `dialect` whose statements become spans (`db.query.text`: the statement, whose values are parameters, never in it) */
  traceDialect(dialect: KyselyDialect, system: 'sqlite' | 'postgresql'): KyselyDialect;
  /** the Fastify plugin of the request spans (@fastify/otel), registered before any route */
  fastifyPlugin: FastifyPluginCallback;
  /** the fields a log line written inside a span carries: trace_id and span_id (pino's mixin) */
  logFields(): Record<string, string>;
  /** where the SDK's own warnings go (a failed export, say) */
  reportTo(log: { warn(obj: object, msg: string): void }): void;
  /** exports the spans still held, then stops */
  shutdown(): Promise<void>;
}
