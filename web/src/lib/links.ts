// The app page of a resource a notification or an audit event names. Resources with a record page
// open it; the settings-held ones (tokens, clients, members, the plan) open their settings page.

const RECORD_PAGES: Record<string, string> = {
  operation: 'operations',
  install: 'installs',
  secret: 'secrets',
  cluster: 'clusters',
  package: 'packages',
  snippet: 'snippets',
  machine: 'machines',
};

const SETTINGS_PAGES: Record<string, string> = {
  api_token: '/settings/tokens',
  oauth_client: '/settings/oauth-clients',
  workspace_member: '/settings/members',
  subscription_change_request: '/settings/plan',
  workspace: '/settings/plan',
  user: '/settings/plan',
};

/**
 * Where `type`/`id` is shown, or null. A secret version opens its secret (`metadata.secret_id`,
 * as audit events carry it).
 */
export function resourceHref(type: string, id: string, metadata: Record<string, string> = {}): string | null {
  if (type === 'secret_version') return metadata.secret_id ? `/secrets/${metadata.secret_id}` : null;
  const base = RECORD_PAGES[type];
  if (base) return `/${base}/${id}`;
  return SETTINGS_PAGES[type] ?? null;
}
