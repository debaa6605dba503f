// Agents, sessions, turns, approval requests and events (spec 2.4 and endpoint 3, API.md 8.6):
// the records and the bodies of their routes.
import { Type, type Static } from 'typebox';
import { refTo, StringEnum } from '../../platform/http.js';
import { MODEL_PROVIDERS } from '../../drivers/models/driver.js';

export const AGENT_CAPABILITIES = ['CHAT', 'CODING', 'AMBIENT'] as const;
export const AGENT_STATES = ['ENABLED', 'ARCHIVED'] as const;
export const WRITE_POLICIES = ['APPROVAL_REQUIRED', 'ALLOWED', 'DENIED'] as const;
export type WritePolicy = (typeof WRITE_POLICIES)[number];
export const BUDGET_PERIODS = ['DAY', 'WEEK', 'MONTH'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];
export const SESSION_STATES = ['ACTIVE', 'WAITING_FOR_INPUT', 'WAITING_FOR_PERMISSION', 'COMPLETED', 'FAILED', 'CANCELLED', 'ARCHIVED'] as const;
export type SessionState = (typeof SESSION_STATES)[number];
export const TURN_STATES = ['QUEUED', 'RUNNING', 'WAITING_FOR_INPUT', 'WAITING_FOR_PERMISSION', 'COMPLETED', 'FAILED', 'CANCELLED'] as const;
export type TurnState = (typeof TURN_STATES)[number];
export const TERMINAL_TURN_STATES: readonly TurnState[] = ['COMPLETED', 'FAILED', 'CANCELLED'];
export const isTerminalTurn = (state: string): boolean => (TERMINAL_TURN_STATES as readonly string[]).includes(state);
/** a person's move is awaited: `:wait` returns, notifications go out */
export const isWaitingTurn = (state: string): boolean => state === 'WAITING_FOR_INPUT' || state === 'WAITING_FOR_PERMISSION';
export const TURN_ORIGINS = ['DASHBOARD', 'API', 'MCP', 'ACP', 'AMBIENT', 'SYSTEM'] as const;
export const RUNTIME_HINTS = ['AUTO', 'CODE_MODE', 'RETAINED_RUNTIME'] as const;
export const RUNTIME_DECISIONS = ['ALLOWED', 'DENIED', 'APPROVAL_REQUIRED'] as const;
export const EXECUTION_MODES = ['CODE_MODE', 'RETAINED_RUNTIME'] as const;
export const ADMISSION_ERROR_CODES = [
  'AGENT_ARCHIVED', 'SESSION_ARCHIVED', 'QUOTA_EXCEEDED', 'BUDGET_EXHAUSTED', 'MODEL_NOT_ALLOWED', 'RUNTIME_UNAVAILABLE', 'CREDENTIAL_UNAVAILABLE',
] as const;
export type AdmissionErrorCode = (typeof ADMISSION_ERROR_CODES)[number];
export const FAILURE_CODES = [
  'BUDGET_EXHAUSTED', 'MODEL_ERROR', 'MODEL_UNAVAILABLE', 'STEP_LIMIT', 'TIMEOUT', 'CONTEXT_TOO_LONG', 'INTERNAL',
] as const;
export type FailureCode = (typeof FAILURE_CODES)[number];
export const APPROVAL_KINDS = ['CHANGE', 'TURN'] as const;
export const APPROVAL_STATES = ['PENDING', 'APPROVED', 'REJECTED', 'CANCELLED'] as const;
export type ApprovalState = (typeof APPROVAL_STATES)[number];
export const APPROVAL_DECISIONS = ['APPROVE', 'REJECT'] as const;
export const AGENT_EVENT_TYPES = [
  'turn.queued', 'turn.started', 'message.delta', 'message.created', 'tool.started', 'tool.completed', 'approval.requested',
  'approval.resolved', 'input.requested', 'input.received', 'usage.updated', 'turn.completed', 'turn.failed', 'turn.cancelled',
] as const;
export type AgentEventType = (typeof AGENT_EVENT_TYPES)[number];
export const TERMINAL_EVENT_TYPES: readonly AgentEventType[] = ['turn.completed', 'turn.failed', 'turn.cancelled'];

export const AgentId = Type.String({ minLength: 1, maxLength: 54, description: 'agent id (agt_...)' });
export const SessionId = Type.String({ minLength: 1, maxLength: 54, description: 'agent session id (ags_...)' });
export const TurnId = Type.String({ minLength: 1, maxLength: 54, description: 'agent turn id (agtt_...)' });
export const ApprovalRequestId = Type.String({ minLength: 1, maxLength: 54, description: 'approval request id (apr_...)' });

const unix = (description: string) => Type.Integer({ minimum: 0, description: `${description} (Unix seconds)` });
const unixOrNull = (description: string) => Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: `${description} (Unix seconds), or null` });
const stringOrNull = (description: string) => Type.Union([Type.String(), Type.Null()], { description });
const count = (description: string) => Type.Integer({ minimum: 0, description });

export const UsageSummary = Type.Object(
  {
    provider_cost_cents: count('what the model calls cost, in cents: the provider\'s reported tokens times the operator\'s price table, rounded up; always 0 for the local provider, which is free'),
    provider_token_count: count('input and output tokens the provider reported'),
    runtime_compute_seconds: count('CPU seconds of the sandbox runs of tool calls, rounded up'),
    runtime_storage_gb_hours: count('always 0: code mode keeps no storage between tool calls'),
    mcp_call_count: count('always 0: agents act through the sandbox, not MCP'),
    api_call_count: count('platform.request calls made by tool calls'),
    ambient_trigger_count: count('always 0: no ambient triggers yet'),
  },
  {
    $id: 'UsageSummary',
    description: 'What a turn, a session (its turns) or an agent (its turns) used, in seven integer members.',
    examples: [{
      provider_cost_cents: 2, provider_token_count: 1840, runtime_compute_seconds: 1, runtime_storage_gb_hours: 0, mcp_call_count: 0,
      api_call_count: 3, ambient_trigger_count: 0,
    }],
  },
);
export type UsageSummaryT = Static<typeof UsageSummary>;

const Cents = Type.Integer({ minimum: 0, maximum: 100_000_000, description: 'cents' });

export const ModelPolicy = Type.Object(
  {
    provider: Type.Optional(StringEnum(MODEL_PROVIDERS, { description: 'local (built in: a rule-based offline planner, not a language model; it understands a fixed set of requests about the workspace and costs nothing), openai (OpenAI-compatible: OpenAI, Ollama, vLLM, llama.cpp, OpenRouter) or anthropic; default the operator\'s SVC_AGENT_PROVIDER' })),
    default_model: Type.String({ minLength: 1, maxLength: 120, description: 'the model turns use, e.g. local-1 (the local provider\'s rule-based planner), gpt-4o-mini, llama3.1, claude-sonnet-4-6' }),
    allowed_models: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 120 }), {
      maxItems: 50, uniqueItems: true, description: 'models the agent may use; default_model must be one of them when given (else MODEL_NOT_ALLOWED at admission)',
    })),
    credential_secret_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 54 }), Type.Null()], {
      description: 'a workspace secret (sec_) whose enabled latest version holds the provider API key (bring your own key); read when each model call is made, never shown',
    })),
    max_turn_budget_cents: Type.Optional(Type.Union([Cents, Type.Null()], { description: 'the most one turn may cost; checked before every model call' })),
    max_budget_cents: Type.Optional(Type.Union([Cents, Type.Null()], { description: 'the most the agent\'s turns may cost per budget_period; checked before every model call' })),
    budget_period: Type.Optional(StringEnum(BUDGET_PERIODS, { description: 'the period of max_budget_cents (calendar day, ISO week, month; UTC); default MONTH' })),
  },
  {
    $id: 'ModelPolicy', additionalProperties: false, description: 'Which model provider and model an agent\'s turns use, whose key, and what they may cost.',
    examples: [{ provider: 'openai', default_model: 'gpt-4o-mini', credential_secret_id: 'sec_01kaxq3m7y0c9v8t6r5p4n3m2k', max_turn_budget_cents: 25, max_budget_cents: 2000, budget_period: 'MONTH' }],
  },
);
export type ModelPolicyT = Static<typeof ModelPolicy>;

export const ToolPolicy = Type.Object(
  {
    writes: Type.Optional(StringEnum(WRITE_POLICIES, {
      description: 'propose_change (code that writes): APPROVAL_REQUIRED (default: runs only after a person approves the exact code), ALLOWED (runs at once), DENIED (refused; the model is told)',
      default: 'APPROVAL_REQUIRED',
    })),
  },
  { $id: 'ToolPolicy', additionalProperties: false, description: 'What the agent\'s tool calls may do. They never do more than the turn\'s creator may.', examples: [{ writes: 'APPROVAL_REQUIRED' }] },
);

const AgentName = Type.String({ minLength: 1, maxLength: 120, description: 'a name, 1-120 characters' });
const Description = Type.String({ maxLength: 500, description: 'up to 500 characters' });
const Instructions = Type.String({ minLength: 1, maxLength: 20_000, description: 'the system instructions of every turn, 1-20,000 characters' });
const Capabilities = Type.Array(StringEnum(AGENT_CAPABILITIES), { minItems: 1, maxItems: 10, uniqueItems: true, description: 'CHAT, CODING, AMBIENT (1-10, unique)' });

export const Agent = Type.Object(
  {
    id: Type.String({ description: 'agt_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    organization_id: Type.Union([Type.String(), Type.Null()], { description: 'always null: no organizations yet' }),
    name: Type.String({ description: 'its name' }),
    description: stringOrNull('what it is for, or null'),
    instructions: Type.String({ description: 'the system instructions of its turns' }),
    capabilities: Type.Array(StringEnum(AGENT_CAPABILITIES), { description: 'CHAT, CODING, AMBIENT' }),
    model_policy: Type.Object(
      {
        provider: StringEnum(MODEL_PROVIDERS, { description: 'the provider its turns call: local is the built-in rule-based offline planner (not a language model, free)' }),
        default_model: Type.String({ description: 'the model its turns use' }),
        allowed_models: Type.Array(Type.String(), { description: 'models it may use (empty: only default_model)' }),
        credential_secret_id: stringOrNull('the secret holding its provider API key, or null for the operator\'s'),
        max_turn_budget_cents: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'the most one turn may cost, or null' }),
        max_budget_cents: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'the most its turns may cost per budget_period, or null' }),
        budget_period: StringEnum(BUDGET_PERIODS, { description: 'the period of max_budget_cents' }),
      },
      { description: 'the model policy with its defaults filled in' },
    ),
    tool_policy: Type.Object({ writes: StringEnum(WRITE_POLICIES, { description: 'what propose_change does' }) }, { description: 'the tool policy with its defaults filled in' }),
    state: StringEnum(AGENT_STATES, { description: 'ENABLED, or ARCHIVED (DELETE; takes no new turns; :undelete restores it)' }),
    origin: StringEnum(['USER'] as const, { description: 'who made it: USER' }),
    created_by: Type.String({ description: 'usr_, tok_ or oac_ id' }),
    usage_summary: refTo(UsageSummary),
    html_url: Type.String({ format: 'uri', description: 'the dashboard view of the agent' }),
    created_at: unix('created'),
    updated_at: unix('last changed'),
    archived_at: unixOrNull('archived'),
    etag: Type.String({ description: 'changes on every write; send it in if-match' }),
  },
  {
    $id: 'Agent',
    description: 'An assistant of the workspace: instructions, a model and what its tool calls may do. Members talk to it in sessions; admins manage it.',
    examples: [{
      id: 'agt_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', organization_id: null, name: 'ops',
      description: 'Answers questions about the workspace', instructions: 'You help the team run their workspace.', capabilities: ['CHAT'],
      model_policy: {
        provider: 'local', default_model: 'local-1', allowed_models: [], credential_secret_id: null, max_turn_budget_cents: null,
        max_budget_cents: 500, budget_period: 'MONTH',
      },
      tool_policy: { writes: 'APPROVAL_REQUIRED' }, state: 'ENABLED', origin: 'USER', created_by: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k',
      usage_summary: { provider_cost_cents: 0, provider_token_count: 0, runtime_compute_seconds: 0, runtime_storage_gb_hours: 0, mcp_call_count: 0, api_call_count: 0, ambient_trigger_count: 0 },
      html_url: 'https://svc.example.com/agents/agt_01kaxq3m7y0c9v8t6r5p4n3m2k', created_at: 1767225600, updated_at: 1767225600, archived_at: null, etag: '1',
    }],
  },
);
export type AgentT = Static<typeof Agent>;

export const CreateAgentBody = Type.Object(
  {
    name: AgentName,
    description: Type.Optional(Description),
    instructions: Instructions,
    capabilities: Capabilities,
    model_policy: Type.Optional(refTo(ModelPolicy)),
    tool_policy: Type.Optional(refTo(ToolPolicy)),
  },
  { additionalProperties: false, examples: [{ name: 'ops', instructions: 'You help the team run their workspace.', capabilities: ['CHAT'] }] },
);
export type CreateAgentBodyT = Static<typeof CreateAgentBody>;

export const PatchAgentBody = Type.Object(
  {
    name: Type.Optional(AgentName),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
    instructions: Type.Optional(Instructions),
    capabilities: Type.Optional(Capabilities),
    model_policy: Type.Optional(refTo(ModelPolicy)),
    tool_policy: Type.Optional(refTo(ToolPolicy)),
  },
  { additionalProperties: false, examples: [{ tool_policy: { writes: 'DENIED' } }] },
);
export type PatchAgentBodyT = Static<typeof PatchAgentBody>;

export const Session = Type.Object(
  {
    id: Type.String({ description: 'ags_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    organization_id: Type.Union([Type.String(), Type.Null()], { description: 'always null' }),
    agent_id: Type.String({ description: 'agt_ id' }),
    state: StringEnum(SESSION_STATES, { description: 'its latest turn\'s state (ACTIVE while one is queued or running; ACTIVE when it has none yet), or ARCHIVED' }),
    origin: StringEnum(TURN_ORIGINS, { description: 'where it was started: API, DASHBOARD (the web app), ...' }),
    title: stringOrNull('a title, or null'),
    created_by: Type.String({ description: 'its owner: usr_, tok_ or oac_ id; only they post to it' }),
    usage_summary: refTo(UsageSummary),
    html_url: Type.String({ format: 'uri', description: 'the dashboard chat of the session' }),
    created_at: unix('created'),
    updated_at: unix('last changed'),
    etag: Type.String({ description: 'changes on every write' }),
  },
  {
    $id: 'AgentSession',
    description: 'A conversation of one person with an agent: its turns run one at a time, in order. Another member gets 404; admins and owners may read it.',
    examples: [{
      id: 'ags_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', organization_id: null, agent_id: 'agt_01kaxq3m7y0c9v8t6r5p4n3m2k',
      state: 'COMPLETED', origin: 'API', title: 'What runs where', created_by: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k',
      usage_summary: { provider_cost_cents: 0, provider_token_count: 412, runtime_compute_seconds: 1, runtime_storage_gb_hours: 0, mcp_call_count: 0, api_call_count: 1, ambient_trigger_count: 0 },
      html_url: 'https://svc.example.com/agent_sessions/ags_01kaxq3m7y0c9v8t6r5p4n3m2k', created_at: 1767225600, updated_at: 1767225603, etag: '3',
    }],
  },
);
export type SessionT = Static<typeof Session>;

export const CreateSessionBody = Type.Object(
  {
    agent_id: AgentId,
    title: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'a title, 1-200 characters' })),
  },
  { additionalProperties: false, examples: [{ agent_id: 'agt_01kaxq3m7y0c9v8t6r5p4n3m2k', title: 'What runs where' }] },
);

const CodeMessage = (what: string) =>
  Type.Object(
    { code: Type.String({ description: 'an UPPER_SNAKE code, or "" when there is none' }), message: Type.String({ description: 'what happened, or "" when there is none' }) },
    { description: `${what}; both members are empty strings when there is none` },
  );

export const Turn = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 54, description: 'agtt_ id' }),
    workspace_id: Type.String({ minLength: 1, maxLength: 53, description: 'ws_ id' }),
    organization_id: Type.Union([Type.String({ minLength: 1, maxLength: 54 }), Type.Null()], { description: 'always null: no organizations yet' }),
    agent_id: Type.String({ minLength: 1, maxLength: 54, description: 'agt_ id' }),
    session_id: Type.String({ minLength: 1, maxLength: 54, description: 'ags_ id' }),
    state: StringEnum(TURN_STATES, {
      description:
        'QUEUED (admitted; waits for the session\'s earlier turns), RUNNING, WAITING_FOR_INPUT (the model asked a question: :respond), ' +
        'WAITING_FOR_PERMISSION (an approval request waits: resolve it), then one of COMPLETED, FAILED (see failure or admission_error), CANCELLED',
    }),
    origin: StringEnum(TURN_ORIGINS, { description: 'DASHBOARD (the web app), API, MCP, ACP, AMBIENT, SYSTEM' }),
    input: Type.Object({ content: Type.String({ description: 'the message, 1-50,000 characters' }) }, { description: 'what the person said' }),
    runtime_hint: StringEnum(RUNTIME_HINTS, { description: 'as submitted' }),
    model: stringOrNull('the model the turn uses, once admitted'),
    created_by: Type.String({ description: 'who submitted it (usr_, tok_ or oac_ id); its tool calls act as them, with their rights at each call' }),
    started_at: unixOrNull('when a worker first started it'),
    completed_at: unixOrNull('when it ended'),
    runtime_decision: Type.Union([StringEnum(RUNTIME_DECISIONS), Type.Null()], {
      description: 'the admission at submit: ALLOWED, DENIED (the turn ended FAILED with admission_error) or APPROVAL_REQUIRED (an admin must approve the turn first)',
    }),
    decision_reason: stringOrNull('why, in words'),
    resolved_execution_mode: Type.Union([StringEnum(EXECUTION_MODES), Type.Null()], { description: 'CODE_MODE (AUTO resolves to it), or null when DENIED' }),
    admission_error: CodeMessage(`why admission refused the turn: ${ADMISSION_ERROR_CODES.join(', ')}`),
    usage_summary: refTo(UsageSummary),
    failure: CodeMessage(`why the turn failed: ${FAILURE_CODES.join(', ')} (and the admission_error code when DENIED)`),
    created_at: unix('submitted'),
    updated_at: unix('last changed'),
    etag: Type.String({ minLength: 1, description: 'changes on every state change; send it in if-match to :respond' }),
  },
  {
    $id: 'AgentTurn',
    description: 'One message to an agent and the work it does to answer. Processed asynchronously: follow it with :wait or the event stream.',
    examples: [{
      id: 'agtt_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', organization_id: null,
      agent_id: 'agt_01kaxq3m7y0c9v8t6r5p4n3m2k', session_id: 'ags_01kaxq3m7y0c9v8t6r5p4n3m2k', state: 'QUEUED', origin: 'API',
      input: { content: 'How many installs are there?' }, runtime_hint: 'AUTO', model: 'local-1', created_by: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k',
      started_at: null, completed_at: null, runtime_decision: 'ALLOWED', decision_reason: 'code mode: the agent acts through the sandbox',
      resolved_execution_mode: 'CODE_MODE', admission_error: { code: '', message: '' },
      usage_summary: { provider_cost_cents: 0, provider_token_count: 0, runtime_compute_seconds: 0, runtime_storage_gb_hours: 0, mcp_call_count: 0, api_call_count: 0, ambient_trigger_count: 0 },
      failure: { code: '', message: '' }, created_at: 1767225600, updated_at: 1767225600, etag: '1',
    }],
  },
);
export type TurnT = Static<typeof Turn>;

export const CreateTurnBody = Type.Object(
  {
    session_id: Type.String({ minLength: 1, maxLength: 54, description: 'the session (ags_ id); it must be yours' }),
    message: Type.String({ minLength: 1, maxLength: 50_000, description: 'what you say to the agent, 1-50,000 characters' }),
    runtime_hint: Type.Optional(StringEnum(RUNTIME_HINTS, { description: 'AUTO (default; resolves to CODE_MODE), CODE_MODE, RETAINED_RUNTIME', default: 'AUTO' })),
  },
  { additionalProperties: false, examples: [{ session_id: 'ags_01kaxq3m7y0c9v8t6r5p4n3m2k', message: 'How many installs are there?' }] },
);
export type CreateTurnBodyT = Static<typeof CreateTurnBody>;

export const RespondBody = Type.Object(
  { content: Type.String({ minLength: 1, maxLength: 50_000, description: 'your answer to the question, 1-50,000 characters' }) },
  { additionalProperties: false, examples: [{ content: 'the staging cluster' }] },
);

export const ApprovalRequest = Type.Object(
  {
    id: Type.String({ description: 'apr_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    agent_id: Type.String({ description: 'agt_ id' }),
    session_id: Type.String({ description: 'ags_ id' }),
    turn_id: Type.String({ description: 'agtt_ id' }),
    kind: StringEnum(APPROVAL_KINDS, { description: 'CHANGE (code that writes, proposed by the model: the session\'s owner approves) or TURN (a member\'s turn on an agent that writes without approval: an admin approves)' }),
    code: stringOrNull('CHANGE: the exact code that runs if approved, as the model wrote it (a value you typed in your message, such as a new secret\'s, appears in it)'),
    summary: Type.String({ description: 'what the model says the code does, or the turn\'s message' }),
    state: StringEnum(APPROVAL_STATES, { description: 'PENDING, APPROVED, REJECTED, or CANCELLED (its turn ended first)' }),
    reason: stringOrNull('the reason given with the decision'),
    resolved_by: stringOrNull('who decided'),
    resolved_at: unixOrNull('decided'),
    created_at: unix('requested'),
    updated_at: unix('last changed'),
    etag: Type.String({ description: 'send it in if-match to resolve' }),
  },
  {
    $id: 'ApprovalRequest',
    description: 'A pause of an agent turn until a person approves or rejects what it would do.',
    examples: [{
      id: 'apr_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', agent_id: 'agt_01kaxq3m7y0c9v8t6r5p4n3m2k',
      session_id: 'ags_01kaxq3m7y0c9v8t6r5p4n3m2k', turn_id: 'agtt_01kaxq3m7y0c9v8t6r5p4n3m2k', kind: 'CHANGE',
      code: "return (await platform.request({ method: 'POST', path: '/v1/secrets', body: { name: 'db-password', value: inputs.value } })).body;",
      summary: 'Create the secret db-password', state: 'PENDING', reason: null, resolved_by: null, resolved_at: null,
      created_at: 1767225600, updated_at: 1767225600, etag: '1',
    }],
  },
);
export type ApprovalRequestT = Static<typeof ApprovalRequest>;

export const ResolveApprovalBody = Type.Object(
  {
    decision: StringEnum(APPROVAL_DECISIONS, { description: 'APPROVE (the code runs, or the turn starts) or REJECT (the model is told, with the reason)' }),
    reason: Type.Optional(Type.String({ maxLength: 2000, description: 'why, up to 2,000 characters' })),
  },
  { additionalProperties: false, examples: [{ decision: 'APPROVE' }] },
);

export const AgentEvent = Type.Object(
  {
    id: Type.String({ description: 'agev_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    agent_id: Type.String({ description: 'agt_ id' }),
    session_id: Type.String({ description: 'ags_ id' }),
    turn_id: Type.String({ description: 'agtt_ id' }),
    sequence: Type.Integer({ minimum: 1, description: '1, 2, 3... within the session, without gaps' }),
    cursor: Type.String({ description: 'resume after this event: `after=` or the SSE Last-Event-ID' }),
    type: StringEnum(AGENT_EVENT_TYPES, { description: 'what happened (see the stream route for each type\'s data)' }),
    data: Type.Record(Type.String(), Type.Unknown(), { description: 'the event\'s details, by type' }),
    created_at: unix('appended'),
  },
  {
    $id: 'AgentEvent',
    description: 'One step of a turn, in order. Events are kept and numbered per session, so a reader resumes from any of them.',
    examples: [{
      id: 'agev_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', agent_id: 'agt_01kaxq3m7y0c9v8t6r5p4n3m2k',
      session_id: 'ags_01kaxq3m7y0c9v8t6r5p4n3m2k', turn_id: 'agtt_01kaxq3m7y0c9v8t6r5p4n3m2k', sequence: 4, cursor: '4', type: 'tool.started',
      data: { call_id: 'call_1', tool: 'execute', arguments: { code: "return (await platform.request({ method: 'GET', path: '/v1/installs' })).body.items.length;" } },
      created_at: 1767225601,
    }],
  },
);
export type AgentEventT = Static<typeof AgentEvent>;

export const AGENT_SCHEMAS = [UsageSummary, ModelPolicy, ToolPolicy, Agent, Session, Turn, ApprovalRequest, AgentEvent];
