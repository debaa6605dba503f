// The baseline of the benchmarks: a bare Fastify server (no logger, no hooks, no database)
// answering GET /members (or BENCH_PATH) with a fixed JSON body, in a process of its own like the
// real server. Usage: BENCH_BODY_FILE=body.json PORT=... [BENCH_PATH=/installs] node bench/bare-server.js
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const body = JSON.parse(readFileSync(process.env.BENCH_BODY_FILE, 'utf8'));
const app = Fastify({ logger: false });
app.get(process.env.BENCH_PATH || '/members', async () => body);
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.stdout.write('listening\n');
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
