// How each resource looks on a terminal: the one registry of per-resource presentation.
//
// Keys are `<resource>` (every command of the resource) or `<resource> <action>` (one command;
// it wins over the resource's entry). An entry may give
//   - columns: the fields a list shows as table columns, in order (dotted paths reach into nested
//     objects, `*_at` fields show as relative times); lists without an entry show id, name,
//     state/status and created_at, whichever the items have;
//   - cells:   computed columns by name (a function of the row), usable in `columns`;
//   - render:  a function that prints the whole result itself (stdout), instead of the default table
//     or key/value record, and may return the exit code. It receives the parsed response body, the
//     Output (colours, tty, now()), what `prepare` returned and the values of `options`. `--json`
//     never goes through it: that prints the API's JSON exactly;
//   - failure: the error of a result that is a failure although the request succeeded (a snippet
//     run that threw): printed on stderr with exit 1, also with --json (after the JSON);
//   - prepare: runs before the request (e.g. reads the snippet to type its inputs and learn its
//     display_type); may set `inv.coerce`;
//   - options: command options of the client's own (not of the API), e.g. --display-type;
//   - alternative: another operation the same command runs when its path arguments are left out
//     and one of `when` is given (`svc snippets run --code-file F` runs POST /v1/snippets:execute).
import type { Api } from './http.js';
import type { CliError } from './errors.js';
import type { Invocation } from './execute.js';

import { pick, printTable, type Output } from './output.js';
import { renderSnippetResult, snippetFailure, prepareSnippetRun, DISPLAY_TYPES } from './snippets.js';

export interface RenderContext {
  body: unknown;
  o: Output;
  /** what the presenter's prepare returned */
  prepared?: unknown;
  /** the values of the presenter's options, by attribute name (--display-type: displayType) */
  extra: Record<string, unknown>;
}

export interface Presenter {
  columns?: string[];
  cells?: Record<string, (row: unknown, o: Output) => string>;
  render?: (ctx: RenderContext) => number | void;
  failure?: (body: unknown) => CliError | null;
  prepare?: (ctx: { api: Api; inv: Invocation; path: Record<string, string> }) => Promise<unknown>;
  options?: { flags: string; description: string; choices?: readonly string[] }[];
  alternative?: { operationId: string; when: string[] };
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

/** The bare value (for `$(...)` and files), a newline added only on a terminal. */
const accessPresenter: Presenter = { render: ({ body, o }) => void o.out.write(`${(body as { value: string }).value}${o.tty ? '\n' : ''}`) };

export const PRESENTERS: Record<string, Presenter> = {
  workspaces: { columns: ['id', 'name', 'slug', 'role', 'plan.tier', 'state', 'created_at'] },
  'workspaces list-members': { columns: ['user_id', 'email', 'role', 'joined_at'] },
  'api-tokens': { columns: ['id', 'name', 'prefix', 'role', 'last_used_at', 'expires_at', 'created_at'] },
  'oauth-clients': { columns: ['id', 'name', 'role', 'last_used_at', 'created_at'] },
  operations: { columns: ['id', 'metadata.type', 'owner_id', 'state', 'started_at', 'completed_at'] },
  clusters: { columns: ['id', 'name', 'provider', 'state', 'reconciling', 'updated_at'] },
  packages: { columns: ['id', 'name', 'latest_version', 'updated_at'] },
  'packages list-versions': { columns: ['id', 'semver', 'prerelease', 'created_at'] },
  installs: { columns: ['id', 'package_id', 'semver', 'cluster_id', 'state', 'reconciling', 'updated_at'] },
  'installs list-renders': { columns: ['id', 'semver', 'current', 'created_at', 'replaced_at'] },
  'preview-hostnames': { columns: ['id', 'hostname', 'binding.kind', 'state', 'updated_at'] },
  secrets: { columns: ['id', 'name', 'kind', 'state', 'enabled_version_count', 'version_count', 'updated_at'] },
  // The bare value, for `$(...)` and `> file`; a newline only on a terminal (so the prompt is not glued on).
  'secret-versions access': accessPresenter,
  'secrets access': accessPresenter,
  'secret-versions': { columns: ['id', 'version_number', 'state', 'comment', 'created_at', 'destroyed_at'] },
  'audit-events': { columns: ['id', 'action', 'actor.type', 'actor.id', 'resource_id', 'created_at'] },
  plans: {
    columns: ['tier', 'display_name', 'clusters', 'installs', 'secrets', 'runs_per_day'],
    cells: {
      clusters: (row) => String(pick(row, 'limits.compute/clusters')),
      installs: (row) => String(pick(row, 'limits.installs/installs')),
      secrets: (row) => String(pick(row, 'limits.secrets/secrets')),
      runs_per_day: (row) => String(pick(row, 'limits.snippets/runs')),
    },
  },
  subscriptions: { columns: ['id', 'kind', 'previous_tier', 'requested_tier', 'status', 'effective_at', 'created_at'] },
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
    cells: { unread: (row, o) => ((row as { read_at?: number }).read_at === undefined ? (o.tty ? o.color.cyan('●') : 'unread') : o.tty ? '' : 'read') },
  },
  snippets: { columns: ['id', 'name', 'display_type', 'purpose', 'visibility', 'updated_at'] },
  'snippets list-runs': { columns: ['id', 'state', 'source', 'duration_ms', 'error.code', 'created_at'] },
  'snippets run': { ...snippetRun, prepare: prepareSnippetRun, alternative: { operationId: 'executeSnippetCode', when: ['code', 'code-file'] } },
  'snippets execute-code': snippetRun,
};

export function presenterFor(resource: string, action: string): Presenter {
  return { ...PRESENTERS[resource], ...PRESENTERS[`${resource} ${action}`] };
}

export function defaultColumns(items: unknown[]): string[] {
  const first = (items[0] ?? {}) as Record<string, unknown>;
  const cols = ['id', 'name', 'state', 'status', 'created_at'].filter((k) => k in first);
  return cols.length ? cols : Object.keys(first).slice(0, 5);
}
