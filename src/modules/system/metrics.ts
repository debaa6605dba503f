// Prometheus metrics: request counts and latency by route and status. One registry per app so
// several apps in one process (tests) do not collide. Read at /metrics on the public port with
// SVC_METRICS_TOKEN (system.routes.ts), or on SVC_METRICS_ADDRESS (serveMetrics below).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { displayRoute } from '../../platform/http.js';

declare module 'fastify' {
  interface FastifyInstance {
    metricsRegistry: Registry;
  }
}

/** Counts other parts of the service keep, read when /metrics is scraped. */
export interface MetricSources {
  /** OperationWaiters.counts: notifications received, pending `:wait` calls they woke */
  operationWaits(): { received: number; woken: number };
}

export function registerMetrics(app: FastifyInstance, sources: MetricSources): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'svc_http_requests_total',
    help: 'HTTP requests by method, route template and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'svc_http_request_duration_seconds',
    help: 'HTTP request latency by method, route template and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  // Whether `:wait` is pushed (woken by a notification, also from another process) or falls back
  // to its safety poll shows here; a test reads it instead of timing the answer.
  const waits = { received: 0, woken: 0 };
  new Counter({
    name: 'svc_operation_wait_notifications_total',
    help: 'Operation notifications this process received for pending :wait calls (received), and :wait calls they woke (woken)',
    labelNames: ['event'] as const,
    registers: [registry],
    collect() {
      const now = sources.operationWaits();
      this.labels({ event: 'received' }).inc(now.received - waits.received);
      this.labels({ event: 'woken' }).inc(now.woken - waits.woken);
      Object.assign(waits, now);
    },
  });
  app.decorate('metricsRegistry', registry);
  // One bound child per (method, route, status): prom-client hashes the label set on every
  // unbound call, and this hook runs on every request.
  const series = new Map<string, { count: { inc(): void }; time: { observe(v: number): void } }>();
  app.addHook('onResponse', (request, reply, done) => {
    const url = request.routeOptions.url;
    const key = `${request.method} ${url ?? ''} ${reply.statusCode}`;
    let s = series.get(key);
    if (!s) {
      // The route template, never the raw url, so ids do not explode the label space.
      const labels = { method: request.method, route: url ? displayRoute(url) : 'unmatched', status_code: String(reply.statusCode) };
      s = { count: requests.labels(labels), time: latency.labels(labels) };
      series.set(key, s);
    }
    s.count.inc();
    s.time.observe(reply.elapsedTime / 1000);
    done();
  });
}

/**
 * SVC_METRICS_ADDRESS: /metrics alone on a listen address of its own, without a credential (an
 * address only the scraper reaches: a private interface, or loopback beside a sidecar). Anything
 * but `GET /metrics` there is 404. Closed with the server.
 */
export async function serveMetrics(registry: Registry, address: { host: string; port: number }): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('only GET /metrics is served here\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : text),
      () => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics could not be collected\n'),
    );
  });
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
