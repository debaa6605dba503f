// What the service knows of tracing: an interface, without an OpenTelemetry import. The
// implementation (platform/otel.ts, the SDK and its instrumentations) is loaded with import() by
// `svc serve` only when tracing is configured (OTEL_EXPORTER_OTLP_ENDPOINT): otherwise not one
// OpenTelemetry module is loaded, and nothing wraps the database, the app or the job runner.
import type { FastifyPluginCallback } from 'fastify';
import type { Dialect as KyselyDialect } from 'kysely';

/** Attribute values of a span: never a secret, a credential or a request's values. */
export type SpanAttributes = Record<string, string | number | boolean>;

/** What the code inside a span may add to it. */
export interface SpanHandle {
  /** an attribute known only at the end (an outcome) */
  set(key: string, value: string | number | boolean): void;
  /** marks the span failed, with what failed (an error's type, never its message) */
  fail(type: string): void;
}

/**
 * Runs `fn` as the current span `name` (a child of the current one, or the root of a trace); a
 * throw marks the span failed with the error's type.
 */
export type InSpan = <T>(name: string, attributes: SpanAttributes, fn: (span: SpanHandle) => Promise<T>) => Promise<T>;

const NO_SPAN: SpanHandle = { set() {}, fail() {} };

/** Without tracing: runs `fn`, nothing else. */
export const untraced: InSpan = (_name, _attributes, fn) => fn(NO_SPAN);

/** An error's type for a span: its class name (never its message, which may quote a value). */
export function errorTypeOf(err: unknown): string {
  return err instanceof Error ? (err.constructor?.name || err.name) : typeof err;
}

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
