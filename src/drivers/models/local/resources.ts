// The kinds of workspace resource the local model can count and list: how people name them, where
// the API lists them, which of their fields an answer needs (as JavaScript the sandbox runs), which
// words name their states, and how one item reads in an answer. Only names and states, never a
// secret's value (lists carry none) nor a token's secret.
export const RESOURCE_KEYS = ['installs', 'clusters', 'machines', 'secrets', 'snippets', 'operations', 'packages', 'agents', 'members', 'api_tokens'] as const;
export type ResourceKey = (typeof RESOURCE_KEYS)[number];

export type Item = Record<string, unknown>;

export interface ResourceKind {
  key: ResourceKey;
  singular: string;
  plural: string;
  /** words that name it, singular (a message's words are singularized before they are compared) */
  words: string[];
  /** the list path; members need the workspace id */
  path: (workspaceId: string) => string;
  /** `state` is a query filter of the list route (else the code filters what it read) */
  serverStateFilter: boolean;
  /** word of a message -> the state value of the API */
  states: Record<string, string>;
  /** JavaScript: an arrow function from one API item to the fields the answer reads */
  pick: string;
  /** the items carry cluster_id, so "on cluster dev" can filter them */
  byCluster: boolean;
  describe: (item: Item) => string;
}

const s = (v: unknown): string => (v === null || v === undefined ? '' : String(v));
const day = (unix: unknown): string => (typeof unix === 'number' ? new Date(unix * 1000).toISOString().slice(0, 10) : '');

export const RESOURCES: Record<ResourceKey, ResourceKind> = {
  installs: {
    key: 'installs', singular: 'install', plural: 'installs', words: ['install', 'installation', 'deployment', 'deploy', 'app', 'application'],
    path: () => '/v1/installs', serverStateFilter: true, byCluster: true,
    states: {
      healthy: 'healthy', up: 'healthy', degraded: 'degraded', failed: 'failed', failing: 'failed', broken: 'failed',
      pending: 'pending', rendering: 'rendering', syncing: 'syncing', deploying: 'syncing', deleted: 'deleted',
    },
    pick: '(x) => ({ id: x.id, package: packageName(x.package_id), semver: x.semver, cluster: clusterName(x.cluster_id), state: x.state })',
    describe: (x) => `${s(x.package)} ${s(x.semver)} on ${s(x.cluster)}: ${s(x.state)} (${s(x.id)})`,
  },
  clusters: {
    key: 'clusters', singular: 'cluster', plural: 'clusters', words: ['cluster'],
    path: () => '/v1/clusters', serverStateFilter: false, byCluster: false,
    states: { active: 'active', pending: 'pending', provisioning: 'provisioning', suspended: 'suspended', deleting: 'deleting' },
    pick: '(x) => ({ id: x.id, name: x.name, state: x.state, provider: x.provider })',
    describe: (x) => `${s(x.name)}: ${s(x.state)}, ${s(x.provider)} (${s(x.id)})`,
  },
  machines: {
    key: 'machines', singular: 'machine', plural: 'machines', words: ['machine', 'server', 'node', 'worker'],
    path: () => '/v1/machines', serverStateFilter: true, byCluster: true,
    states: {
      active: 'ACTIVE', online: 'ACTIVE', unreachable: 'UNREACHABLE', offline: 'UNREACHABLE', down: 'UNREACHABLE', joining: 'JOINING',
      provisioning: 'PROVISIONING', suspended: 'SUSPENDED', deleting: 'DELETING',
    },
    pick: '(x) => ({ id: x.id, name: x.name ?? x.node_name ?? x.id, state: x.state, provider: x.provider, cluster: clusterName(x.cluster_id) })',
    describe: (x) => `${s(x.name)}: ${s(x.state).toLowerCase()}, ${s(x.provider)}, in ${s(x.cluster)} (${s(x.id)})`,
  },
  secrets: {
    key: 'secrets', singular: 'secret', plural: 'secrets', words: ['secret', 'credential', 'password'],
    path: () => '/v1/secrets', serverStateFilter: true, byCluster: false,
    states: { active: 'active', deleted: 'soft_deleted', 'soft-deleted': 'soft_deleted' },
    pick: '(x) => ({ id: x.id, name: x.name, kind: x.kind, state: x.state })',
    describe: (x) => `${s(x.name)} (${s(x.kind)}${x.state === 'active' ? '' : `, ${s(x.state).replace('_', ' ')}`})`,
  },
  snippets: {
    key: 'snippets', singular: 'snippet', plural: 'snippets', words: ['snippet', 'script', 'widget'],
    path: () => '/v1/snippets', serverStateFilter: false, byCluster: false, states: {},
    pick: '(x) => ({ id: x.id, name: x.name, display_type: x.display_type })',
    describe: (x) => `${s(x.name)} (${s(x.display_type)}, ${s(x.id)})`,
  },
  operations: {
    key: 'operations', singular: 'operation', plural: 'operations', words: ['operation', 'op', 'ops', 'job', 'task', 'workflow'],
    path: () => '/v1/operations', serverStateFilter: true, byCluster: false,
    states: {
      running: 'RUNNING', ongoing: 'RUNNING', active: 'RUNNING', pending: 'RUNNING', progress: 'RUNNING',
      failed: 'FAILED', failing: 'FAILED', broken: 'FAILED', errored: 'FAILED', unsuccessful: 'FAILED',
      succeeded: 'SUCCEEDED', successful: 'SUCCEEDED', completed: 'SUCCEEDED', finished: 'SUCCEEDED', done: 'SUCCEEDED',
      cancelled: 'CANCELLED', canceled: 'CANCELLED',
    },
    pick: '(x) => ({ id: x.id, type: x.metadata?.type ?? null, owner_id: x.owner_id, state: x.state, error: x.error?.message ?? null })',
    describe: (x) => `${s(x.id)}: ${s(x.type)} of ${s(x.owner_id)}, ${s(x.state).toLowerCase()}${x.error ? ` (${s(x.error)})` : ''}`,
  },
  packages: {
    key: 'packages', singular: 'package', plural: 'packages', words: ['package', 'chart'],
    path: () => '/v1/packages', serverStateFilter: false, byCluster: false, states: {},
    pick: '(x) => ({ id: x.id, name: x.name, latest_version: x.latest_version })',
    describe: (x) => `${s(x.name)} (${x.latest_version ? `latest ${s(x.latest_version)}` : 'no released version'})`,
  },
  agents: {
    key: 'agents', singular: 'agent', plural: 'agents', words: ['agent', 'bot', 'assistant'],
    path: () => '/v1/agents', serverStateFilter: true, byCluster: false,
    states: { enabled: 'ENABLED', active: 'ENABLED', archived: 'ARCHIVED' },
    pick: '(x) => ({ id: x.id, name: x.name, state: x.state })',
    describe: (x) => `${s(x.name)} (${s(x.state).toLowerCase()}, ${s(x.id)})`,
  },
  members: {
    key: 'members', singular: 'member', plural: 'members', words: ['member', 'user', 'people', 'person', 'teammate', 'collaborator'],
    path: (ws) => `/v1/workspaces/${ws}/members`, serverStateFilter: false, byCluster: false, states: {},
    pick: '(x) => ({ email: x.email, role: x.role })',
    describe: (x) => `${s(x.email)} (${s(x.role)})`,
  },
  api_tokens: {
    key: 'api_tokens', singular: 'API token', plural: 'API tokens', words: ['token', 'api-token', 'api-key'],
    path: () => '/v1/api_tokens', serverStateFilter: false, byCluster: false, states: {},
    pick: '(x) => ({ name: x.name, role: x.role, expires_at: x.expires_at ?? null })',
    describe: (x) => `${s(x.name)} (${s(x.role)}${x.expires_at ? `, expires ${day(x.expires_at)}` : ''})`,
  },
};

/** A word singularized for comparison: installs -> install, policies -> policy, people stays. */
export function singular(word: string): string {
  if (word.endsWith('ies') && word.length > 4) return `${word.slice(0, -3)}y`;
  if (word.endsWith('s') && !word.endsWith('ss') && word.length > 3) return word.slice(0, -1);
  return word;
}

/** The first resource a list of words names ("api token" and "api key" read as one word). */
export function resourceIn(words: string[]): ResourceKey | null {
  for (let i = 0; i < words.length; i++) {
    const w = singular(words[i]!);
    const joined = words[i] === 'api' && words[i + 1] ? `api-${singular(words[i + 1]!)}` : null;
    for (const kind of Object.values(RESOURCES)) {
      if ((joined && kind.words.includes(joined)) || kind.words.includes(w)) return kind.key;
    }
  }
  return null;
}

/** Every kind of resource the words name, each once, in the order named ("installs, clusters and secrets"). */
export function resourcesIn(words: string[]): ResourceKey[] {
  const found: ResourceKey[] = [];
  for (let i = 0; i < words.length; i++) {
    const one = resourceIn(words[i] === 'api' ? words.slice(i, i + 2) : [words[i]!]);
    if (one && !found.includes(one)) found.push(one);
  }
  return found;
}

/** The state a message's words ask for, in the resource's terms ("failed" operations -> FAILED). */
export function stateIn(resource: ResourceKey, words: string[]): string | null {
  const states = RESOURCES[resource].states;
  for (const w of words) if (Object.hasOwn(states, w)) return states[w]!;
  return null;
}

/** "3 installs", "1 failed operation", "no secrets". */
export function counted(resource: ResourceKey, n: number, state: string | null, atLeast = false): string {
  const kind = RESOURCES[resource];
  const adjective = state ? `${state.toLowerCase().replace('_', ' ')} ` : '';
  const noun = n === 1 ? kind.singular : kind.plural;
  return n === 0 ? `no ${adjective}${kind.plural}` : `${atLeast ? 'at least ' : ''}${n} ${adjective}${noun}`;
}
