// The observability settings (issue 35), read by loadConfig (src/config.ts) and nowhere else: the
// log format, and tracing with OpenTelemetry (docs/observability.md). Tracing is off unless an OTLP
// endpoint is set; then the standard OTEL_* variables below are honoured, read here and handed to
// the SDK as explicit options (src/platform/otel.ts), so what the docs list is what applies. The
// exporter's headers often carry a collector's API key: they are a non-enumerable property, so a
// config that reaches a log line or JSON.stringify shows none, and no message here quotes them.
import { ConfigError } from './config.js';

export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export const TRACE_SAMPLERS = [
  'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', 'always_on', 'always_off', 'traceidratio',
] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

export interface TracingConfig {
  /** where spans are posted (OTLP over HTTP, JSON): OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces` */
  tracesUrl: string;
  /** headers sent with each export (OTEL_EXPORTER_OTLP_HEADERS, then OTEL_EXPORTER_OTLP_TRACES_HEADERS): non-enumerable */
  headers: Record<string, string>;
  /** one export's deadline, ms (OTEL_EXPORTER_OTLP_TRACES_TIMEOUT or OTEL_EXPORTER_OTLP_TIMEOUT, default 10000) */
  timeoutMs: number;
  /** the resource's service.name (OTEL_SERVICE_NAME, else service.name of OTEL_RESOURCE_ATTRIBUTES, else `svc`) */
  serviceName: string;
  /** further resource attributes (OTEL_RESOURCE_ATTRIBUTES: `key=value,key=value`, values percent-decoded) */
  resourceAttributes: Record<string, string>;
  /** OTEL_TRACES_SAMPLER (default parentbased_always_on) */
  sampler: TraceSampler;
  /** OTEL_TRACES_SAMPLER_ARG: the ratio of the *traceidratio samplers, 0 to 1 (default 1) */
  samplerRatio: number;
  /** the batch span processor (OTEL_BSP_*) */
  batch: {
    /** OTEL_BSP_SCHEDULE_DELAY: ms between exports (default 5000) */
    scheduledDelayMs: number;
    /** OTEL_BSP_MAX_QUEUE_SIZE: spans held for export; past it new spans are dropped (default 2048) */
    maxQueueSize: number;
    /** OTEL_BSP_MAX_EXPORT_BATCH_SIZE: spans per export (default 512) */
    maxExportBatchSize: number;
    /** OTEL_BSP_EXPORT_TIMEOUT: ms an export may take before it is abandoned (default 30000) */
    exportTimeoutMs: number;
  };
}

export interface ObservabilityConfig {
  /** SVC_LOG_FORMAT: `json` (the default: one JSON object a line) or `pretty` (for a person at a terminal; pino-pretty) */
  logFormat: LogFormat;
  /** tracing with OpenTelemetry, or null: off (no OTLP endpoint set, OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none) */
  tracing: TracingConfig | null;
}

type NumberSetting = (name: string, fallback: number, min: number, max: number) => number;

/** An http(s) URL without a fragment; its value may hold credentials, so a message names the setting only. */
function endpointUrl(name: string, raw: string): URL {
  const url = URL.canParse(raw) ? new URL(raw) : null;
  if (!url || !/^https?:$/.test(url.protocol) || url.hash) {
    throw new ConfigError(`${name} must be an http(s) URL such as http://127.0.0.1:4318 (an OTLP/HTTP collector)`);
  }
  return url;
}

/** `key=value,key=value` (the W3C baggage form the OTEL_* lists use), values percent-decoded. Messages never quote a value. */
function keyValueList(name: string, raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of (raw ?? '').split(',')) {
    if (item.trim() === '') continue;
    const eq = item.indexOf('=');
    const key = eq === -1 ? '' : item.slice(0, eq).trim();
    if (!/^[\x21-\x7e]{1,255}$/.test(key) || key.includes('=')) throw new ConfigError(`${name} must be a comma-separated list of key=value (a key of printable characters each)`);
    let value: string;
    try {
      value = decodeURIComponent(item.slice(eq + 1).trim());
    } catch {
      throw new ConfigError(`${name}: the value of ${key} is not validly percent-encoded`);
    }
    out[key] = value;
  }
  return out;
}

function parseTracing(env: NodeJS.ProcessEnv, numberSetting: NumberSetting): TracingConfig | null {
  const base = (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim();
  const traces = (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? '').trim();
  if (!base && !traces) return null;
  const disabled = (env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase();
  if (disabled !== '' && disabled !== 'true' && disabled !== 'false') throw new ConfigError(`OTEL_SDK_DISABLED must be true or false, got "${env.OTEL_SDK_DISABLED}"`);
  if (disabled === 'true') return null;
  const exporter = (env.OTEL_TRACES_EXPORTER ?? '').trim() || 'otlp';
  if (exporter === 'none') return null;
  if (exporter !== 'otlp') throw new ConfigError(`OTEL_TRACES_EXPORTER must be otlp or none, got "${exporter}"`);
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'] as const) {
    const protocol = (env[name] ?? '').trim();
    if (protocol !== '' && protocol !== 'http/json') {
      throw new ConfigError(`${name} must be http/json (svc exports OTLP over HTTP as JSON, which every OpenTelemetry Collector receives on :4318), got "${protocol}"`);
    }
    if (protocol !== '') break;
  }
  // The signal-specific URL is used as given; the base gets the traces path (the OTLP exporter spec).
  const tracesUrl = traces
    ? endpointUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces).href
    : `${endpointUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base).href.replace(/\/+$/, '')}/v1/traces`;
  const headers = { ...keyValueList('OTEL_EXPORTER_OTLP_HEADERS', env.OTEL_EXPORTER_OTLP_HEADERS), ...keyValueList('OTEL_EXPORTER_OTLP_TRACES_HEADERS', env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) };
  const resourceAttributes = keyValueList('OTEL_RESOURCE_ATTRIBUTES', env.OTEL_RESOURCE_ATTRIBUTES);
  const serviceName = (env.OTEL_SERVICE_NAME ?? '').trim() || resourceAttributes['service.name'] || 'svc';
  const sampler = (env.OTEL_TRACES_SAMPLER ?? '').trim() || 'parentbased_always_on';
  if (!(TRACE_SAMPLERS as readonly string[]).includes(sampler)) throw new ConfigError(`OTEL_TRACES_SAMPLER must be one of ${TRACE_SAMPLERS.join(', ')}, got "${sampler}"`);
  const ratioRaw = (env.OTEL_TRACES_SAMPLER_ARG ?? '').trim();
  const samplerRatio = ratioRaw === '' ? 1 : Number(ratioRaw);
  if (!Number.isFinite(samplerRatio) || samplerRatio < 0 || samplerRatio > 1) throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "${ratioRaw}"`);
  const tracing: TracingConfig = {
    tracesUrl,
    headers,
    timeoutMs: numberSetting(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ? 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT' : 'OTEL_EXPORTER_OTLP_TIMEOUT', 10_000, 1, 600_000),
    serviceName,
    resourceAttributes,
    sampler: sampler as TraceSampler,
    samplerRatio,
    batch: {
      scheduledDelayMs: numberSetting('OTEL_BSP_SCHEDULE_DELAY', 5000, 1, 3_600_000),
      maxQueueSize: numberSetting('OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1, 1_000_000),
      maxExportBatchSize: numberSetting('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1, 1_000_000),
      exportTimeoutMs: numberSetting('OTEL_BSP_EXPORT_TIMEOUT', 30_000, 1, 600_000),
    },
  };
  if (tracing.batch.maxExportBatchSize > tracing.batch.maxQueueSize) {
    throw new ConfigError('OTEL_BSP_MAX_EXPORT_BATCH_SIZE must not exceed OTEL_BSP_MAX_QUEUE_SIZE');
  }
  Object.defineProperty(tracing, 'headers', { enumerable: false });
  return tracing;
}

export function parseObservability(env: NodeJS.ProcessEnv, numberSetting: NumberSetting): ObservabilityConfig {
  const logFormat = (env.SVC_LOG_FORMAT ?? '').trim() || 'json';
  if (!(LOG_FORMATS as readonly string[]).includes(logFormat)) throw new ConfigError(`SVC_LOG_FORMAT must be json or pretty, got "${logFormat}"`);
  return { logFormat: logFormat as LogFormat, tracing: parseTracing(env, numberSetting) };
}
