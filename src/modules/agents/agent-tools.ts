// The tools of an agent turn (API.md 8.6, src/drivers/models/tools.ts), run by the turn's worker.
// Code runs in the snippet sandbox exactly as a snippet run does: a credential minted for the run
// alone, acting as the turn's creator with the rights the creator has now (never more; a member's
// tool call gets the member's 403s), the sandbox's limits, and every secret value the run read
// masked in what it leaves behind. `execute` is read-only: a write inside it is answered 403
// TOOL_READ_ONLY without reaching the API. `search` reads this service's own OpenAPI document.
import type { Role } from '../../platform/auth.js';
import type { JsonValue, RunResult, SandboxBridge } from '../../sandbox/index.js';
import { runBridge, type Dispatch, type RunCredentials } from '../snippets/snippet-bridge.js';
import { SecretMask } from '../snippets/snippet-masking.js';
import type { SnippetRunner } from '../snippets/snippet-runner.js';

/** Tool results past this many characters of JSON are cut for the model and the events. */
const MAX_RESULT_CHARS = 16_384;
const MAX_LOG_LINES = 50;

export interface CodeRun {
  /** what the model is told: execute's shape in tools.ts */
  result: Record<string, JsonValue>;
  cpuMs: number;
  requestCount: number;
  /** the code read a secret value (`:access`): its result is shown only to roles that may read secret values */
  secretDerived: boolean;
}

export interface CodeRunRequest {
  workspaceId: string;
  actorId: string;
  role: Role;
  code: string;
  writes: boolean;
  /** for log correlation: the x-request-ids of the run's calls derive from it */
  requestId: string;
  signal: AbortSignal;
}

interface IndexedOperation {
  method: string;
  path: string;
  operation_id: string;
  summary: string;
  words: Set<string>;
}

const wordsOf = (text: string): string[] => text.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 1).map((w) => w.replace(/s$/, ''));

/** A read through POST: the custom method that only reads (an operation's or a turn's :wait). */
const READ_VERBS = /:wait$/;

function readOnly(bridge: SandboxBridge): SandboxBridge {
  return {
    request(request, options) {
      if (request.method === 'GET' || (request.method === 'POST' && READ_VERBS.test(request.path))) {
        return bridge.request(request, options);
      }
      return Promise.resolve({
        status: 403,
        headers: { 'content-type': 'application/json' },
        body: { error: { code: 'PERMISSION_DENIED', reason: 'TOOL_READ_ONLY', message: `execute only reads: ${request.method} ${request.path} is a write; use propose_change` } },
      });
    },
  };
}

/** JSON of a value, cut to the bound with a marker the model can read. */
export function boundedJson(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  return text.length <= MAX_RESULT_CHARS ? text : `${text.slice(0, MAX_RESULT_CHARS)}… [cut: ${text.length} characters in all]`;
}

function toolResult(run: RunResult): Record<string, JsonValue> {
  const logs = run.logs.slice(0, MAX_LOG_LINES).map((l) => `${l.level}: ${l.message}`);
  if (run.ok) return { ok: true, output: run.output, logs };
  return { ok: false, error: { code: run.error.code, message: run.error.message }, logs };
}

export function createAgentTools(deps: { runner: SnippetRunner; credentials: RunCredentials; dispatch: () => Dispatch | null }) {
  let index: IndexedOperation[] | null = null;

  function dispatchOrThrow(): Dispatch {
    const dispatch = deps.dispatch();
    if (!dispatch) throw new Error('the API is not served in this process yet; the turn is retried');
    return dispatch;
  }

  async function operations(): Promise<IndexedOperation[]> {
    if (index) return index;
    const res = await dispatchOrThrow()({ method: 'GET', url: '/v1/openapi.json' });
    const doc = JSON.parse(res.body) as { paths: Record<string, Record<string, { operationId?: string; summary?: string; tags?: string[] }>> };
    const out: IndexedOperation[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (!op?.operationId) continue;
        const words = new Set(wordsOf(`${path} ${op.operationId.replace(/([A-Z])/g, ' $1')} ${op.summary ?? ''} ${(op.tags ?? []).join(' ')}`));
        out.push({ method: method.toUpperCase(), path, operation_id: op.operationId, summary: op.summary ?? '', words });
      }
    }
    index = out;
    return out;
  }

  /** The operations whose path, id, summary and tags share the most words with the query. */
  async function search(query: string): Promise<Record<string, JsonValue>> {
    const wanted = [...new Set(wordsOf(query))];
    const scored = (await operations())
      .map((op) => ({ op, score: wanted.reduce((n, w) => n + (op.words.has(w) ? 1 : 0), 0) }))
      .filter((s) => s.score > 0)
      .sort((a, b) => b.score - a.score || a.op.path.localeCompare(b.op.path))
      .slice(0, 10);
    return { operations: scored.map(({ op }) => ({ method: op.method, path: op.path, operation_id: op.operation_id, summary: op.summary })) };
  }

  /** Runs code in the sandbox as the turn's creator; a refusal of the sandbox (busy, shutting down) is a result the model reads. */
  async function runCode(req: CodeRunRequest): Promise<CodeRun> {
    const credential = deps.credentials.mint({ workspaceId: req.workspaceId, role: req.role, actorId: req.actorId });
    const mask = new SecretMask();
    try {
      const bridge = runBridge(dispatchOrThrow(), credential.token, req.workspaceId, req.requestId, mask);
      const run = mask.result(await deps.runner.run({
        code: req.code, inputs: {}, tenant: req.workspaceId, bridge: req.writes ? bridge : readOnly(bridge), signal: req.signal,
      }));
      return { result: toolResult(run), cpuMs: run.stats.cpu_time_ms, requestCount: run.stats.request_count, secretDerived: mask.read };
    } catch (err) {
      const e = err as { code?: string; message?: string; options?: { reason?: string } };
      if (e.options?.reason) return { result: { ok: false, error: { code: e.options.reason, message: e.message ?? 'the sandbox refused the run' } }, cpuMs: 0, requestCount: 0, secretDerived: false };
      throw err;
    } finally {
      credential.revoke();
    }
  }

  return { search, runCode };
}

export type AgentTools = ReturnType<typeof createAgentTools>;
