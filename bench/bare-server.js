// The baseline of the benchmarks: a bare Fastify server (no logger, no hooks, no database)
// answering GET /members (or BENCH_METHOD BENCH_PATH) with a fixed JSON body, in a process of its
// own like the real server. With BENCH_ROUTES_FILE (a JSON array of { method, path, bodyFile }),
// one route per entry instead, each with its own body (bench/run.js: one route per scenario).
// Usage: BENCH_BODY_FILE=body.json PORT=... [BENCH_PATH=/installs] [BENCH_METHOD=POST] node bench/bare-server.js
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const routes = process.env.BENCH_ROUTES_FILE
  ? JSON.parse(readFileSync(process.env.BENCH_ROUTES_FILE, 'utf8'))
  : [{ method: process.env.BENCH_METHOD || 'GET', path: process.env.BENCH_PATH || '/members', bodyFile: process.env.BENCH_BODY_FILE }];
const app = Fastify({ logger: false });
for (const r of routes) {
  const body = JSON.parse(readFileSync(r.bodyFile, 'utf8'));
  app.route({ method: r.method, url: r.path, handler: async () => body });
}
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.stdout.write('listening\n');
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
