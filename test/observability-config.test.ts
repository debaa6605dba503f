// The observability settings as loadConfig reads them (src/config-observability.ts): tracing is off
// without an OTLP endpoint and with OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none; the standard
// OTEL_* variables are honoured as docs/observability.md lists them; a bad value stops the start
// with a message naming the setting, never quoting the exporter's headers (a collector's key).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';

const dataDir = mkdtempSync(join(tmpdir(), 'svc-obs-config-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));
const load = (env: Record<string, string>) => loadConfig({ SVC_DATA_DIR: dataDir, SVC_SECRET_KEY: randomBytes(32).toString('hex'), ...env }).observability;
const refused = (env: Record<string, string>, message: RegExp) => assert.throws(() => load(env), (err: unknown) => err instanceof ConfigError && message.test(err.message));

test('off by default; JSON logs by default', () => {
  assert.deepEqual(load({}), { logFormat: 'json', tracing: null });
  assert.equal(load({ SVC_LOG_FORMAT: 'pretty' }).logFormat, 'pretty');
  refused({ SVC_LOG_FORMAT: 'text' }, /SVC_LOG_FORMAT must be json or pretty, got "text"/);
});

test('an endpoint turns tracing on, with the defaults of the OpenTelemetry specification', () => {
  const tracing = load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing!;
  assert.equal(tracing.tracesUrl, 'http://collector:4318/v1/traces');
  assert.equal(tracing.serviceName, 'svc');
  assert.equal(tracing.sampler, 'parentbased_always_on');
  assert.equal(tracing.samplerRatio, 1);
  assert.equal(tracing.timeoutMs, 10_000);
  assert.deepEqual(tracing.batch, { scheduledDelayMs: 5000, maxQueueSize: 2048, maxExportBatchSize: 512, exportTimeoutMs: 30_000 });
  assert.deepEqual(tracing.headers, {});
});

test('the traces endpoint is used as given; headers, resource, sampler and batch settings are read', () => {
  const tracing = load({
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://otlp.example.com/custom/traces',
    OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20general,x-team=a',
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'authorization=Bearer%20traces-only-key',
    OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '2500',
    OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attributes,deployment.environment.name=prod',
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25',
    OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '50', OTEL_BSP_EXPORT_TIMEOUT: '1000',
  }).tracing!;
  assert.equal(tracing.tracesUrl, 'https://otlp.example.com/custom/traces');
  assert.deepEqual(tracing.headers, { authorization: 'Bearer traces-only-key', 'x-team': 'a' });
  assert.equal(tracing.timeoutMs, 2500);
  assert.equal(tracing.serviceName, 'from-attributes');
  assert.equal(tracing.resourceAttributes['deployment.environment.name'], 'prod');
  assert.equal(tracing.sampler, 'parentbased_traceidratio');
  assert.equal(tracing.samplerRatio, 0.25);
  assert.deepEqual(tracing.batch, { scheduledDelayMs: 100, maxQueueSize: 100, maxExportBatchSize: 50, exportTimeoutMs: 1000 });
  // The headers are not enumerable: a config logged or serialized shows no key.
  assert.ok(!JSON.stringify(tracing).includes('traces-only-key'));
  assert.equal(load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SERVICE_NAME: 'svc-eu1', OTEL_RESOURCE_ATTRIBUTES: 'service.name=x' }).tracing!.serviceName, 'svc-eu1');
});

test('switched off with the endpoint still set: OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none', () => {
  assert.equal(load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).tracing, null);
  assert.equal(load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }).tracing, null);
  assert.notEqual(load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'false' }).tracing, null);
});

test('bad values stop the start, naming the setting and never quoting a header', () => {
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
  refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/);
  refused({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /OTEL_EXPORTER_OTLP_PROTOCOL must be http\/json/);
  refused({ ...on, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }, /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be http\/json/);
  refused({ ...on, OTEL_TRACES_SAMPLER: 'sometimes' }, /OTEL_TRACES_SAMPLER must be one of/);
  refused({ ...on, OTEL_TRACES_SAMPLER_ARG: '2' }, /OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1/);
  refused({ ...on, OTEL_BSP_SCHEDULE_DELAY: 'soon' }, /OTEL_BSP_SCHEDULE_DELAY must be an integer/);
  refused({ ...on, OTEL_BSP_MAX_QUEUE_SIZE: '10', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '20' }, /must not exceed OTEL_BSP_MAX_QUEUE_SIZE/);
  refused({ ...on, OTEL_TRACES_EXPORTER: 'zipkin' }, /OTEL_TRACES_EXPORTER must be otlp or none/);
  refused({ ...on, OTEL_SDK_DISABLED: 'yes' }, /OTEL_SDK_DISABLED must be true or false/);
  assert.throws(() => load({ ...on, OTEL_EXPORTER_OTLP_HEADERS: 'authorization=%E0%A4%A-secret-key' }), (err: unknown) =>
    err instanceof ConfigError && /OTEL_EXPORTER_OTLP_HEADERS: the value of authorization is not validly percent-encoded/.test(err.message) && !err.message.includes('secret-key'));
  assert.throws(() => load({ ...on, OTEL_EXPORTER_OTLP_HEADERS: 'no-equals-secret-key' }), (err: unknown) =>
    err instanceof ConfigError && /OTEL_EXPORTER_OTLP_HEADERS must be a comma-separated list of key=value/.test(err.message) && !err.message.includes('secret-key'));
});
