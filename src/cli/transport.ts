// The CLI's HTTP transport: a `fetch` for openapi-fetch over node:http and node:https.
//
// Node's global fetch (undici) parses responses with llhttp compiled to WebAssembly; compiling it,
// and V8 tiering it up on a background thread that the process waits for at exit, cost about 100 ms
// of every short command (bench/cli.js). node:http uses the same parser built into Node natively.
// openapi-fetch still builds the Request and reads the Response (web standard types); only the
// bytes on the wire move here. Failures keep fetch's shape: a TypeError whose `cause` is the socket
// error (ECONNREFUSED, ENOTFOUND), and an AbortError when the request's signal aborts.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';

function responseHeaders(res: IncomingMessage): Headers {
  const headers = new Headers();
  for (let i = 0; i < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
  return headers;
}

export async function nodeFetch(input: Request): Promise<Response> {
  const url = new URL(input.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError('fetch failed', { cause: new Error(`unsupported protocol ${url.protocol}`) });
  const body = input.body ? Buffer.from(await input.arrayBuffer()) : undefined;
  const headers: Record<string, string> = {};
  input.headers.forEach((value, name) => { headers[name] = value; });
  if (body) headers['content-length'] = String(body.length);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<Response>((resolve, reject) => {
    const req = send(url, { method: input.method, headers, signal: input.signal }, (res) => {
      const status = res.statusCode ?? 502;
      const empty = input.method === 'HEAD' || status === 204 || status === 205 || status === 304;
      if (empty) res.resume();
      resolve(new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status, statusText: res.statusMessage ?? '', headers: responseHeaders(res) }));
    });
    req.on('error', (err) => reject(err.name === 'AbortError' ? err : new TypeError('fetch failed', { cause: err })));
    req.end(body);
  });
}
