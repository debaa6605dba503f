// JavaScript evaluated inside each fresh QuickJS context before the snippet: it defines the
// snippet's globals (`inputs`, `console`, `platform`), removes what must not exist, and returns
// the helpers the host calls afterwards. It captures the intrinsics it uses before the snippet
// runs, so a snippet that rewrites JSON or Array.prototype changes nothing but its own results.
//
// Security does not rest on this file: the host only ever receives strings from the sandbox
// (checked and bounded there) and gives it only strings and JSON it parsed itself. This file makes
// the sandbox's side convenient and predictable.
//
// Host functions it receives: hostLog(level, message?) -> boolean (false once the log is full; the
// message is then omitted and only counted), hostRequest(json) -> a promise of
// { response } | { error }, or a string: the message of a TypeError to throw.
export const PRELUDE_FILENAME = 'platform.js';

export const PRELUDE = String.raw`(function (hostLog, hostRequest, inputsJson, maxLogChars, maxOutputDepth, testHooks) {
  'use strict';
  const g = globalThis;
  const apply = Reflect.apply;
  const ownKeys = Reflect.ownKeys;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const isFrozen = Object.isFrozen;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const StringOf = String;
  const ErrorOf = Error;
  const TypeErrorOf = TypeError;
  const InternalErrorOf = InternalError;
  const RangeErrorOf = RangeError;
  const MapOf = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const stringSlice = String.prototype.slice;
  const symbolToString = Symbol.prototype.toString;
  const cut = (text, max) => (text.length > max ? apply(stringSlice, text, [0, max]) : text);

  // Not part of the contract: shared memory and its atomics (and WebAssembly, absent anyway).
  // Also gone, to shrink what a snippet can reach of the fixes this QuickJS (2025-09-13) lacks:
  // resizing or transferring an ArrayBuffer under a typed array (the upstream buffer overflows in
  // TypedArray sort/with/constructor) and FinalizationRegistry (a use-after-free), with WeakRef,
  // which is of no use without it. A snippet never needs them.
  for (const name of ['SharedArrayBuffer', 'Atomics', 'WebAssembly', 'FinalizationRegistry', 'WeakRef']) delete g[name];
  for (const name of ['resize', 'transfer', 'transferToFixedLength']) delete ArrayBuffer.prototype[name];

  function deepFreeze(root) {
    const todo = [root];
    while (todo.length > 0) {
      const value = todo.pop();
      if (value === null || typeof value !== 'object' || isFrozen(value)) continue;
      freeze(value);
      const keys = ownKeys(value);
      for (let i = 0; i < keys.length; i++) todo.push(value[keys[i]]);
    }
    return root;
  }

  // Whatever leaves as JSON (the output, logged objects, request bodies) is bounded in depth while
  // it is serialized: the replacer sees each value after toJSON, before JSON.stringify descends
  // into it, and its holder (this) is the container one level up, whose depth it recorded. One map
  // look-up per value; nothing deeper is ever walked (QuickJS's cycle check is quadratic in the
  // depth). The host recognizes the message (run-errors.ts TOO_DEEP).
  const TOO_DEEP = 'the value is nested deeper than ' + maxOutputDepth + ' levels';
  function boundedStringify(value) {
    const depths = new MapOf();
    return stringify(value, function (key, item) {
      if (item !== null && typeof item === 'object') {
        const depth = (apply(mapGet, depths, [this]) ?? 0) + 1;
        if (depth > maxOutputDepth) throw new RangeErrorOf(TOO_DEEP);
        apply(mapSet, depths, [item, depth]);
      }
      return item;
    });
  }

  function formatValue(value) {
    switch (typeof value) {
      case 'string':
        return value;
      case 'undefined':
        return 'undefined';
      case 'bigint':
        return StringOf(value) + 'n';
      case 'symbol':
        return apply(symbolToString, value, []);
      case 'function':
        return '[Function' + (typeof value.name === 'string' && value.name ? ': ' + value.name : ' (anonymous)') + ']';
      case 'object': {
        if (value === null) return 'null';
        if (value instanceof ErrorOf) {
          const head = StringOf(value.name) + ': ' + StringOf(value.message);
          return typeof value.stack === 'string' && value.stack ? head + '\n' + value.stack : head;
        }
        try {
          const json = boundedStringify(value);
          if (typeof json === 'string') return json;
        } catch (e) {
          if (e instanceof InternalErrorOf) throw e;
          // Not String(value): Array.prototype.join recurses as deep as the value does.
          if (e instanceof RangeErrorOf && e.message === TOO_DEEP) return '[' + TOO_DEEP + ']';
        }
        return StringOf(value);
      }
      default:
        return StringOf(value);
    }
  }

  function format(args) {
    let out = '';
    for (let i = 0; i < args.length; i++) {
      let piece;
      try {
        piece = formatValue(args[i]);
      } catch (e) {
        if (e instanceof InternalErrorOf) throw e;
        piece = '[unprintable value]';
      }
      out = i === 0 ? piece : out + ' ' + piece;
      if (out.length > maxLogChars) return cut(out, maxLogChars);
    }
    return out;
  }

  let logAccepting = true;
  const consoleObject = {};
  for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
    defineProperty(consoleObject, level, {
      enumerable: true,
      value: {
        [level](...args) {
          if (logAccepting) logAccepting = hostLog(level, format(args));
          else hostLog(level);
        },
      }[level],
    });
  }

  const platform = {};
  defineProperty(platform, 'request', {
    enumerable: true,
    value: async function request(req) {
      const json = boundedStringify(req === undefined ? null : req);
      if (typeof json !== 'string') {
        throw new TypeErrorOf('platform.request: expects an object { method, path, query?, body?, headers? }');
      }
      const pending = hostRequest(json);
      if (typeof pending === 'string') throw new TypeErrorOf(pending);
      const answer = await pending;
      if (typeof answer.error === 'string') throw new ErrorOf(answer.error);
      return answer.response;
    },
  });

  const define = (name, value) => defineProperty(g, name, { value, writable: false, enumerable: false, configurable: false });
  define('inputs', deepFreeze(parse(inputsJson)));
  define('console', freeze(consoleObject));
  define('platform', freeze(platform));
  if (testHooks) for (const name of ownKeys(testHooks)) define(name, testHooks[name]);

  function describeError(thrown) {
    let name = 'Error';
    let message = '';
    let stack = '';
    try {
      if (thrown !== null && (typeof thrown === 'object' || typeof thrown === 'function')) {
        const n = thrown.name;
        const m = thrown.message;
        const s = thrown.stack;
        if (typeof n === 'string') name = n;
        if (typeof s === 'string') stack = s;
        if (typeof m === 'string') message = m;
        else {
          const json = stringify(thrown);
          message = typeof json === 'string' ? json : StringOf(thrown);
        }
      } else {
        name = typeof thrown;
        message = StringOf(thrown);
      }
    } catch (e) {
      if (e instanceof InternalErrorOf) throw e;
      message = 'the thrown value could not be described';
    }
    return stringify({ name: cut(name, 256), message: cut(message, 4096), stack: cut(stack, 16384) });
  }

  return {
    describeError,
    serializeOutput: (value) => (value === undefined ? 'null' : boundedStringify(value)),
    parseJson: (text) => parse(text),
  };
})`;
