// How each resource looks on a terminal: the one registry of per-resource presentation.
//
// Keys are `<resource>` (every command of the resource) or `<resource> <action>` (one command;
// it wins over the resource's entry). An entry may give
//   - columns: the fields a list shows as table columns, in order (dotted paths reach into nested
//     objects, `*_at` fields show as relative times); lists without an entry show id, name,
//     state/status and created_at, whichever the items have;
//   - render:  a function that prints the whole result itself (stdout), instead of the default table
//     or key/value record. It receives the parsed response body and the Output (colours, tty,
//     now()). `--json` never goes through it: that prints the API's JSON exactly.
// Examples of what a later module adds here in a few lines:
//   'quotas list':        { render: ({ body, o }) => ...one bar per metric (usage / limit)... }
//   'notifications list': { columns: ['unread', 'id', 'title', 'created_at'] }
//   'secrets access':     { render: ({ body, o }) => o.out.write(String(pick(body, 'value'))) }  (bare, for pipes)
//   'snippets run':       { render: ({ body, o }) => ...switch on the result's display_type... }
import type { Output } from './output.js';

export interface RenderContext {
  body: unknown;
  o: Output;
}

export interface Presenter {
  columns?: string[];
  render?: (ctx: RenderContext) => void;
}

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
};

export function presenterFor(resource: string, action: string): Presenter {
  return { ...PRESENTERS[resource], ...PRESENTERS[`${resource} ${action}`] };
}

export function defaultColumns(items: unknown[]): string[] {
  const first = (items[0] ?? {}) as Record<string, unknown>;
  const cols = ['id', 'name', 'state', 'status', 'created_at'].filter((k) => k in first);
  return cols.length ? cols : Object.keys(first).slice(0, 5);
}
