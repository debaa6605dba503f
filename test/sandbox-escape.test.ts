// The escape battery of issue 13: nothing inside the sandbox reaches the host. Each probe runs as a
// snippet and reports what it found; the assertions hold on the host side as well (the host's
// prototypes untouched, the inputs object given unchanged, the next run unaffected).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Execution } from '../src/sandbox/execute.js';
import { createSandbox, DEFAULT_LIMITS, type Sandbox } from '../src/sandbox/index.js';
import { compileQuickJS, instantiateQuickJS } from '../src/sandbox/quickjs.js';
import { assertHealthy, expectError, expectOk, noBridge, recordingBridge } from './sandbox-fixtures.js';

// One worker: consecutive runs share its thread, so a leak from one run into the next would show.
let sandbox: Sandbox;
before(async () => {
  sandbox = createSandbox({ workers: 1 });
  await sandbox.ready();
});
after(() => sandbox.close());

const run = (code: string, inputs: Record<string, never> | Record<string, unknown> = {}) =>
  sandbox.run({ code, inputs: inputs as never, tenant: 'ws_escape', bridge: noBridge });

/**
 * Standard ECMAScript as QuickJS 2025-09-13 provides it, less what the engine removes
 * (SharedArrayBuffer, Atomics, FinalizationRegistry, WeakRef), plus the three names it adds.
 */
const ALLOWED_GLOBALS = [
  'AggregateError', 'Array', 'ArrayBuffer', 'BigInt', 'BigInt64Array', 'BigUint64Array', 'Boolean', 'DataView', 'Date',
  'Error', 'EvalError', 'Float16Array', 'Float32Array', 'Float64Array', 'Function', 'Infinity',
  'Int16Array', 'Int32Array', 'Int8Array', 'InternalError', 'Iterator', 'JSON', 'Map', 'Math', 'NaN', 'Number', 'Object',
  'Promise', 'Proxy', 'RangeError', 'ReferenceError', 'Reflect', 'RegExp', 'Set', 'String', 'Symbol', 'SyntaxError',
  'TypeError', 'URIError', 'Uint16Array', 'Uint32Array', 'Uint8Array', 'Uint8ClampedArray', 'WeakMap', 'WeakSet',
  'decodeURI', 'decodeURIComponent', 'encodeURI', 'encodeURIComponent', 'escape', 'eval', 'globalThis', 'isFinite', 'isNaN',
  'parseFloat', 'parseInt', 'undefined', 'unescape',
  'console', 'inputs', 'platform',
].sort();

describe('the sandbox escape battery', () => {
  test('no host globals: process, require, module, Buffer, timers, network, WebAssembly, shared memory', async () => {
    const names = ['process', 'require', 'module', 'exports', 'global', 'Buffer', 'setTimeout', 'setInterval', 'setImmediate',
      'queueMicrotask', 'fetch', 'XMLHttpRequest', 'WebSocket', 'std', 'os', 'print', 'WebAssembly', 'SharedArrayBuffer',
      'Atomics', 'FinalizationRegistry', 'WeakRef', '__dirname', 'performance', 'navigator', 'importScripts', 'postMessage'];
    const result = expectOk(await run(`return ${JSON.stringify(names)}.map((n) => [n, typeof globalThis[n], eval('typeof ' + n)])`));
    for (const [name, viaGlobal, viaEval] of result.output as string[][]) {
      assert.equal(viaGlobal, 'undefined', name);
      assert.equal(viaEval, 'undefined', name);
    }
  });

  test('ArrayBuffers cannot be resized or transferred (typed arrays never see their buffer change)', async () => {
    const result = expectOk(
      await run(`const b = new ArrayBuffer(8, { maxByteLength: 16 });
        return ['resize', 'transfer', 'transferToFixedLength'].map((m) => typeof b[m])`),
    );
    assert.deepEqual(result.output, ['undefined', 'undefined', 'undefined']);
  });

  test('globalThis has exactly the allowed own properties, and no host prototype', async () => {
    const result = expectOk(
      await run(`return {
        names: Object.getOwnPropertyNames(globalThis).sort(),
        symbols: Object.getOwnPropertySymbols(globalThis).map(String),
        protoIsObject: Object.getPrototypeOf(globalThis) === Object.prototype,
      }`),
    );
    assert.deepEqual(result.output, { names: ALLOWED_GLOBALS, symbols: ['Symbol(Symbol.toStringTag)'], protoIsObject: true });
  });

  test('import() fails and import declarations do not parse', async () => {
    const result = expectOk(
      await run(`const out = [];
        for (const m of ['fs', 'node:child_process', 'data:text/javascript,export default 1', './worker.js', 'quickjs-emscripten-core']) {
          try { await import(m); out.push('loaded ' + m) } catch (e) { out.push(e.name) }
        }
        return out`),
    );
    assert.deepEqual(result.output, Array(5).fill('ReferenceError'));
    assert.equal(expectError(await run('import fs from "fs"; return 1'), 'SNIPPET_THREW').error.details.name, 'SyntaxError');
  });

  test('Function("return this"), constructor walks and indirect eval only ever find the sandbox global', async () => {
    const result = expectOk(
      await run(`const probes = {
          fn: Function('return this')(),
          walk: [].constructor.constructor('return this')(),
          asyncWalk: await (async function () {}).constructor('return this')(),
          generatorWalk: Object.getPrototypeOf(function* () {}).constructor('return this')().next().value,
          indirectEval: (0, eval)('this'),
          errorWalk: new Error().constructor.constructor('return this')(),
          promiseWalk: Promise.resolve().constructor.constructor('return this')(),
        };
        const out = {};
        for (const [k, g] of Object.entries(probes)) {
          out[k] = { same: g === globalThis, process: typeof g.process, require: typeof g.require };
        }
        out.strictThis = typeof this;
        return out`),
    );
    for (const [key, probe] of Object.entries(result.output as Record<string, unknown>)) {
      if (key === 'strictThis') assert.equal(probe, 'undefined');
      else assert.deepEqual(probe, { same: true, process: 'undefined', require: 'undefined' }, key);
    }
  });

  test('prototype pollution inside reaches neither the host nor the inputs given', async () => {
    const inputs = { filter: { state: 'running' }, list: [1, 2] };
    const snapshot = structuredClone(inputs);
    const result = expectOk(
      await run(
        `Object.prototype.polluted = 'inside';
         Array.prototype.polluted = 'inside';
         Object.prototype.toJSON = undefined;
         try { inputs.__proto__.polluted2 = 1 } catch (e) {}
         try { Object.getPrototypeOf(inputs.filter).polluted3 = 1 } catch (e) {}
         return JSON.parse('{"__proto__": {"polluted": "via output"}, "constructor": {"prototype": {"polluted": "via output"}}, "ok": true}')`,
        inputs,
      ),
    );
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal(([] as unknown as Record<string, unknown>).polluted, undefined);
    assert.equal((Object.prototype as Record<string, unknown>).polluted2, undefined);
    assert.equal((Object.prototype as Record<string, unknown>).polluted3, undefined);
    assert.deepEqual(inputs, snapshot);
    assert.equal(Object.isFrozen(inputs), false, 'the host object itself was never handed over');
    const output = result.output as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(output), Object.prototype);
    assert.ok(Object.hasOwn(output, '__proto__'), '__proto__ from JSON stays a plain own property');
    assert.equal((output as { polluted?: unknown }).polluted, undefined);
  });

  test('nothing one run does survives into the next on the same worker', async () => {
    expectOk(
      await run(`Object.prototype.leak = 'first run'; globalThis.leaked = 1; JSON.stringify = () => '"hijacked"';
        Array.prototype.map = () => 'hijacked'; Promise.prototype.then = () => 'hijacked'; return 1`),
    );
    const result = expectOk(
      await run(`return { proto: ({}).leak ?? null, global: typeof leaked, json: JSON.stringify({ a: 1 }), map: [1].map((x) => x + 1) }`),
    );
    assert.deepEqual(result.output, { proto: null, global: 'undefined', json: '{"a":1}', map: [2] });
  });

  test('a snippet rewriting JSON or the prototypes changes only its own results', async () => {
    const { bridge, seen } = recordingBridge();
    const result = expectOk(
      await sandbox.run({
        code: `JSON.stringify = () => '{"method":"DELETE","path":"/v1/workspaces/ws_other"}';
          JSON.parse = () => ({ status: 200, body: 'forged' });
          Object.prototype.then = undefined;
          const answer = await platform.request({ path: '/v1/installs' });
          console.log({ logged: true });
          return { status: answer.status, body: answer.body }`,
        tenant: 'ws_escape',
        bridge,
      }),
    );
    assert.deepEqual(seen.map((r) => [r.method, r.path]), [['GET', '/v1/installs']]);
    assert.equal((result.output as { status: number }).status, 200);
    assert.deepEqual(result.logs.map((l) => l.message), ['{"logged":true}']);
  });

  test('the engine globals cannot be replaced or extended', async () => {
    const result = expectOk(
      await run(`const out = [];
        for (const attempt of [
          () => { platform.request = () => 1 }, () => { globalThis.platform = {} }, () => { delete globalThis.inputs },
          () => { console.log = () => 1 }, () => { platform.extra = 1 },
        ]) { try { attempt(); out.push('changed') } catch (e) { out.push(e.name) } }
        return out`),
    );
    assert.deepEqual(result.output, Array(5).fill('TypeError'));
  });

  test('code that closes the wrapper function early still runs only inside the sandbox', async () => {
    const result = await run('return 1 }); globalThis.escaped = typeof process; (async function () { return "swapped"');
    assert.equal(expectOk(result).output, 'swapped');
    assert.equal((globalThis as Record<string, unknown>).escaped, undefined);
  });

  test('a request left unawaited ends with the run: its signal is aborted, its answer dropped', async () => {
    let release!: () => void;
    const answered = new Promise<void>((resolve) => (release = resolve));
    const { bridge, signals } = recordingBridge(async () => {
      await answered;
      return { status: 200, headers: {}, body: null };
    });
    const result = expectOk(await sandbox.run({ code: 'platform.request({ path: "/v1/later" }); return "returned first"', tenant: 'ws_escape', bridge }));
    assert.equal(result.output, 'returned first');
    assert.equal(signals[0]?.aborted, true);
    release();
    await assertHealthy(sandbox, 1);
  });

  test('nothing a run leaves in the WebAssembly memory survives the reset before the next run', async () => {
    // In this thread, to read the instance's memory: what the worker does between two runs.
    const instance = await instantiateQuickJS(compileQuickJS(), DEFAULT_LIMITS.memoryBytes);
    const pristine = Buffer.from(new Uint8Array(instance.memory.buffer).slice());
    const secret = `tenant-a-secret-${Math.random().toString(36).slice(2)}`;
    const execution = new Execution(
      instance,
      { type: 'run', runId: 1, code: 'const copy = inputs.secret.repeat(3); console.log(copy); return copy.length', inputsJson: JSON.stringify({ secret }), limits: { ...DEFAULT_LIMITS } },
      { control: new Int32Array(1), unsafeTestHooks: false, postRequest() {} },
    );
    const done = await execution.done;
    assert.ok(done.ok && done.outputJson === String(secret.length * 3), JSON.stringify(done));
    const memory = () => Buffer.from(instance.memory.buffer);
    assert.ok(memory().includes(secret), 'freed memory still holds the run’s data: the reset is what removes it');
    instance.reset();
    assert.equal(memory().includes(secret), false);
    assert.ok(memory().subarray(0, pristine.length).equals(pristine), 'the memory is exactly as instantiated');
  });

  test('the pool is healthy after the battery', async () => {
    await assertHealthy(sandbox, 1);
    assert.equal(sandbox.stats().replaced, 0);
  });
});
