// Snippets and their runs (spec 2.8, endpoints 8 and 14; API.md 8.3).
import { Type, type Static } from 'typebox';
import { LOG_LEVELS, RUN_ERROR_CODES } from '../../sandbox/index.js';
import { StringEnum } from '../../platform/http.js';

export const DISPLAY_TYPES = ['table', 'stat', 'json', 'logs'] as const;
export const VISIBILITIES = ['workspace', 'session'] as const;
export const ORIGINS = ['user', 'agent', 'system'] as const;
export const PURPOSES = ['general', 'prepared_action', 'reactive_read', 'widget'] as const;
export const RUN_STATES = ['succeeded', 'failed', 'timed_out'] as const;
export type RunState = (typeof RUN_STATES)[number];
export const RUN_SOURCES = ['manual', 'agent', 'dashboard'] as const;
export const INPUT_KINDS = ['text', 'number', 'boolean', 'enum', 'time_range', 'resource'] as const;
export type InputKind = (typeof INPUT_KINDS)[number];
/** What a `resource` input may name, and the id prefix its value must carry. */
export const INPUT_RESOURCE_TYPES = ['install', 'cluster', 'package', 'snippet', 'operation', 'preview_hostname', 'api_token'] as const;
export type InputResourceType = (typeof INPUT_RESOURCE_TYPES)[number];

/** Limits of spec section 8 and API.md 8.3. */
export const MAX_CODE_LENGTH = 50_000;
export const MAX_INPUTS = 16;
export const MAX_TEXT_INPUT_LENGTH = 10_000;
/**
 * Deepest nesting of `:execute` inputs: stricter than the bound on every request body (64) and
 * the sandbox's own, since inputs are form values, not documents. Declared inputs are stricter
 * still: each kind's value is a scalar or a {start, end} pair.
 */
export const MAX_RUN_INPUT_DEPTH = 32;
/** Wall time of a run: 10 s unless the run asks for up to 60 s (overrides.timeout_ms). */
export const DEFAULT_TIMEOUT_MS = 10_000;
export const MAX_TIMEOUT_MS = 60_000;

export const SnippetId = Type.String({ minLength: 1, maxLength: 54, description: 'snippet id (snp_...)' });
export const RunId = Type.String({ minLength: 1, maxLength: 55, description: 'snippet run id (snpr_...)' });

const Timestamp = (description: string) => Type.Integer({ minimum: 0, description: `${description} (Unix seconds)` });
const NullableString = (description: string) => Type.Unsafe<string | null>({ type: ['string', 'null'], description });
const AnyJson = (description: string) => Type.Unsafe<unknown>({ description });

const SnippetName = Type.String({ minLength: 1, maxLength: 100, description: 'a name for people, 1-100 characters (not unique)' });
const Description = Type.String({ maxLength: 500, description: 'at most 500 characters' });
const Code = Type.String({
  minLength: 1,
  maxLength: MAX_CODE_LENGTH,
  description:
    'the body of an async JavaScript function (strict mode), 1-50,000 characters, run in the sandbox with `inputs`, `console` and ' +
    '`await platform.request({method, path, query?, body?, headers?})`; its return value (JSON, at most 1 MiB) is the output',
});
const DisplayType = StringEnum(DISPLAY_TYPES, {
  description: 'how dashboard widgets and the CLI render the output: `table` (an array of objects), `stat` (one value), `json`, `logs` (the console lines)',
});
const Visibility = StringEnum(VISIBILITIES, { description: '`workspace`: reusable workspace state (default); `session`: scoped to an agent session' });
const Origin = StringEnum(ORIGINS, { description: 'who authored the snippet: `user` (default), `agent` or `system`' });
const Purpose = StringEnum(PURPOSES, { description: '`general` (default), `prepared_action`, `reactive_read` or `widget`' });
const AgentId = (what: string) => Type.String({ minLength: 1, maxLength: 54, description: `the ${what} that produced the snippet` });

export const InputDeclaration = Type.Object(
  {
    key: Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z][a-z0-9_]{0,31}$', description: 'the name the code reads (`inputs.<key>`): a lowercase letter, then up to 31 of [a-z0-9_]; unique in the snippet' }),
    label: Type.String({ minLength: 1, maxLength: 100, description: 'what a form shows' }),
    kind: StringEnum(INPUT_KINDS, {
      description:
        'the type of the value: `text` (a string, at most 10,000 characters), `number` (finite; within `min`/`max` when given), `boolean`, ' +
        '`enum` (one of `options`), `time_range` ({start, end} Unix seconds, start <= end), `resource` (an id of `resource_type`)',
    }),
    description: Type.Optional(Type.String({ maxLength: 500, description: 'help text' })),
    required: Type.Optional(Type.Boolean({ description: 'a run must give a value unless `default` is set (default false)' })),
    default: Type.Optional(AnyJson('the value when a run gives none; must be a valid value of the kind')),
    options: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      minItems: 1, maxItems: 50, uniqueItems: true, description: 'enum only, and required there: the allowed values',
    })),
    min: Type.Optional(Type.Number({ description: 'number only: the smallest value' })),
    max: Type.Optional(Type.Number({ description: 'number only: the largest value' })),
    resource_type: Type.Optional(StringEnum(INPUT_RESOURCE_TYPES, { description: 'resource only, and required there: the kind of id the value is' })),
  },
  { additionalProperties: false, description: 'A typed input the snippet declares; every run\'s inputs are checked against these.' },
);
export type InputDeclarationT = Static<typeof InputDeclaration>;

const Inputs = Type.Array(InputDeclaration, { maxItems: MAX_INPUTS, description: `the declared inputs, at most ${MAX_INPUTS}, keys unique` });

const EXAMPLE_CODE =
  "const res = await platform.request({ method: 'GET', path: '/v1/installs', query: { limit: inputs.limit } });\n" +
  'return res.body.data.map((i) => ({ id: i.id, state: i.state, urls: i.urls.map((u) => u.url).join(\' \') }));';
const EXAMPLE_INPUTS = [{ key: 'limit', label: 'How many', kind: 'number' as const, min: 1, max: 100, default: 20 }];

const SNIPPET_EXAMPLE = {
  id: 'snp_01jf8x3q6m2c4y7n0k5t9r1b3d', workspace_id: 'ws_01jf8x3q6m2c4y7n0k5t9r1b3a', name: 'Installs and their URLs',
  description: 'Every install with its state and URLs', code: EXAMPLE_CODE, display_type: 'table', inputs: EXAMPLE_INPUTS,
  visibility: 'workspace', origin: 'user', purpose: 'widget', agent_session_id: null, agent_turn_id: null,
  created_by: 'usr_01jf8x3q6m2c4y7n0k5t9r1b3c', last_writer_id: 'usr_01jf8x3q6m2c4y7n0k5t9r1b3c', created_at: 1767225600, updated_at: 1767225600, archived_at: null, etag: '1',
  html_url: 'https://svc.example.com/snippets/snp_01jf8x3q6m2c4y7n0k5t9r1b3d',
};

export const Snippet = Type.Object(
  {
    id: Type.String({ description: 'snp_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    name: Type.String({ description: '1-100 characters' }),
    description: NullableString('at most 500 characters; null when unset'),
    code: Type.String({ description: 'the body of an async JavaScript function' }),
    display_type: DisplayType,
    inputs: Type.Array(InputDeclaration, { description: 'the declared inputs' }),
    visibility: Visibility,
    origin: Origin,
    purpose: Purpose,
    agent_session_id: NullableString('the agent session (ags_) that produced it, or null'),
    agent_turn_id: NullableString('the agent turn (agtt_) that produced it, or null'),
    created_by: Type.String({ description: 'usr_, tok_ or oac_ id of whoever created it' }),
    last_writer_id: Type.String({
      description:
        'usr_, tok_ or oac_ id of whoever last changed what the snippet does (created it, or changed `code` or `inputs`). Every run acts ' +
        'with at most the rights this writer has when the run starts (and never more than the runner\'s): none when the user left the ' +
        'workspace or the token or client was revoked or expired (the run fails with WRITER_UNAUTHORIZED)',
    }),
    created_at: Timestamp('creation time'),
    updated_at: Timestamp('last change'),
    archived_at: Type.Unsafe<number | null>({ type: ['integer', 'null'], minimum: 0, description: 'when it was archived (DELETE), Unix seconds; null while active. An archived snippet cannot run' }),
    etag: Type.String({ description: 'changes on every write; runs record the etag of the code they ran (snippet_etag)' }),
    html_url: Type.String({ format: 'uri', description: 'the dashboard view of the snippet' }),
  },
  {
    $id: 'Snippet',
    description: 'Stored JavaScript that runs in the sandbox as whoever runs it.',
    examples: [SNIPPET_EXAMPLE],
  },
);
export type SnippetT = Static<typeof Snippet>;
export const SnippetRef = Type.Unsafe<SnippetT>({ $ref: 'Snippet#' });

export const CreatedSnippet = Type.Object(
  { snippet_id: Type.String({ description: 'the new snp_ id, the same as id' }), ...Snippet.properties },
  {
    $id: 'CreatedSnippet',
    description: 'The snippet just created, with its id also as `snippet_id`.',
    examples: [{ snippet_id: SNIPPET_EXAMPLE.id, ...SNIPPET_EXAMPLE }],
  },
);
export type CreatedSnippetT = Static<typeof CreatedSnippet>;

export const CreateSnippetBody = Type.Object(
  {
    name: SnippetName,
    code: Code,
    display_type: DisplayType,
    description: Type.Optional(Description),
    visibility: Type.Optional(Visibility),
    origin: Type.Optional(Origin),
    agent_session_id: Type.Optional(AgentId('agent session (ags_...)')),
    agent_turn_id: Type.Optional(AgentId('agent turn (agtt_...)')),
    purpose: Type.Optional(Purpose),
    inputs: Type.Optional(Inputs),
  },
  {
    additionalProperties: false,
    description: 'A new snippet: its name, code and how its result is shown, who may see it, and the `inputs` it declares.',
    examples: [{ name: 'Installs and their URLs', code: EXAMPLE_CODE, display_type: 'table', purpose: 'widget', inputs: EXAMPLE_INPUTS }],
  },
);
export type CreateSnippetBodyT = Static<typeof CreateSnippetBody>;

export const PatchSnippetBody = Type.Object(
  {
    name: Type.Optional(SnippetName),
    description: Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: 500, description: 'at most 500 characters; null clears it' })),
    code: Type.Optional(Code),
    display_type: Type.Optional(DisplayType),
    inputs: Type.Optional(Inputs),
    visibility: Type.Optional(Visibility),
    purpose: Type.Optional(Purpose),
  },
  {
    additionalProperties: false, minProperties: 1,
    description: 'The fields to change (origin and the agent ids are fixed at creation).',
    examples: [{ code: "return (await platform.request({ path: '/v1/installs' })).body.data.length", display_type: 'stat' }],
  },
);
export type PatchSnippetBodyT = Static<typeof PatchSnippetBody>;

export const RunOverrides = Type.Object(
  {
    timeout_ms: Type.Optional(Type.Integer({
      minimum: 1, maximum: MAX_TIMEOUT_MS,
      description: `the run's wall time (and CPU time) limit in ms, at most ${MAX_TIMEOUT_MS}; default ${DEFAULT_TIMEOUT_MS}`,
    })),
  },
  { additionalProperties: false, description: 'Limits of this run that differ from the defaults.' },
);
export type RunOverridesT = Static<typeof RunOverrides>;

const RunInputs = Type.Object({}, {
  additionalProperties: true, maxProperties: MAX_INPUTS,
  description: 'values of the declared inputs by key; unknown keys, wrong types and missing required inputs are 400. Defaults fill the rest',
});

export const RunSnippetBody = Type.Object(
  {
    inputs: Type.Optional(RunInputs),
    overrides: Type.Optional(RunOverrides),
    source: Type.Optional(StringEnum(['manual', 'dashboard'], { description: 'what started the run: `manual` (default) or `dashboard` (a widget)' })),
  },
  { additionalProperties: false, description: 'Runs the snippet now.', examples: [{ inputs: { limit: 10 }, overrides: { timeout_ms: 20000 } }] },
);
export type RunSnippetBodyT = Static<typeof RunSnippetBody>;

export const ExecuteBody = Type.Object(
  {
    code: Code,
    inputs: Type.Optional(Type.Object({}, {
      additionalProperties: true,
      description: `a JSON object, the global \`inputs\` of the code (no declarations: passed as given); nested at most ${MAX_RUN_INPUT_DEPTH} levels and 1 MiB as JSON, else 400 INVALID_INPUTS`,
    })),
    overrides: Type.Optional(RunOverrides),
  },
  {
    additionalProperties: false, description: 'Code to run once without saving anything.',
    examples: [{ code: "console.log('hello'); return inputs.a + inputs.b", inputs: { a: 1, b: 2 } }],
  },
);
export type ExecuteBodyT = Static<typeof ExecuteBody>;

export const RunStats = Type.Object(
  {
    cpu_time_ms: Type.Integer({ minimum: 0, description: 'CPU time of the sandbox worker during the run' }),
    wall_time_ms: Type.Integer({ minimum: 0, description: 'from the start of the run to its end, waits for platform.request included' }),
    heap_used_bytes: Type.Integer({ minimum: 0, description: 'the JavaScript heap when the run ended' }),
    request_count: Type.Integer({ minimum: 0, description: 'platform.request calls served' }),
  },
  { description: 'What the run used.' },
);

export const LogLineSchema = Type.Object(
  {
    level: StringEnum(LOG_LEVELS, { description: 'the console method: log, info, warn, error or debug' }),
    message: Type.String({ description: 'the arguments formatted and joined by spaces (objects as JSON)' }),
    at_ms: Type.Integer({ minimum: 0, description: 'ms since the run started' }),
  },
  { description: 'One console line (at most 1,000 lines and 64 KiB per run are kept, then a truncation marker)' },
);

/** The sandbox's codes, and the one a stored snippet's run fails with before it starts. */
export const SNIPPET_RUN_ERROR_CODES = [...RUN_ERROR_CODES, 'WRITER_UNAUTHORIZED'] as const;

export const RunErrorSchema = Type.Object(
  {
    code: StringEnum(SNIPPET_RUN_ERROR_CODES, {
      description:
        'SNIPPET_THREW (uncaught exception, syntax error or stack overflow; details: name, stack), TIMEOUT (state timed_out; details: limit, ' +
        'limit_ms, and waited_ms: the time limit counts from the request, waiting for a sandbox worker included), ' +
        'MEMORY_LIMIT (details: limit_bytes), OUTPUT_TOO_LARGE (over 1 MiB; details: limit_bytes), REQUEST_LIMIT (a 51st platform.request; details: limit), ' +
        'INVALID_OUTPUT (not JSON-serializable, or nested deeper than 64 levels; details: type, limit_depth), CANCELLED, SANDBOX_FAILURE (the engine ' +
        'failed; the worker was replaced), WRITER_UNAUTHORIZED (stored snippets: the last writer has no rights now, having left the workspace or ' +
        'its API token or OAuth client being revoked or expired; the code did not run and the run is not counted; details: writer_id, cause ' +
        '`removed`, `revoked` or `expired`)',
    }),
    message: Type.String({ description: 'what happened; secret values the run read appear as [masked]' }),
    details: AnyJson('details by code'),
  },
  { description: 'Why the run failed: a code, a message and details.' },
);

export const SnippetRun = Type.Object(
  {
    id: Type.String({ description: 'snpr_ id' }),
    snippet_id: Type.String({ description: 'snp_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    agent_session_id: NullableString('the snippet\'s agent session, or null'),
    agent_turn_id: NullableString('the snippet\'s agent turn, or null'),
    state: StringEnum(RUN_STATES, { description: 'succeeded, failed (error says why) or timed_out (error code TIMEOUT). Runs are recorded when they end' }),
    source: StringEnum(RUN_SOURCES, { description: 'what started it: manual, agent or dashboard' }),
    run_by: Type.String({ description: 'usr_, tok_ or oac_ id of whoever ran it; platform.request acted as them' }),
    snippet_etag: Type.String({ description: 'the snippet\'s etag when it ran: which version of the code ran' }),
    inputs: Type.Record(Type.String(), AnyJson('a value'), { description: 'the inputs the code got, defaults applied' }),
    overrides: Type.Object({ timeout_ms: Type.Optional(Type.Integer()) }, { description: 'the overrides the run asked for ({} when none)' }),
    stats: RunStats,
    duration_ms: Type.Integer({ minimum: 0, description: 'wall time of the run, ms (stats.wall_time_ms)' }),
    created_at: Timestamp('when the run started'),
    etag: Type.String({ description: 'runs never change once recorded' }),
    secret_derived: Type.Boolean({
      description: 'true when the run read a secret value (`:access` through platform.request). Masking cannot catch a value split, reversed or ' +
        're-encoded, so such a run\'s output, error and logs are shown only to roles that may read secret values (admin, owner)',
    }),
    output_withheld: Type.Boolean({
      description: 'true when this run is secret_derived and your role may not read secret values: output and error are null and logs empty here, whatever the run returned',
    }),
    output: Type.Optional(AnyJson('view=full (and GET of one run): the return value, null when the run failed (or output_withheld); secret values the run read are [masked]')),
    error: Type.Optional(Type.Unsafe<Static<typeof RunErrorSchema> | null>({ ...RunErrorSchema, type: ['object', 'null'], description: 'view=full: why it failed, null when it succeeded' })),
    logs: Type.Optional(Type.Array(LogLineSchema, { description: 'view=full: the captured console lines, secret values the run read [masked]' })),
  },
  {
    $id: 'SnippetRun',
    description: 'One run of a snippet: who ran it, which code, its inputs and stats. `output`, `error` and `logs` are included with view=full and when reading one run.',
    examples: [{
      id: 'snpr_01jf8x3q6m2c4y7n0k5t9r1b3e', snippet_id: 'snp_01jf8x3q6m2c4y7n0k5t9r1b3d', workspace_id: 'ws_01jf8x3q6m2c4y7n0k5t9r1b3a',
      agent_session_id: null, agent_turn_id: null, state: 'succeeded', source: 'manual', run_by: 'usr_01jf8x3q6m2c4y7n0k5t9r1b3c',
      snippet_etag: '1', inputs: { limit: 20 }, overrides: {}, stats: { cpu_time_ms: 3, wall_time_ms: 6, heap_used_bytes: 412_000, request_count: 1 },
      duration_ms: 6, created_at: 1767225600, etag: '1', secret_derived: false, output_withheld: false,
      output: [{ id: 'inst_01jf8x3q6m2c4y7n0k5t9r1b3f', state: 'healthy', urls: 'http://web-01jf8x3q6m2c4y7n0k5t9r1b3f.preview.localhost:8081' }],
      error: null, logs: [],
    }],
  },
);
export type SnippetRunT = Static<typeof SnippetRun>;
export const SnippetRunRef = Type.Unsafe<SnippetRunT>({ $ref: 'SnippetRun#' });

export const ExecuteResult = Type.Object(
  {
    output: AnyJson('the return value; null when the run failed. Secret values the run read (`:access`) are [masked], here too'),
    error: Type.Unsafe<Static<typeof RunErrorSchema> | null>({ ...RunErrorSchema, type: ['object', 'null'], description: 'why it failed, null when it succeeded' }),
    logs: Type.Array(LogLineSchema, { description: 'the captured console lines, secret values the run read [masked]' }),
    stats: RunStats,
  },
  {
    $id: 'SnippetExecuteResult',
    description: 'The outcome of ad hoc code; nothing is stored.',
    examples: [{ output: 3, error: null, logs: [{ level: 'log', message: 'hello', at_ms: 0 }], stats: { cpu_time_ms: 1, wall_time_ms: 2, heap_used_bytes: 380_000, request_count: 0 } }],
  },
);
export type ExecuteResultT = Static<typeof ExecuteResult>;

export const ListSnippetsQuery = Type.Object(
  {
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'next_cursor of a previous page, with the same filters' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'items per page, 1-100' })),
    purpose: Type.Optional(Purpose),
    visibility: Type.Optional(Visibility),
    archived: Type.Optional(StringEnum(['true', 'false'], { description: '`true` also lists archived snippets (as AIP-164 show_deleted); default false' })),
  },
  { additionalProperties: false },
);
export type ListSnippetsQueryT = Static<typeof ListSnippetsQuery>;

export const ListRunsQuery = Type.Object(
  {
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'next_cursor of a previous page, with the same state and view' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'items per page, 1-100' })),
    state: Type.Optional(StringEnum(RUN_STATES, { description: 'only runs in this state' })),
    view: Type.Optional(StringEnum(['basic', 'full'], { default: 'basic', description: '`basic` (default) leaves out output, error and logs; `full` includes them' })),
  },
  { additionalProperties: false },
);
export type ListRunsQueryT = Static<typeof ListRunsQuery>;

export const SNIPPET_SCHEMAS = [Snippet, CreatedSnippet, SnippetRun, ExecuteResult];
