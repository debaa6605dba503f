// The sandbox engine (issue 13, scope 2 and 3): what a run returns, and each limit ending a run
// with its own error while the pool stays at full size and keeps running code.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createSandbox, type Sandbox } from '../src/sandbox/index.js';
import { assertHealthy, expectError, expectOk, noBridge, recordingBridge } from './sandbox-fixtures.js';

const SIZE = 2;
let sandbox: Sandbox;

before(async () => {
  sandbox = createSandbox({ workers: SIZE, perTenantConcurrency: SIZE });
  await sandbox.ready();
});
after(() => sandbox.close());

const run = (code: string, extra: Partial<Parameters<Sandbox['run']>[0]> = {}) => sandbox.run({ code, tenant: 'ws_test', bridge: noBridge, ...extra });

describe('a successful run', () => {
  test('returns the output, the console lines with their levels, and stats', async () => {
    const result = expectOk(
      await run(
        `console.log('listing', inputs.days, { nested: [1, 2] });
         console.info('info'); console.warn('warn'); console.error(new Error('shown, not thrown')); console.debug(undefined, null, 1n);
         return { days: inputs.days * 2, names: inputs.names.map((n) => n.toUpperCase()) };`,
        { inputs: { days: 7, names: ['a', 'b'] } },
      ),
    );
    assert.deepEqual(result.output, { days: 14, names: ['A', 'B'] });
    assert.deepEqual(
      result.logs.map((l) => [l.level, l.message.split('\n')[0]]),
      [
        ['log', 'listing 7 {"nested":[1,2]}'],
        ['info', 'info'],
        ['warn', 'warn'],
        ['error', 'Error: shown, not thrown'],
        ['debug', 'undefined null 1n'],
      ],
    );
    assert.match(result.logs[3]!.message, /snippet\.js:2:/, 'an Error logs its stack');
    for (const line of result.logs) assert.ok(Number.isInteger(line.at_ms) && line.at_ms >= 0);
    assert.deepEqual(Object.keys(result.stats).sort(), ['cpu_time_ms', 'heap_used_bytes', 'request_count', 'wall_time_ms']);
    assert.ok(result.stats.heap_used_bytes > 0);
    assert.equal(result.stats.request_count, 0);
    assert.ok(result.stats.wall_time_ms >= 0 && result.stats.cpu_time_ms >= 0);
  });

  test('no return value is a null output; the function is async and strict', async () => {
    assert.equal(expectOk(await run('const x = await Promise.resolve(1);')).output, null);
    const strict = expectOk(await run('try { undeclared = 1; return "sloppy" } catch (e) { return e.name }'));
    assert.equal(strict.output, 'ReferenceError');
  });

  test('inputs are a deep-frozen copy', async () => {
    const inputs = { list: [{ id: 1 }], name: 'x' };
    const result = expectOk(
      await run(
        `const tries = [];
         for (const write of [() => { inputs.name = 'y' }, () => { inputs.list[0].id = 2 }, () => { inputs.list.push(3) }]) {
           try { write(); tries.push('written') } catch (e) { tries.push(e.name) }
         }
         return { tries, frozen: Object.isFrozen(inputs.list[0]), inputs }`,
        { inputs },
      ),
    );
    assert.deepEqual(result.output, { tries: ['TypeError', 'TypeError', 'TypeError'], frozen: true, inputs: { list: [{ id: 1 }], name: 'x' } });
    assert.deepEqual(inputs, { list: [{ id: 1 }], name: 'x' });
  });

  test('bad arguments are the caller’s bug: TypeError or RangeError, nothing runs', async () => {
    await assert.rejects(sandbox.run({ code: 'return 1', tenant: '', bridge: noBridge }), TypeError);
    await assert.rejects(sandbox.run({ code: 'return 1', tenant: 't', bridge: noBridge, inputs: { n: 1n } as never }), TypeError);
    const deep: Record<string, unknown> = {};
    let cursor = deep;
    for (let i = 0; i < 100; i++) cursor = (cursor.a = {}) as Record<string, unknown>;
    await assert.rejects(sandbox.run({ code: 'return 1', tenant: 't', bridge: noBridge, inputs: deep as never }), /deeper than 64/);
    await assert.rejects(sandbox.run({ code: 'return 1', tenant: 't', bridge: noBridge, limits: { wallMs: 0 } }), RangeError);
    await assert.rejects(sandbox.run({ code: 'return 1', tenant: 't', bridge: noBridge, limits: { stackBytes: 64 * 1024 * 1024 } }), RangeError);
  });
});

describe('errors end the run with a typed error and leave the pool healthy', () => {
  test('a thrown error: SNIPPET_THREW with message, name and stack', async () => {
    const result = expectError(await run('function check(n) {\n  if (n > 1) throw new RangeError(`too many: ${n}`);\n}\ncheck(inputs.n);', { inputs: { n: 3 } }), 'SNIPPET_THREW');
    assert.equal(result.error.message, 'too many: 3');
    assert.equal(result.error.details.name, 'RangeError');
    assert.match(String(result.error.details.stack), /at check \(snippet\.js:2:/);
    assert.match(String(result.error.details.stack), /snippet\.js:4:/);
    await assertHealthy(sandbox, SIZE);
  });

  test('a rejected await, a thrown non-Error and a syntax error are SNIPPET_THREW too', async () => {
    assert.equal(expectError(await run('await Promise.reject(new Error("later"))'), 'SNIPPET_THREW').error.message, 'later');
    const plain = expectError(await run('throw { reason: "plain object" }'), 'SNIPPET_THREW');
    assert.equal(plain.error.message, '{"reason":"plain object"}');
    const syntax = expectError(await run('return (1 +'), 'SNIPPET_THREW');
    assert.equal(syntax.error.details.name, 'SyntaxError');
  });

  test('an infinite loop: TIMEOUT at the wall limit', async () => {
    const result = expectError(await run('while (true) {}', { limits: { wallMs: 300 } }), 'TIMEOUT');
    // Which mechanism ended it, not how fast: the watchdog says limit 'watchdog' and replaces the worker.
    assert.equal(result.error.details.limit, 'wall', 'ended by the interrupt handler, not the watchdog');
    assert.equal(sandbox.stats().replaced, 0);
    await assertHealthy(sandbox, SIZE);
  });

  test('an infinite loop that catches everything still times out (the interrupt is uncatchable)', async () => {
    const result = expectError(await run('for (;;) { try { while (true) {} } catch (e) {} }', { limits: { wallMs: 300 } }), 'TIMEOUT');
    assert.equal(result.error.details.limit, 'wall');
  });

  test('the CPU limit ends a busy loop before the wall limit', async () => {
    // A wall limit far away: even on a crowded machine 200 ms of CPU come long before it.
    const result = expectError(await run('while (true) {}', { limits: { wallMs: 10 * 60_000, cpuMs: 200 } }), 'TIMEOUT');
    assert.equal(result.error.details.limit, 'cpu');
    assert.ok(result.stats.cpu_time_ms >= 150, JSON.stringify(result.stats));
  });

  test('an async loop of jobs times out too', async () => {
    expectError(await run('for (;;) await null;', { limits: { wallMs: 300 } }), 'TIMEOUT');
  });

  test('a promise nothing can settle ends at once: TIMEOUT never_settled', async () => {
    const result = expectError(await run('await new Promise(() => {})'), 'TIMEOUT');
    // The reason says the run ended because nothing was left to settle it, not at the wall limit.
    assert.equal(result.error.details.limit, 'never_settled');
  });

  for (const [name, code] of [
    ['strings', 'const a = []; while (true) a.push("x".repeat(1000) + a.length)'],
    ['objects', 'const a = []; while (true) a.push({ n: a.length })'],
    ['typed arrays', 'const a = []; while (true) a.push(new Uint8Array(100000))'],
    ['one huge allocation', 'return new ArrayBuffer(512 * 1024 * 1024).byteLength'],
    ['a string doubled until it breaks', 'let s = "x"; while (true) s = [s, s].join(""); return s.length'],
  ] as const) {
    test(`a memory bomb (${name}): MEMORY_LIMIT`, async () => {
      const result = expectError(await run(code, { limits: { memoryBytes: 32 * 1024 * 1024, wallMs: 30_000 } }), 'MEMORY_LIMIT');
      assert.equal(result.error.details.limit_bytes, 32 * 1024 * 1024);
      await assertHealthy(sandbox, SIZE);
    });
  }

  test('a snippet that catches running out of memory may carry on', async () => {
    const result = expectOk(
      await run('let a = []; try { while (true) a.push("y".repeat(10000) + a.length) } catch (e) { a = null; return String(e) }', {
        limits: { memoryBytes: 16 * 1024 * 1024 },
      }),
    );
    assert.equal(result.output, 'InternalError: out of memory');
    await assertHealthy(sandbox, SIZE);
  });

  test('deep recursion: a clean stack overflow error, catchable inside', async () => {
    const result = expectError(await run('function down(n) { return down(n + 1) + 1 }\nreturn down(0)'), 'SNIPPET_THREW');
    assert.equal(result.error.message, 'stack overflow');
    assert.equal(result.error.details.name, 'InternalError');
    const caught = expectOk(await run('let depth = 0; function down() { depth++; down() } try { down() } catch (e) { return [depth > 500, String(e)] }'));
    assert.deepEqual(caught.output, [true, 'InternalError: stack overflow']);
    // Nesting that native code recurses over (JSON) ends the same way.
    const nested = expectError(
      await run('let o = {}; for (let i = 0; i < 100000; i++) o = { o }; return JSON.stringify(o).length', { limits: { wallMs: 30_000 } }),
      'SNIPPET_THREW',
    );
    assert.equal(nested.error.message, 'stack overflow');
    await assertHealthy(sandbox, SIZE);
  });

  test('a huge output: OUTPUT_TOO_LARGE (the limit counts UTF-8 bytes of the JSON)', async () => {
    const result = expectError(await run('return "x".repeat(2 * 1024 * 1024)'), 'OUTPUT_TOO_LARGE');
    assert.equal(result.error.details.limit_bytes, 1024 * 1024);
    // 98 characters plus two quotes are exactly 100 bytes; "é" is two bytes.
    assert.equal(expectOk(await run('return "x".repeat(98)', { limits: { maxOutputBytes: 100 } })).output, 'x'.repeat(98));
    expectError(await run('return "x".repeat(99)', { limits: { maxOutputBytes: 100 } }), 'OUTPUT_TOO_LARGE');
    expectError(await run('return "é".repeat(50)', { limits: { maxOutputBytes: 100 } }), 'OUTPUT_TOO_LARGE');
    await assertHealthy(sandbox, SIZE);
  });

  test('an output JSON cannot represent: INVALID_OUTPUT', async () => {
    for (const [code, type] of [
      ['return () => 1', 'function'],
      ['return 10n', 'bigint'],
      ['return Symbol("s")', 'symbol'],
      ['const a = {}; a.self = a; return a', 'object'],
    ] as const) {
      const result = expectError(await run(code), 'INVALID_OUTPUT');
      assert.equal(result.error.details.type, type, code);
    }
  });

  test('console output is capped at 1,000 lines and 64 KiB, then one marker line', async () => {
    const lines = expectOk(await run('for (let i = 0; i < 1500; i++) console.log("line", i); return 1')).logs;
    assert.equal(lines.length, 1001);
    assert.equal(lines[999]!.message, 'line 999');
    assert.match(lines[1000]!.message, /truncated.*: 500 line/);
    const bytes = expectOk(await run('for (let i = 0; i < 100; i++) console.log("z".repeat(1000)); return 1')).logs;
    const kept = bytes.slice(0, -1).reduce((sum, l) => sum + Buffer.byteLength(l.message), 0);
    assert.equal(kept, 64 * 1024);
    assert.match(bytes.at(-1)!.message, /truncated/);
    const huge = expectOk(await run('console.log("w".repeat(10 * 1024 * 1024)); return 1')).logs;
    assert.equal(huge[0]!.message.length, 64 * 1024);
  });

  test('a cancelled run ends with CANCELLED, running or queued', async () => {
    const controller = new AbortController();
    // A wall limit far away: CANCELLED (not TIMEOUT) says the abort ended the loop.
    const running = run('while (true) {}', { signal: controller.signal, limits: { wallMs: 60_000 } });
    setTimeout(() => controller.abort(), 100);
    expectError(await running, 'CANCELLED');
    const early = new AbortController();
    early.abort();
    expectError(await run('return 1', { signal: early.signal }), 'CANCELLED');
    await assertHealthy(sandbox, SIZE);
  });
});

describe('platform.request', () => {
  test('reaches the bridge validated and normalized, and returns its answer', async () => {
    const { bridge, seen } = recordingBridge(() => ({
      status: 201,
      headers: { 'Content-Type': 'application/json', 'set-cookie': 'session=secret', etag: '"3"' },
      body: { id: 'inst_1' },
    }));
    const result = expectOk(
      await run(
        `const r = await platform.request({ method: 'post', path: '/v1/installs?limit=2', query: { view: 'full', tag: ['a', 'b'], n: 3 },
           headers: { 'If-Match': '"2"', 'Idempotency-Key': 'k1' }, body: { name: 'x' } });
         return r`,
        { bridge },
      ),
    );
    assert.deepEqual(result.output, { status: 201, headers: { 'content-type': 'application/json', etag: '"3"' }, body: { id: 'inst_1' } });
    assert.deepEqual(seen, [
      {
        method: 'POST',
        path: '/v1/installs',
        query: { limit: '2', view: 'full', tag: ['a', 'b'], n: '3' },
        headers: { 'if-match': '"2"', 'idempotency-key': 'k1' },
        body: { name: 'x' },
      },
    ]);
    assert.equal(result.stats.request_count, 1);
  });

  test('51 requests: REQUEST_LIMIT, the bridge served exactly 50, even when the snippet catches the refusal', async () => {
    const { bridge, seen } = recordingBridge();
    const result = expectError(await run('for (let i = 0; i < 51; i++) await platform.request({ path: `/v1/things/${i}` }); return "done"', { bridge }), 'REQUEST_LIMIT');
    assert.equal(result.error.details.limit, 50);
    assert.equal(seen.length, 50);
    assert.equal(result.stats.request_count, 50);
    const caught = recordingBridge();
    const swallowed = await run(
      'for (let i = 0; i < 60; i++) { try { await platform.request({ path: "/v1/x" }) } catch (e) {} } return "kept going"',
      { bridge: caught.bridge },
    );
    expectError(swallowed, 'REQUEST_LIMIT');
    assert.equal(caught.seen.length, 50);
    const three = recordingBridge();
    expectError(await run('await Promise.all([1, 2, 3].map(() => platform.request({ path: "/v1/x" })))', { bridge: three.bridge, limits: { maxRequests: 2 } }), 'REQUEST_LIMIT');
    assert.ok(three.seen.length <= 2);
    await assertHealthy(sandbox, SIZE);
  });

  for (const path of [
    'https://evil.example/v1/installs',
    '//evil.example/v1/installs',
    'http:/v1/installs',
    'javascript:alert(1)',
    '/v1/../admin',
    '/v1/installs/../../etc/passwd',
    '/v1/%2e%2e/admin',
    '/v1/installs/%2F..%2Fsecrets',
    '/v1/a\\b',
    '/v2/installs',
    '/installs',
    'v1/installs',
    '/v1/installs#frag',
    '/v1/%zz',
    '/v1/with space',
  ]) {
    test(`a request to ${JSON.stringify(path)} is refused inside the snippet; the bridge never sees it`, async () => {
      const { bridge, seen } = recordingBridge();
      const result = expectError(await run(`return await platform.request({ path: ${JSON.stringify(path)} })`, { bridge }), 'SNIPPET_THREW');
      assert.equal(result.error.details.name, 'TypeError');
      assert.match(result.error.message, /^platform\.request: /);
      assert.equal(seen.length, 0);
    });
  }

  for (const header of ['Authorization', 'cookie', 'svc-context', 'Host', 'X-Forwarded-For', 'x-forwarded-host', 'Proxy-Authorization', 'transfer-encoding', 'connection', 'content-length', 'x-http-method-override', 'Forwarded']) {
    test(`setting the ${header} header is refused; the bridge never sees the request`, async () => {
      const { bridge, seen } = recordingBridge();
      const result = expectError(
        await run(`return await platform.request({ method: 'GET', path: '/v1/api_tokens', headers: { ${JSON.stringify(header)}: 'Bearer stolen' } })`, { bridge }),
        'SNIPPET_THREW',
      );
      assert.match(result.error.message, new RegExp(`header ${header.toLowerCase()} may not be set`));
      assert.equal(seen.length, 0);
    });
  }

  test('malformed requests are refused with a message, one by one', async () => {
    const { bridge, seen } = recordingBridge();
    const result = expectOk(
      await run(
        `const attempts = [undefined, 'GET /v1/x', { path: 1 }, { method: 'TRACE', path: '/v1/x' }, { path: '/v1/x', extra: 1 },
           { path: '/v1/x', headers: { 'bad name': 'v' } }, { path: '/v1/x', headers: { 'x-a': 'line\\nbreak' } },
           { path: '/v1/x', query: { q: { nested: 1 } } }, { method: 'GET', path: '/v1/x', body: { a: 1 } },
           { path: '/v1/x', body: 1n }, { path: '/v1/x', body: 'x'.repeat(2 * 1024 * 1024) }];
         const out = [];
         for (const a of attempts) { try { await platform.request(a); out.push('sent') } catch (e) { out.push(e.name) } }
         return out`,
        { bridge, limits: { memoryBytes: 64 * 1024 * 1024 } },
      ),
    );
    assert.deepEqual(result.output, Array(11).fill('TypeError'));
    assert.equal(seen.length, 0);
  });

  test('a failing bridge is an error inside the snippet that says nothing about the host', async () => {
    const { bridge } = recordingBridge(() => {
      throw new Error('connect ECONNREFUSED /var/run/secret.sock');
    });
    const result = expectError(await run('await platform.request({ path: "/v1/x" })', { bridge }), 'SNIPPET_THREW');
    assert.equal(result.error.message, 'platform.request: the platform could not serve the request');
    assert.doesNotMatch(JSON.stringify(result), /ECONNREFUSED|secret\.sock/);
  });

  test('a bridge that never answers: TIMEOUT at the wall limit, the request signal aborted', async () => {
    const { bridge, signals } = recordingBridge(() => new Promise(() => {}));
    const result = expectError(await run('return await platform.request({ path: "/v1/slow" })', { bridge, limits: { wallMs: 300 } }), 'TIMEOUT');
    assert.equal(result.error.details.limit, 'wall');
    assert.equal(signals.length, 1);
    assert.equal(signals[0]!.aborted, true);
    assert.equal(sandbox.stats().replaced, 0, 'the worker answered: no replacement needed');
    await assertHealthy(sandbox, SIZE);
  });
});
