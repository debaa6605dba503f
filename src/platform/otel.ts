// Tracing with OpenTelemetry (API.md 8.12; docs/observability.md), loaded with import() by `svc
// serve` only when an OTLP endpoint is configured (src/config-observability.ts): without one, not
// one module of the SDK is loaded. Spans are exported in batches as OTLP over HTTP (JSON).
//
// What becomes a span, and what a span never holds:
//   - each HTTP request: @fastify/otel (the Fastify team's instrumentation; OpenTelemetry's own
//     instrumentation-fastify is deprecated in its favour and patches `require`, which the bundled
//     build and ESM never go through). One SERVER span per request named `METHOD /route/:pattern`;
//     url.path without its query string (a token sent as `?access_token=` must not leave), no header;
//     a `traceparent` header from the caller makes it a child of the caller's span;
//   - each SQL statement run inside a request or a job (our Kysely driver wrapper below): the
//     statement's text, whose values are parameters and so never in it; never the database URL;
//   - each job run by the worker pool and each workflow step (src/jobs, through `inSpan`);
//   - each outgoing fetch (model providers, OpenID, JWKS, Hetzner Cloud...) inside a request or a
//     job: @opentelemetry/instrumentation-undici (diagnostics_channel: no patching), with the URL
//     cut to its origin and path and `traceparent` sent along.
// An error's message is not recorded (a driver's message may quote a value): its type or code is.
import { context, diag, DiagLogLevel, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler,
} from '@opentelemetry/sdk-trace-base';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import type { FastifyPluginCallback, FastifyRequest } from 'fastify';
import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult, TransactionSettings } from 'kysely';
import type { TracingConfig } from '../config-observability.js';
import { errorTypeOf, type InSpan, type SpanAttributes, type Tracing } from './tracing.js';

const SCOPE = 'svc';
/** db.query.text longer than this is cut (a many-row insert); the statement's start says what it is */
const MAX_STATEMENT = 4096;

function samplerOf(config: TracingConfig): Sampler {
  const ratio = new TraceIdRatioBasedSampler(config.samplerRatio);
  switch (config.sampler) {
    case 'always_on': return new AlwaysOnSampler();
    case 'always_off': return new AlwaysOffSampler();
    case 'traceidratio': return ratio;
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: ratio });
    default: return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** What an error is, without its message: a driver's code (SQLITE_CONSTRAINT_UNIQUE, 23505) or its class. */
function errorType(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string' || typeof code === 'number') return String(code);
  return errorTypeOf(err);
}

function failedAs(span: Span, type: string): void {
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

function failed(span: Span, err: unknown): void {
  failedAs(span, errorType(err));
}

/** `select`, `insert`... and the first table a statement names, for the span's name (cached per statement). */
const statementNames = new Map<string, { operation: string; table: string | null }>();
function statementName(sql: string): { operation: string; table: string | null } {
  let named = statementNames.get(sql);
  if (named) return named;
  const operation = (/^\s*(\w+)/.exec(sql)?.[1] ?? 'sql').toLowerCase();
  const table = operation === 'insert' ? /\binto\s+"?([\w.]+)/i.exec(sql)
    : operation === 'update' ? /^\s*update\s+"?([\w.]+)/i.exec(sql)
      : operation === 'select' || operation === 'delete' || operation === 'with' ? /\bfrom\s+"?([\w.]+)/i.exec(sql) : null;
  named = { operation, table: table?.[1] ?? null };
  if (statementNames.size < 2000) statementNames.set(sql, named);
  return named;
}

/**
 * A Kysely driver whose connections make a span of each statement, when a span is current (a
 * request's or a job's): the worker pool's polls and the sweeps' statements make none, or every
 * second would start a trace of its own.
 */
class TracedDriver implements Driver {
  private readonly wrapped = new WeakMap<DatabaseConnection, DatabaseConnection>();
  private readonly inner = new WeakMap<DatabaseConnection, DatabaseConnection>();
  savepoint?: Driver['savepoint'];
  rollbackToSavepoint?: Driver['rollbackToSavepoint'];
  releaseSavepoint?: Driver['releaseSavepoint'];

  constructor(private readonly driver: Driver, private readonly tracer: Tracer, private readonly system: 'sqlite' | 'postgresql') {
    const d = driver;
    if (d.savepoint) this.savepoint = (c, name, compile) => d.savepoint!(this.unwrap(c), name, compile);
    if (d.rollbackToSavepoint) this.rollbackToSavepoint = (c, name, compile) => d.rollbackToSavepoint!(this.unwrap(c), name, compile);
    if (d.releaseSavepoint) this.releaseSavepoint = (c, name, compile) => d.releaseSavepoint!(this.unwrap(c), name, compile);
  }

  private unwrap(connection: DatabaseConnection): DatabaseConnection {
    return this.inner.get(connection) ?? connection;
  }

  init(): Promise<void> {
    return this.driver.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.driver.acquireConnection();
    let traced = this.wrapped.get(connection);
    if (!traced) {
      traced = {
        executeQuery: <R>(query: CompiledQuery) => this.traced(query, () => connection.executeQuery<R>(query)),
        streamQuery: <R>(query: CompiledQuery, chunkSize?: number) => connection.streamQuery<R>(query, chunkSize),
      };
      this.wrapped.set(connection, traced);
      this.inner.set(traced, connection);
    }
    return traced;
  }

  private async traced<R>(query: CompiledQuery, run: () => Promise<QueryResult<R>>): Promise<QueryResult<R>> {
    const parent = trace.getSpan(context.active());
    if (!parent?.isRecording()) return run();
    const { operation, table } = statementName(query.sql);
    const attributes: SpanAttributes = {
      'db.system.name': this.system,
      'db.operation.name': operation,
      'db.query.text': query.sql.length > MAX_STATEMENT ? `${query.sql.slice(0, MAX_STATEMENT)}...` : query.sql,
    };
    if (table) attributes['db.collection.name'] = table;
    const span = this.tracer.startSpan(table ? `${operation} ${table}` : operation, { kind: SpanKind.CLIENT, attributes });
    try {
      const result = await run();
      if (result.numAffectedRows !== undefined) span.setAttribute('db.response.affected_rows', Number(result.numAffectedRows));
      return result;
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.driver.beginTransaction(this.unwrap(connection), settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.driver.commitTransaction(this.unwrap(connection));
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.driver.rollbackTransaction(this.unwrap(connection));
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.driver.releaseConnection(this.unwrap(connection));
  }

  destroy(): Promise<void> {
    return this.driver.destroy();
  }
}

/** The request's path without its query string (whose values may be credentials). */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** Starts the SDK: the tracer provider (global), W3C trace context, the instrumentations. */
export function startTracing(config: TracingConfig, service: { version: string; instanceId: string }): Tracing {
  const resource = defaultResource().merge(resourceFromAttributes({
    ...config.resourceAttributes,
    'service.name': config.serviceName,
    'service.version': service.version,
    'service.instance.id': service.instanceId,
  }));
  const exporter = new OTLPTraceExporter({ url: config.tracesUrl, headers: { ...config.headers }, timeoutMillis: config.timeoutMs });
  const provider = new BasicTracerProvider({
    resource,
    sampler: samplerOf(config),
    spanProcessors: [new BatchSpanProcessor(exporter, {
      scheduledDelayMillis: config.batch.scheduledDelayMs,
      maxQueueSize: config.batch.maxQueueSize,
      maxExportBatchSize: config.batch.maxExportBatchSize,
      exportTimeoutMillis: config.batch.exportTimeoutMs,
    })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const tracer = provider.getTracer(SCOPE, service.version);

  const fastify = new FastifyOtelInstrumentation({
    // One span per request: the hooks' and the handler's own spans would multiply each request's
    // spans by ten for timings the SQL spans already break down.
    instrumentHooks: false,
    instrumentHandler: false,
    requestHook: (span: Span, request: FastifyRequest) => {
      const route = request.routeOptions.url;
      span.updateName(route ? `${request.method} ${route}` : request.method);
      span.setAttribute('url.path', pathOf(request.url));
    },
  });
  fastify.setTracerProvider(provider);
  const undici = new UndiciInstrumentation({
    requireParentforSpans: true,
    // The URL as far as its path: a query string may carry a key, and credentials never leave.
    startSpanHook: (request: { origin: string; path: string }) => {
      const url = new URL(request.path, request.origin);
      return { 'url.full': `${url.origin}${url.pathname}`, 'url.query': '' };
    },
  });
  undici.setTracerProvider(provider);

  const inSpan: InSpan = (name, attributes, fn) => tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn({ set: (key, value) => span.setAttribute(key, value), fail: (type) => failedAs(span, type) });
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });

  let shutdown: Promise<void> | null = null;
  return {
    inSpan,
    traceDialect: (dialect: Dialect, system) => ({
      createAdapter: () => dialect.createAdapter(),
      createDriver: () => new TracedDriver(dialect.createDriver(), tracer, system),
      createIntrospector: (db) => dialect.createIntrospector(db),
      createQueryCompiler: () => dialect.createQueryCompiler(),
    }),
    fastifyPlugin: fastify.plugin() as unknown as FastifyPluginCallback,
    logFields(): Record<string, string> {
      const span = trace.getSpan(context.active());
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
    reportTo(log) {
      // The SDK's own errors and warnings (an export refused or timed out) into the process log:
      // outside any span (an export runs on a timer that a request's context may have started,
      // and the line is about no request), an error's message rather than its stack as JSON.
      const warn = (message: string) => context.with(ROOT_CONTEXT, () => {
        let text = message;
        try {
          const parsed = JSON.parse(message) as { message?: unknown };
          if (typeof parsed?.message === 'string') text = parsed.message;
        } catch { /* a message in words already */ }
        log.warn({ component: 'opentelemetry' }, `tracing: ${text}`);
      });
      diag.setLogger({ error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN);
    },
    shutdown() {
      shutdown ??= (async () => {
        fastify.disable();
        undici.disable();
        await provider.shutdown();
      })();
      return shutdown;
    },
  };
}
