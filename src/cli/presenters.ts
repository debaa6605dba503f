// How each resource looks on a terminal: the one registry of per-resource presentation.
//
// Keys are `<resource>` (every command of the resource) or `<resource> <action>` (one command;
// it wins over the resource's entry). An entry may give
//   - columns: the fields a list shows as table columns, in order (dotted paths reach into nested
//     objects, `*_at` fields show as relative times); lists without an entry show id, name,
//     state/status and created_at, whichever the items have. Piped output prints exactly these;
//   - screen, drop, headers: the table on a terminal (table.ts): other columns (computed ones, e.g.
//     names instead of ids), which to leave out first as the terminal narrows, shorter headers;
//     `keep` names columns never cut (ids and URLs never are);
//   - names:   computed columns holding the name of a resource the rows refer to by id (`package`
//     from `package_id`), looked up only on a terminal (lookupNames);
//   - cells:   computed columns by name (a function of the row), usable in `columns` and `screen`;
//   - once:    the field of the response that holds a secret shown only this once (the full API
//     token): a note on stderr says so;
//   - render:  a function that prints the whole result itself (stdout), instead of the default table
//     or key/value record, and may return the exit code. It receives the parsed response body, the
//     Output (colours, tty, now()), what `prepare` returned and the values of `options`. `--json`
//     never goes through it: that prints the API's JSON exactly;
//   - note:    a line printed on stderr after the default record (what to do next), when it returns one;
//   - failure: the error of a result that is a failure although the request succeeded (a snippet
//     run that threw): printed on stderr with exit 1, also with --json (after the JSON);
//   - prepare: runs before the request (e.g. reads the snippet to type its inputs and learn its
//     display_type); may set `inv.coerce`;
//   - options: command options of the client's own (not of the API), e.g. --display-type;
//   - retry:   called when the request is refused; it may fill in what was missing (a prompt) and
//     answer true to have the request made again, once (a sign-in asked for its two-factor code);
//   - alternative: another operation the same command runs when its path arguments are left out
//     and one of `when` is given (`svc snippets run --code-file F` runs POST /v1/snippets:execute).
// RECORD_TABLES lays out the lists of objects inside a record (an operation's steps) on a terminal.
import type { Api } from './http.js';
import type { CliError } from './errors.js';
import type { buildRequest, Invocation } from './execute.js';
type Request = ReturnType<typeof buildRequest>;

import { pick, terminalText, type Output } from './output.js';
import { printTable, type Cells, type RecordTable, type TableLayout } from './table.js';
import { renderSnippetResult, snippetFailure, prepareSnippetRun, DISPLAY_TYPES } from './snippets.js';
import { parseSince } from './install-logs.js';
import { renderAgentRecord, renderApproval, renderEventPage, usageText } from './agent-view.js';
import { askCodeAfterRefusal, promptPasswords, promptSignIn, renderPasswordChanged, renderPasswordReset } from './password-prompt.js';

export interface RenderContext {
  body: unknown;
  o: Output;
  /** what the presenter's prepare returned */
  prepared?: unknown;
  /** the values of the presenter's options, by attribute name (--display-type: displayType) */
  extra: Record<string, unknown>;
}

/** A column showing the name of the resource whose id is in field `id`, read with GET `path` ({id}). */
export interface NameLookup {
  id: string;
  path: string;
}

export interface Presenter extends TableLayout {
  columns?: string[];
  cells?: Cells;
  names?: Record<string, NameLookup>;
  once?: string;
  render?: (ctx: RenderContext) => number | void;
  /** a line for stderr after the record (what to do next), or null */
  note?: (body: unknown) => string | null;
  failure?: (body: unknown) => CliError | null;
  prepare?: (ctx: { api: Api; inv: Invocation; path: Record<string, string> }) => Promise<unknown>;
  retry?: (ctx: { err: CliError; inv: Invocation }) => Promise<boolean>;
  options?: { flags: string; description: string; choices?: readonly string[] }[];
  alternative?: { operationId: string; when: string[] };
  /** a command whose answer is a stream: it makes the request and prints what comes itself (svc agent-events stream) */
  follow?: (ctx: { api: Api; o: Output; inv: Invocation; req: Request }) => Promise<number>;
  /**
   * Flags of the document written otherwise for people, by flag name: a short alias (`-f, --follow`),
   * or a value parsed from friendlier text (`--since 10m`); `parse` throws a CliError for bad text.
   */
  flagOverrides?: Record<string, { flags: string; description: string; parse?: (raw: string) => unknown }>;
}

/** Recovery codes, one a line, with what they are (they are shown only this once). */
function recoveryCodesText(body: unknown): string {
  const codes = (body as { recovery_codes: string[] }).recovery_codes;
  return `Recovery codes (each signs in once in place of a code from your app; shown only now, keep them safe):\n${codes.map((c) => `  ${c}\n`).join('')}`;
}

const BAR = 20;

/** `█████░░░ 25%`: usage over limit, yellow from 80 %, red at 100 %. */
function usageBar(row: unknown, o: Output): string {
  const { usage, limit } = row as { usage: number; limit: number };
  const ratio = limit > 0 ? usage / limit : usage > 0 ? 1 : 0;
  const filled = Math.min(BAR, Math.round(Math.min(ratio, 1) * BAR));
  const paint = ratio >= 1 ? o.color.red : ratio >= 0.8 ? o.color.yellow : o.color.green;
  return `${paint('█'.repeat(filled))}${o.color.dim('░'.repeat(BAR - filled))} ${`${Math.round(ratio * 100)}%`.padStart(4)}`;
}

const quotaMetric = (row: unknown) => {
  const { metric, cluster_id: cluster } = row as { metric: string; cluster_id?: string };
  return cluster ? `${metric} (${cluster})` : metric;
};

const snippetRun: Presenter = {
  render: renderSnippetResult,
  failure: snippetFailure,
  options: [{ flags: '--display-type <type>', description: "how to print the output instead of the snippet's display_type (ad hoc code: by its shape)", choices: DISPLAY_TYPES }],
};

/** What an agent, a session or a turn used: `1,840 tokens · 2¢` (`usage_summary`). */
const agentUsage = (row: unknown) => usageText(pick(row, 'usage_summary') as Parameters<typeof usageText>[0]);

/** The bare value (for `$(...)` and files), a newline added only on a terminal. */
const accessPresenter: Presenter = { render: ({ body, o }) => void o.out.write(`${(body as { value: string }).value}${o.tty ? '\n' : ''}`) };

/** A person as people know them: "Ada <ada@example.com>", a name, an e-mail, else the id. */
function actorOf(a: { type: string; id: string; name: string | null; email: string | null }): string {
  if (a.name && a.email) return terminalText(`${a.name} <${a.email}>`);
  return terminalText(a.email ?? a.name ?? (a.type === 'system' ? `system (${a.id})` : a.id));
}
const creatorOf = (op: { created_by: string; created_by_name: string | null; created_by_email: string | null }) =>
  actorOf({ type: op.created_by === 'system' ? 'system' : 'user', id: op.created_by, name: op.created_by_name, email: op.created_by_email });

export const PRESENTERS: Record<string, Presenter> = {
  workspaces: { columns: ['id', 'name', 'slug', 'role', 'plan.tier', 'state', 'created_at'], headers: { 'plan.tier': 'PLAN' }, drop: ['slug', 'created_at', 'plan.tier', 'state'] },
  'workspaces list-members': { columns: ['user_id', 'email', 'role', 'joined_at'] },
  'workspaces add-member': { once: 'accept_url' },
  'workspaces list-invitations': { columns: ['id', 'email', 'role', 'state', 'expires_at'] },
  'api-tokens': { columns: ['id', 'name', 'prefix', 'role', 'last_used_at', 'expires_at', 'created_at'], drop: ['created_at', 'prefix', 'expires_at', 'last_used_at'] },
  'api-tokens create': { once: 'token' },
  'oauth-clients': { columns: ['id', 'name', 'role', 'last_used_at', 'created_at'] },
  'oauth-clients create': { once: 'client_secret' },
  // a session token made with e-mail and password (svc login does this by the device grant)
  // the password (and a two-factor code) asked without echo on a terminal, or read from stdin's lines
  'identity create-session': { once: 'token', prepare: promptSignIn, retry: askCodeAfterRefusal },
  'identity enroll-two-factor': { once: 'secret' },
  'identity confirm-two-factor': { render: ({ body, o }) => void o.out.write(recoveryCodesText(body)) },
  'identity regenerate-recovery-codes': { render: ({ body, o }) => void o.out.write(recoveryCodesText(body)) },
  'identity change-password': { prepare: promptPasswords, render: renderPasswordChanged },
  'identity complete-password-reset': { prepare: promptPasswords, render: renderPasswordReset },
  // SVC_BILLING=payments: a raise answers a plan checkout; the plan moves once it is paid at checkout_url
  'subscriptions change-tier': {
    note: (body) => {
      const url = pick(body, 'checkout_url');
      return typeof url === 'string' && pick(body, 'state') === 'open'
        ? `pay at ${url} (open it in a browser); the plan changes once the payment provider confirms the payment`
        : null;
    },
  },
  operations: {
    columns: ['id', 'metadata.type', 'owner_id', 'state', 'created_by', 'started_at', 'completed_at'],
    // a person reads who started it by name or e-mail; the id stays in piped output and --json
    screen: ['id', 'metadata.type', 'owner_id', 'state', 'by', 'started_at', 'completed_at'],
    cells: { by: (row) => creatorOf(row as { created_by: string; created_by_name: string | null; created_by_email: string | null }) },
    headers: { 'metadata.type': 'TYPE', owner_id: 'OWNER' }, drop: ['completed_at', 'owner_id', 'by'],
  },
  clusters: { columns: ['id', 'name', 'provider', 'state', 'reconciling', 'updated_at'], drop: ['reconciling', 'updated_at', 'provider'] },
  packages: { columns: ['id', 'name', 'latest_version', 'updated_at'], headers: { latest_version: 'LATEST' } },
  'packages list-versions': { columns: ['id', 'semver', 'prerelease', 'created_at'] },
  installs: {
    columns: ['id', 'package_id', 'semver', 'cluster_id', 'state', 'reconciling', 'updated_at'],
    // a person reads which package on which cluster; the ids stay in piped output and --json
    screen: ['id', 'package', 'semver', 'cluster', 'state', 'reconciling', 'updated_at'],
    names: { package: { id: 'package_id', path: '/v1/packages/{id}' }, cluster: { id: 'cluster_id', path: '/v1/clusters/{id}' } },
    drop: ['reconciling', 'updated_at', 'semver'],
  },
  'installs list-renders': { columns: ['id', 'semver', 'current', 'created_at', 'replaced_at'] },
  'preview-hostnames': { columns: ['id', 'hostname', 'binding.kind', 'state', 'updated_at'], headers: { 'binding.kind': 'BINDING' }, keep: ['hostname'] },
  secrets: {
    columns: ['id', 'name', 'kind', 'state', 'enabled_version_count', 'version_count', 'updated_at'],
    headers: { enabled_version_count: 'ENABLED', version_count: 'VERSIONS' },
    drop: ['kind', 'enabled_version_count', 'updated_at', 'version_count'],
  },
  // The bare value, for `$(...)` and `> file`; a newline only on a terminal (so the prompt is not glued on).
  'secret-versions access': accessPresenter,
  'secrets access': accessPresenter,
  'secret-versions': { columns: ['id', 'version_number', 'state', 'comment', 'created_at', 'destroyed_at'], headers: { version_number: 'VERSION' }, drop: ['destroyed_at', 'created_at'] },
  // who did what to what: the event's own id matters least
  'audit-events': {
    columns: ['id', 'action', 'actor.type', 'actor.id', 'resource_id', 'created_at'],
    // on a terminal, people and resources by name (kept with the event when it was recorded)
    screen: ['id', 'action', 'actor', 'resource', 'created_at'],
    cells: {
      actor: (row) => actorOf((row as { actor: { type: string; id: string; name: string | null; email: string | null } }).actor),
      resource: (row) => {
        const e = row as { resource_id: string; resource_name: string | null };
        return terminalText(e.resource_name ? `${e.resource_name} (${e.resource_id})` : e.resource_id);
      },
    },
    keep: ['action'], drop: ['id', 'resource'],
  },
  plans: {
    columns: ['tier', 'display_name', 'clusters', 'installs', 'secrets', 'runs_per_day'],
    cells: {
      clusters: (row) => String(pick(row, 'limits.compute/clusters')),
      installs: (row) => String(pick(row, 'limits.installs/installs')),
      secrets: (row) => String(pick(row, 'limits.secrets/secrets')),
      runs_per_day: (row) => String(pick(row, 'limits.snippets/runs')),
    },
  },
  subscriptions: {
    columns: ['id', 'kind', 'previous_tier', 'requested_tier', 'status', 'effective_at', 'created_at'],
    headers: { previous_tier: 'FROM', requested_tier: 'TO', effective_at: 'EFFECTIVE' },
  },
  quotas: {
    cells: { metric: quotaMetric, bar: usageBar },
    render: ({ body, o }) => {
      const rows = (body as { data: unknown[] }).data;
      // A bar on a terminal; plain numbers for scripts.
      printTable(o, o.tty ? ['metric', 'usage', 'limit', 'bar', 'resets_at'] : ['metric', 'usage', 'limit', 'remaining', 'resets_at'], rows, PRESENTERS.quotas!.cells);
    },
  },
  notifications: {
    columns: ['unread', 'id', 'severity', 'title', 'created_at'],
    headers: { unread: '' },
    cells: { unread: (row, o) => ((row as { read_at?: number }).read_at === undefined ? (o.tty ? o.color.cyan('●') : 'unread') : o.tty ? '' : 'read') },
  },
  snippets: { columns: ['id', 'name', 'display_type', 'purpose', 'visibility', 'updated_at'], headers: { display_type: 'DISPLAY' }, drop: ['updated_at', 'visibility', 'purpose'] },
  'snippets list-runs': { columns: ['id', 'state', 'source', 'duration_ms', 'error.code', 'created_at'], headers: { duration_ms: 'MS', 'error.code': 'ERROR' } },
  'snippets run': { ...snippetRun, prepare: prepareSnippetRun, alternative: { operationId: 'executeSnippetCode', when: ['code', 'code-file'] } },
  'snippets execute-code': snippetRun,
  agents: {
    columns: ['id', 'name', 'state', 'model_policy.provider', 'model_policy.default_model', 'tool_policy.writes', 'usage', 'updated_at'],
    headers: { 'model_policy.provider': 'PROVIDER', 'model_policy.default_model': 'MODEL', 'tool_policy.writes': 'WRITES' },
    cells: { usage: agentUsage },
    drop: ['usage', 'updated_at', 'model_policy.provider', 'tool_policy.writes'],
  },
  'agent-sessions': {
    columns: ['id', 'agent_id', 'title', 'state', 'usage', 'updated_at'],
    screen: ['id', 'agent', 'title', 'state', 'usage', 'updated_at'],
    names: { agent: { id: 'agent_id', path: '/v1/agents/{id}' } },
    cells: { usage: agentUsage },
    drop: ['usage', 'updated_at', 'title'],
  },
  'agent-turns': {
    columns: ['id', 'state', 'model', 'input.content', 'failure.code', 'usage', 'created_at'],
    headers: { 'input.content': 'MESSAGE', 'failure.code': 'FAILURE' },
    cells: { usage: agentUsage },
    drop: ['usage', 'failure.code', 'model', 'created_at'],
  },
  'approval-requests': { columns: ['id', 'kind', 'state', 'summary', 'turn_id', 'created_at'], drop: ['turn_id', 'created_at', 'kind'] },
  'agent-events list': { render: renderEventPage },
  'installs logs': {
    follow: async (ctx) => (await import('./install-logs.js')).logsCommand(ctx.api, ctx.o, ctx.inv, ctx.req),
    flagOverrides: {
      follow: { flags: '-f, --follow', description: 'keep printing new lines as they are written, until Ctrl-C or the install is deleted' },
      since: { flags: '--since <time>', description: 'only lines written since a Unix time (seconds) or for a duration back from now: 90s, 10m, 2h, 1d', parse: parseSince },
    },
  },
  'agent-events stream': { follow: async (ctx) => (await import('./agent-events.js')).streamEventsCommand(ctx.api, ctx.o, ctx.inv, ctx.req) },
};
// One agent, session or turn (usage in a phrase), or an approval request with its code, as a record; lists keep the tables above.
for (const [resource, actions] of [
  ['agents', ['get', 'create', 'update', 'delete', 'undelete']], ['agent-sessions', ['get', 'create', 'delete', 'undelete']], ['agent-turns', ['get', 'create', 'respond', 'cancel', 'wait']],
] as const) for (const action of actions) PRESENTERS[`${resource} ${action}`] = { render: renderAgentRecord };
for (const action of ['get', 'resolve']) PRESENTERS[`approval-requests ${action}`] = { render: renderApproval };

/** How long a step ran: whole seconds of the server's clock, as --wait says it. */
function stepTook(row: unknown): string {
  const { started_at: started, completed_at: completed } = row as { started_at?: number; completed_at?: number };
  if (started === undefined || completed === undefined) return '-';
  return completed - started < 1 ? '<1s' : `${completed - started}s`;
}

/** Lists of objects inside records, by field name (any record that has one). */
export const RECORD_TABLES: Record<string, RecordTable> = {
  steps: { columns: ['name', 'status', 'attempts', 'started_at', 'took', 'error_message'], cells: { took: stepTook }, headers: { error_message: 'ERROR' } },
  urls: { columns: ['route_key', 'url', 'error', 'last_observed_at'], headers: { last_observed_at: 'OBSERVED' } },
};

/** Name lookups run at most this many requests at once. */
const LOOKUP_CONCURRENCY = 8;

/**
 * The cells of a presenter's `names` columns for these rows: one GET per distinct id (not one per
 * row), LOOKUP_CONCURRENCY at a time. An id whose resource cannot be read (deleted, not visible)
 * shows as the id; the list itself has already succeeded, so a failed lookup fails nothing.
 */
export async function lookupNames(api: Api, names: Record<string, NameLookup>, rows: unknown[], header: Record<string, string>): Promise<Cells> {
  const found = new Map<string, string>();
  const jobs = Object.values(names).flatMap((l) => [...new Set(rows.map((r) => pick(r, l.id)).filter((id): id is string => typeof id === 'string'))].map((id) => ({ id, path: l.path })));
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const { id, path } = jobs[next++]!;
      try {
        const res = await api.call('GET', path, { path: { id }, header, auth: 'workspace' });
        const name = pick(res.body, 'name');
        if (typeof name === 'string' && name) found.set(id, name);
      } catch {
        // the id stands in for the name
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(LOOKUP_CONCURRENCY, jobs.length) }, worker));
  return Object.fromEntries(Object.entries(names).map(([column, l]) => [column, (row: unknown, o: Output) => {
    const id = pick(row, l.id);
    return typeof id === 'string' ? terminalText(found.get(id) ?? id) : o.color.dim('-');
  }]));
}

export function presenterFor(resource: string, action: string): Presenter {
  const own = PRESENTERS[`${resource} ${action}`];
  // A command with columns of its own (installs list-renders) shows them, not its resource's table layout.
  const base = own?.columns ? { ...PRESENTERS[resource], screen: undefined, names: undefined, drop: undefined, headers: undefined, keep: undefined } : PRESENTERS[resource];
  return { ...base, ...own };
}

export function defaultColumns(items: unknown[]): string[] {
  const first = (items[0] ?? {}) as Record<string, unknown>;
  const cols = ['id', 'name', 'state', 'status', 'created_at'].filter((k) => k in first);
  return cols.length ? cols : Object.keys(first).slice(0, 5);
}
