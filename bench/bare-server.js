// The baseline of the benchmarks: a bare Fastify server (no logger, no hooks, no database)
// answering GET /members (or BENCH_METHOD BENCH_PATH) with a fixed JSON body, in a process of its
// own like the real server.
// Usage: BENCH_BODY_FILE=body.json PORT=... [BENCH_PATH=/installs] [BENCH_METHOD=POST] node bench/bare-server.js
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const body = JSON.parse(readFileSync(process.env.BENCH_BODY_FILE, 'utf8'));
const app = Fastify({ logger: false });
app.route({ method: process.env.BENCH_METHOD || 'GET', url: process.env.BENCH_PATH || '/members', handler: async () => body });
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.stdout.write('listening\n');
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
