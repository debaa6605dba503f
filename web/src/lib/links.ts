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
  agent: 'agents',
  agent_session: 'agent_sessions',
  offer: 'offers',
  order: 'orders',
  order_draft: 'order_drafts',
};

const SETTINGS_PAGES: Record<string, string> = {
  api_token: '/settings/tokens',
  oauth_client: '/settings/oauth-clients',
  workspace_member: '/settings/members',
  workspace_invitation: '/settings/members',
  subscription_change_request: '/settings/plan',
  workspace: '/settings/plan',
  user: '/settings/plan',
};

/** Resources shown on their parent's page, by the metadata key that names the parent (as audit events carry it). */
const PARENT_PAGES: Record<string, [key: string, base: string]> = {
  secret_version: ['secret_id', 'secrets'],
  worker_bootstrap: ['cluster_id', 'clusters'],
  package_version: ['package_id', 'packages'],
  // agent_turn_waiting notifications name the turn; its chat is its session's page
  agent_turn: ['session_id', 'agent_sessions'],
};

/**
 * Where `type`/`id` is shown, or null. A secret version opens its secret (`metadata.secret_id`), a
 * worker bootstrap its cluster (`metadata.cluster_id`); a machine (mch_, also the subject of the
 * machine_unreachable and machine_expiry notifications) its own page, an agent turn (the subject of
 * agent_turn_waiting notifications) the chat of its session (`context.session_id`).
 */
export function resourceHref(type: string, id: string, metadata: Record<string, string> = {}): string | null {
  const parent = PARENT_PAGES[type];
  if (parent) return metadata[parent[0]] ? `/${parent[1]}/${metadata[parent[0]]}` : null;
  const base = RECORD_PAGES[type];
  if (base) return `/${base}/${id}`;
  return SETTINGS_PAGES[type] ?? null;
}
