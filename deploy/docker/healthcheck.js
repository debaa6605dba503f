// The image's HEALTHCHECK: GET http://127.0.0.1:$PORT/readyz; exit 0 on 200, 1 otherwise (a refused
// connection, another status, or no answer within 4 s). node:http rather than fetch: no WebAssembly
// parser to compile on every check.
import { request } from 'node:http';

const port = Number(process.env.PORT || 8080);
const req = request({ host: '127.0.0.1', port, path: '/readyz', method: 'GET', timeout: 4000 }, (res) => {
  res.resume();
  process.exitCode = res.statusCode === 200 ? 0 : 1;
});
req.on('timeout', () => req.destroy(new Error('timed out')));
req.on('error', (err) => {
  console.error(`readyz: ${err.message}`);
  process.exitCode = 1;
});
req.end();
