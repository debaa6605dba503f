// Pieces of the local model's tests: a canned workspace API (records built from the real response
// schemas' examples, served as pages with cursors, filters, 403s for a member's writes) that the
// sandbox's platform.request reaches through a bridge, and drivers that hold a conversation with
// the provider. No database is involved: the bridge stands in for the API the sandbox would call.
import { Agent } from '../src/modules/agents/agents.schemas.js';
import { systemPrompt } from '../src/modules/agents/agent-conversation.js';
import { Cluster } from '../src/modules/clusters/clusters.schemas.js';
import { Install } from '../src/modules/installs/installs.schemas.js';
import { Machine } from '../src/modules/machines/machines.schemas.js';
import { Operation } from '../src/modules/operations/operations.schemas.js';
import { Package } from '../src/modules/packages/packages.schemas.js';
import { Secret } from '../src/modules/secrets/secrets.schemas.js';
import { Snippet } from '../src/modules/snippets/snippets.schemas.js';
import { ApiTokenItem } from '../src/modules/tokens/tokens.schemas.js';
import { Member } from '../src/modules/workspaces/workspaces.schemas.js';
import type { JsonValue, PlatformRequest, PlatformResponse, SandboxBridge } from '../src/sandbox/index.js';
import type { ModelMessage, ModelProvider, ModelUsage, ToolCall } from '../src/drivers/models/driver.js';
import { AGENT_TOOLS } from '../src/drivers/models/tools.js';

export const WS = 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k';
type Rec = { [key: string]: JsonValue };

/** A record of the schema's own example, with these fields changed (and the workspace's id where it has one). */
function example(schema: object, fields: Rec): Rec {
  const base = structuredClone((schema as { examples: Rec[] }).examples[0]!);
  return { ...base, ...('workspace_id' in base ? { workspace_id: WS } : {}), ...fields };
}
const id = (prefix: string, n: number) => `${prefix}_01kaxq3m7y0c9v8t6r5p4n3m${String(n).padStart(3, '0')}`;

export function workspace() {
  const clusters = [
    example(Cluster, { id: id('clu', 1), name: 'dev', state: 'active' }),
    example(Cluster, { id: id('clu', 2), name: 'staging', state: 'active' }),
    example(Cluster, { id: id('clu', 3), name: 'old', state: 'suspended' }),
  ];
  const packages = [
    example(Package, { id: id('pkg', 1), name: 'hello', latest_version: '1.2.0' }),
    example(Package, { id: id('pkg', 2), name: 'shop', latest_version: '2.0.1' }),
    example(Package, { id: id('pkg', 3), name: 'draft', latest_version: null }),
  ];
  const url = (inst: string) => [{ route_key: 'web', hostname: `web--${inst}.preview.example.com`, url: `http://web--${inst}.preview.example.com`, error: '', updated_at: 1767225800, last_observed_at: 1767225800 }];
  const installs = [
    example(Install, { id: id('inst', 3), package_id: id('pkg', 1), cluster_id: id('clu', 2), state: 'failed', current_render_id: null, urls: [] }),
    example(Install, { id: id('inst', 2), package_id: id('pkg', 2), cluster_id: id('clu', 2), semver: '2.0.1', state: 'degraded', urls: url('inst-2') }),
    example(Install, { id: id('inst', 1), package_id: id('pkg', 1), cluster_id: id('clu', 1), state: 'healthy', urls: url('inst-1') }),
  ];
  const step = (name: string, status: string, attempts: number, error?: string) =>
    ({ name, status, attempts, started_at: 1767225601, retryable: true, skippable: false, ...(error ? { error_message: error } : {}) });
  const operations = [
    example(Operation, {
      id: id('op', 3), owner_type: 'install', owner_id: id('inst', 3), state: 'FAILED', done: true, completed_at: 1767225900,
      metadata: { type: 'install.create', cluster_id: id('clu', 2), install_id: id('inst', 3), package_id: id('pkg', 1), package_version_id: 'pkv_1', semver: '1.2.0' },
      error: { message: 'wait_healthy: the deployment hello did not become ready in 120 s' },
      last_error: { message: 'pod hello-7d9f crashed: exit code 1 (CrashLoopBackOff)', step_name: 'wait_healthy' },
      steps: [step('render', 'completed', 1), step('apply', 'completed', 1), step('wait_healthy', 'failed', 3, 'pod hello-7d9f crashed: exit code 1 (CrashLoopBackOff)')],
    }),
    example(Operation, {
      id: id('op', 2), owner_type: 'cluster', owner_id: id('clu', 3), state: 'FAILED', done: true, completed_at: 1767225800,
      metadata: { type: 'cluster.capabilities.refresh', cluster_id: id('clu', 3) }, error: { message: 'the cluster did not answer' }, last_error: null,
      steps: [step('probe', 'failed', 5, 'connect ECONNREFUSED 10.0.0.4:6443')],
    }),
    example(Operation, {
      id: id('op', 1), owner_type: 'install', owner_id: id('inst', 2), state: 'RUNNING', done: false,
      metadata: { type: 'install.update', cluster_id: id('clu', 2), install_id: id('inst', 2), package_id: id('pkg', 2), package_version_id: 'pkv_2', semver: '2.0.1' },
      last_error: { message: 'apply: the API server timed out', step_name: 'apply' }, steps: [step('apply', 'failed', 1, 'apply: the API server timed out')],
    }),
  ];
  return {
    clusters, packages, installs, operations,
    secrets: [example(Secret, { id: id('sec', 2), name: 'registry-password' }), example(Secret, { id: id('sec', 1), name: 'db-url', kind: 'generic' })],
    snippets: [example(Snippet, { id: id('snp', 1), name: 'Installs and their URLs' })],
    machines: [example(Machine, { id: id('mch', 1), cluster_id: id('clu', 1), name: 'build-01' })],
    agents: [example(Agent, { id: id('agt', 1), name: 'ops' })],
    members: [example(Member, { email: 'ada@example.com', role: 'owner' }), example(Member, { id: id('wsm', 2), email: 'bob@example.com', role: 'member' })],
    api_tokens: [example(ApiTokenItem, { name: 'ci', role: 'member', expires_at: 1798761600 })],
  };
}
export type Workspace = ReturnType<typeof workspace>;

/** Installs past ten pages of a hundred, to see the read stop at its cap. */
export function manyInstalls(n: number): Rec[] {
  const base = workspace().installs[2]!;
  return Array.from({ length: n }, (_, i) => ({ ...base, id: id('inst', 100 + i) }));
}

const SERVER_STATE_FILTER = new Set(['installs', 'operations', 'machines', 'secrets', 'agents']);
const json = (status: number, body: JsonValue): PlatformResponse => ({ status, headers: { 'content-type': 'application/json' }, body });
const error = (status: number, code: string, message: string) => json(status, { error: { code, message } });

/** The API the sandbox reaches: lists with `limit`/`cursor` (the cursor is an offset here), gets and the three creates. */
export function cannedApi(ws: Workspace, options: { role?: 'admin' | 'member' } = {}) {
  const seen: PlatformRequest[] = [];
  const collections: Record<string, Rec[]> = {
    '/v1/installs': ws.installs, '/v1/clusters': ws.clusters, '/v1/machines': ws.machines, '/v1/secrets': ws.secrets,
    '/v1/snippets': ws.snippets, '/v1/operations': ws.operations, '/v1/packages': ws.packages, '/v1/agents': ws.agents,
    [`/v1/workspaces/${WS}/members`]: ws.members, '/v1/api_tokens': ws.api_tokens,
  };
  const q = (r: PlatformRequest, key: string) => (typeof r.query[key] === 'string' ? (r.query[key] as string) : undefined);
  function list(r: PlatformRequest, items: Rec[]): PlatformResponse {
    const name = r.path.split('/').pop()!;
    let rows = items;
    for (const key of ['state', 'owner_type', 'owner_id']) {
      const want = q(r, key);
      if (want === undefined) continue;
      if (key === 'state' && !SERVER_STATE_FILTER.has(name)) return error(400, 'INVALID_ARGUMENT', `unknown query parameter state on ${r.path}`);
      rows = rows.filter((x) => x[key] === want);
    }
    const limit = Number(q(r, 'limit') ?? 50);
    if (!(limit >= 1 && limit <= 100)) return error(400, 'INVALID_ARGUMENT', 'limit must be 1-100');
    const from = Number(q(r, 'cursor') ?? 0);
    const page = rows.slice(from, from + limit).map((x) => (name === 'operations' ? { ...x, steps: undefined } : x)) as Rec[];
    const next = from + limit < rows.length ? String(from + limit) : null;
    return json(200, { data: JSON.parse(JSON.stringify(page)) as JsonValue, has_more: next !== null, next_cursor: next });
  }
  function serve(r: PlatformRequest): PlatformResponse {
    if (r.method === 'GET' && collections[r.path]) return list(r, collections[r.path]!);
    const one = /^\/v1\/(installs|clusters|packages|operations)\/([a-z]+_[0-9a-z]+)$/.exec(r.path);
    if (r.method === 'GET' && one) {
      const found = collections[`/v1/${one[1]!}`]!.find((x) => x.id === one[2]);
      return found ? json(200, found) : error(404, 'NOT_FOUND', `${one[1]!.replace(/s$/, '')} ${one[2]!} not found`);
    }
    if (r.method !== 'POST') return error(404, 'NOT_FOUND', `no route ${r.method} ${r.path}`);
    if (options.role === 'member' && r.path !== '/v1/installs') return error(403, 'PERMISSION_DENIED', 'this needs the admin or owner role');
    const body = (r.body ?? {}) as Rec;
    if (r.path === '/v1/secrets') {
      if (ws.secrets.some((s) => s.name === body.name)) return error(409, 'ALREADY_EXISTS', `a secret named ${String(body.name)} already exists`);
      const created = example(Secret, { id: id('sec', 9), name: body.name!, kind: 'generic', version_count: 1, enabled_version_count: 1 });
      ws.secrets.unshift(created);
      return json(201, created);
    }
    if (r.path === '/v1/snippets') return json(201, example(Snippet, { id: id('snp', 9), snippet_id: id('snp', 9), name: body.name!, code: body.code!, display_type: body.display_type! }));
    if (r.path === '/v1/installs') {
      const cluster = ws.clusters.find((c) => c.id === body.cluster_id);
      if (!cluster) return error(400, 'INVALID_ARGUMENT', 'cluster not found');
      if (cluster.state !== 'active') return error(422, 'FAILED_PRECONDITION', `cluster ${String(cluster.name)} is not active`);
      return json(202, example(Operation, {
        id: id('op', 9), owner_type: 'install', owner_id: id('inst', 9), state: 'RUNNING', done: false,
        metadata: { type: 'install.create', cluster_id: body.cluster_id!, install_id: id('inst', 9), package_id: body.package_id!, package_version_id: 'pkv_9', semver: '1.2.0' },
      }));
    }
    return error(404, 'NOT_FOUND', `no route ${r.method} ${r.path}`);
  }
  const bridge: SandboxBridge = {
    request(request) {
      seen.push(request);
      return Promise.resolve(serve(request));
    },
  };
  return { bridge, seen };
}

export interface CallOutcome {
  text: string;
  pieces: string[];
  calls: ToolCall[];
  usage: ModelUsage;
  stopReason: string;
}

/** One model call, collected. */
export async function callModel(provider: ModelProvider, messages: ModelMessage[], signal = new AbortController().signal): Promise<CallOutcome> {
  const pieces: string[] = [];
  const calls: ToolCall[] = [];
  for await (const event of provider.stream({ model: 'local-1', workspaceId: WS, messages, tools: AGENT_TOOLS, maxOutputTokens: 4096, apiKey: null, signal })) {
    if (event.type === 'text') pieces.push(event.text);
    else if (event.type === 'tool_call') calls.push(event.call);
    else return { text: pieces.join(''), pieces, calls, usage: event.usage, stopReason: event.stop_reason };
  }
  throw new Error('the stream ended without done');
}

export const system = (): ModelMessage => ({ role: 'system', content: systemPrompt({ instructions: 'You help the team run their workspace.', workspace_id: WS }) });

export interface Conversation {
  answer: string;
  /** every call the model made, in order, with the result it was given */
  calls: { call: ToolCall; result: Record<string, unknown> }[];
  messages: ModelMessage[];
}

/**
 * A whole turn: the model is called until it answers without tools, each tool call answered by
 * `tool` (the result object, given back as its JSON text as the turn runner does).
 */
export async function converse(
  provider: ModelProvider, message: string,
  tool: (call: ToolCall) => Promise<Record<string, unknown>> | Record<string, unknown>,
  earlier: ModelMessage[] = [],
): Promise<Conversation> {
  const messages: ModelMessage[] = [system(), ...earlier, { role: 'user', content: message }];
  const calls: Conversation['calls'] = [];
  for (let round = 0; round < 10; round++) {
    const out = await callModel(provider, messages);
    messages.push({ role: 'assistant', content: out.text, ...(out.calls.length ? { tool_calls: out.calls } : {}) });
    if (out.calls.length === 0) return { answer: out.text, calls, messages };
    for (const call of out.calls) {
      const result = await tool(call);
      calls.push({ call, result });
      messages.push({ role: 'tool', tool_call_id: call.id, name: call.name, content: JSON.stringify(result) });
    }
  }
  throw new Error(`no answer after 10 rounds to ${JSON.stringify(message)}`);
}
