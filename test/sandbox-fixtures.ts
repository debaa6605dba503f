// Shared pieces of the sandbox engine tests: a bridge that records what reaches it, and the check
// that a pool is back at full size and still runs code after whatever a test did to it.
import assert from 'node:assert/strict';
import type { PlatformRequest, PlatformResponse, RunResult, Sandbox, SandboxBridge } from '../src/sandbox/index.js';

export interface RecordingBridge {
  bridge: SandboxBridge;
  /** every request the bridge was asked to serve, in order */
  seen: PlatformRequest[];
  /** the abort signal of each request, in order */
  signals: AbortSignal[];
}

/** A bridge that answers every request with `answer` (default: 200 echoing the request). */
export function recordingBridge(answer?: (request: PlatformRequest) => Promise<PlatformResponse> | PlatformResponse): RecordingBridge {
  const seen: PlatformRequest[] = [];
  const signals: AbortSignal[] = [];
  return {
    seen,
    signals,
    bridge: {
      async request(request, { signal }) {
        seen.push(request);
        signals.push(signal);
        if (answer) return answer(request);
        return { status: 200, headers: { 'content-type': 'application/json' }, body: { echo: request as unknown as PlatformResponse['body'] } };
      },
    },
  };
}

export const noBridge: SandboxBridge = {
  request() {
    throw new Error('this test expects no platform.request to reach the bridge');
  },
};

export function expectOk(result: RunResult): Extract<RunResult, { ok: true }> {
  if (!result.ok) assert.fail(`expected the run to succeed, got ${JSON.stringify(result.error)}`);
  return result;
}

export function expectError(result: RunResult, code: string): Extract<RunResult, { ok: false }> {
  if (result.ok) assert.fail(`expected ${code}, the run succeeded with ${JSON.stringify(result.output)}`);
  assert.equal(result.error.code, code, `expected ${code}, got ${JSON.stringify(result.error)}`);
  return result;
}

/** The pool is at its full size, every worker ready, and a trivial run succeeds on it. */
export async function assertHealthy(sandbox: Sandbox, size: number): Promise<void> {
  await sandbox.ready();
  const stats = sandbox.stats();
  assert.equal(stats.workers, size, `pool size ${JSON.stringify(stats)}`);
  assert.equal(stats.busy, 0, `busy workers ${JSON.stringify(stats)}`);
  const results = await Promise.all(
    Array.from({ length: size }, () => sandbox.run({ code: 'return inputs.n + 1', inputs: { n: 41 }, tenant: `health-${Math.random()}`, bridge: noBridge })),
  );
  for (const result of results) assert.equal(expectOk(result).output, 42);
  assert.equal(sandbox.stats().workers, size);
}
