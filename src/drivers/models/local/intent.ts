// What a person's message asks for, read by rules: words compared case-insensitively without
// punctuation, so "How many installs are there?", "how many INSTALLS" and "count installs" mean the
// same. Names and values (a secret's, a package's) are taken from the message as written, with
// their case (extract.ts). Anything outside the repertoire becomes a search of the API.
import { clusterNamed, deployOf, FILLERS, secretOf, snippetOf, wordsOf } from './extract.js';
import { resourceIn, resourcesIn, stateIn, type ResourceKey } from './resources.js';

export type Intent =
  | { kind: 'help'; thanks: boolean }
  | { kind: 'list'; resource: ResourceKey | null; count: boolean; state: string | null; cluster: string | null }
  /** "how many installs, clusters and secrets are there?": one count per kind */
  | { kind: 'counts'; resources: ResourceKey[] }
  | { kind: 'explain'; operationId: string | null; ownerId: string | null; ownerType: string | null }
  | { kind: 'install'; installId: string | null; words: string[] }
  | { kind: 'secret'; name: string | null; value: string | null }
  | { kind: 'snippet'; name: string | null; resource: ResourceKey | null; count: boolean; state: string | null }
  | { kind: 'deploy'; packageName: string | null; clusterName: string | null; version: string | null }
  | { kind: 'search'; query: string };

/**
 * Test triggers (docs/agents.md, "The local model"): bracketed words that change how the model behaves,
 * only when the service runs with SVC_TEST_HOOKS=1 (readTurn); otherwise they are plain text.
 */
export const TRIGGERS = ['slow', 'loop', 'sleep-tool', 'fail'] as const;
export type Trigger = (typeof TRIGGERS)[number];

export function triggersOf(message: string): Set<Trigger> {
  return new Set(TRIGGERS.filter((t) => message.toLowerCase().includes(`[${t}]`)));
}

const id = (prefix: string) => new RegExp(`\\b${prefix}_[0-9a-z]{6,40}\\b`);
const OPERATION_ID = id('op');
const INSTALL_ID = id('inst');
const OWNER_IDS: [RegExp, string][] = [[INSTALL_ID, 'install'], [id('clu'), 'cluster'], [id('mch'), 'machine'], [id('pkg'), 'package']];

const has = (words: string[], ...any: string[]) => any.some((w) => words.includes(w));
const phrase = (text: string, re: RegExp) => re.test(text);

const CREATE = ['create', 'add', 'make', 'new', 'store', 'save', 'put', 'register', 'set', 'define', 'write'];
/** Verbs of changes the local model does not make itself: such a request becomes a search. */
const OTHER_CHANGES = [
  'delete', 'remove', 'archive', 'destroy', 'cancel', 'suspend', 'resume', 'update', 'rename', 'change', 'edit', 'disable', 'enable',
  'rotate', 'revoke', 'restart', 'scale', 'stop', 'start', 'run', 'execute', 'upgrade', 'downgrade', 'invite', 'kick', 'purge',
  'restore', 'undelete', 'pause', 'patch', 'modify', 'rollback', 'retry', 'create', 'add', 'make', 'register', 'set', 'grant', 'provision',
];
const COUNT = /\b(how many|count|number of|total)\b/;
/** Asks for a list even without naming what ("list them"); a bare "what" or "which" does not. */
const LIST = /\b(list|show|display|enumerate)\b/;
const REFERS_BACK = ['them', 'those', 'these', 'they', 'ones'];

/** A question about what exists ("which installs failed to start?"), not a request to change something. */
const ASKS_ABOUT = /^(which|what|how many|list|show|count|are there|is there|do (i|we) have|when|did|were|was)\b/;
const BEFORE_VERB = new Set(['i', 'you', 'we', 'please', 'can', 'could', 'should', 'must', 'lets', 'let', 'help', 'and', 'then', 'just', 'now']);
const BEFORE_TO = new Set(['want', 'need', 'like', 'how', 'way', 'able', 'trying', 'try', 'going', 'wish']);

/** A verb of change in the place of a request: first, after "can you"/"how do I", or after "want to". */
function asksForChange(words: string[]): boolean {
  return words.some((w, i) => OTHER_CHANGES.includes(w) &&
    (i === 0 || BEFORE_VERB.has(words[i - 1]!) || (words[i - 1] === 'to' && i >= 2 && BEFORE_TO.has(words[i - 2]!))));
}

/** `triggers`: the test triggers acting on this message, whose bracketed words are then not part of the request. */
export function parseIntent(message: string, earlier: string[] = [], triggers: ReadonlySet<Trigger> = new Set()): Intent {
  const text = message.replace(/\[(slow|loop|sleep-tool|fail)\]/gi, (word, t: string) => (triggers.has(t.toLowerCase() as Trigger) ? ' ' : word)).trim();
  const lower = text.toLowerCase();
  const words = wordsOf(text);
  const polite = lower.replace(/^(please|can you|could you|would you|kindly|now|ok|okay|and|then|so|\s|,)+/g, '');
  const question = ASKS_ABOUT.test(polite);

  const operationId = OPERATION_ID.exec(lower)?.[0] ?? null;
  const why = phrase(lower, /\b(why|explain|reason|cause|what went wrong|what happened|what broke)\b/);
  const failure = words.some((w) => /^(fail|failed|fails|failing|failure|error|errors|errored|wrong|broke|broken|crash|crashed|degraded|unhealthy)$/.test(w));
  if (why && (failure || operationId)) return explainOf(lower, words, operationId);

  const verbAt = question ? -1 : words.findIndex((w) => CREATE.includes(w));
  if (verbAt >= 0) {
    const target = words.slice(verbAt + 1).find((w) => w === 'secret' || w === 'snippet');
    if (target === 'secret') return { kind: 'secret', ...secretOf(text) };
    if (target === 'snippet') return { kind: 'snippet', ...snippetOf(text) };
  }
  if (!question && (has(words, 'deploy', 'redeploy') || /^install\b/.test(polite) || phrase(lower, /\broll out\b/))) return { kind: 'deploy', ...deployOf(text) };
  if (!question && asksForChange(words)) return { kind: 'search', query: searchWords(words) };
  if (operationId) return explainOf(lower, words, operationId);

  const resource = resourceIn(words);
  const installId = INSTALL_ID.exec(lower)?.[0] ?? null;
  // only installs have URLs: "where is hello reachable?" asks about one
  const urls = has(words, 'url', 'urls', 'link', 'links', 'address', 'addresses', 'reachable', 'endpoint', 'endpoints', 'hostname', 'hostnames');
  if (installId || (urls && (resource === 'installs' || resource === null)) || (resource === 'installs' && has(words, 'where'))) return { kind: 'install', installId, words };

  const count = COUNT.test(lower);
  // "installs, clusters and secrets" (a list of kinds), not "installs on the cluster staging"
  const several = resource && /,|\band\b/.test(lower) && !clusterNamed(text) ? resourcesIn(words) : [];
  if (several.length > 1 && (count || LIST.test(lower))) return { kind: 'counts', resources: several };
  if (resource) return { kind: 'list', resource, count, state: stateIn(resource, words), cluster: resource === 'installs' || resource === 'machines' ? clusterNamed(text) : null };

  if (isHelp(lower, words)) return { kind: 'help', thanks: has(words, 'thanks', 'thank', 'thx') };
  const refersBack = has(words, ...REFERS_BACK);
  if (count || LIST.test(lower) || refersBack) {
    // "list them": the resource of the person's previous message
    const back = refersBack ? earlier.map((m) => resourceIn(wordsOf(m))).filter((r) => r !== null).pop() ?? null : null;
    return { kind: 'list', resource: back, count, state: back ? stateIn(back, words) : null, cluster: null };
  }
  return { kind: 'search', query: searchWords(words) };
}

function explainOf(lower: string, words: string[], operationId: string | null): Intent {
  const owner = OWNER_IDS.find(([re]) => re.test(lower));
  const ownerType = owner?.[1] ?? (has(words, 'deploy', 'deployment', 'install', 'installation', 'deploys', 'installs') ? 'install'
    : has(words, 'cluster') ? 'cluster' : has(words, 'machine', 'server') ? 'machine' : null);
  return { kind: 'explain', operationId, ownerId: owner ? owner[0].exec(lower)![0] : null, ownerType };
}

function isHelp(lower: string, words: string[]): boolean {
  if (words.length === 0) return true;
  if (phrase(lower, /\b(what can you do|what do you (do|know|understand)|who are you|how do (i|you) use you|what are you)\b/)) return true;
  return words.length <= 4 && has(words, 'hi', 'hello', 'hey', 'help', 'yo', 'hiya', 'greetings', 'morning', 'thanks', 'thank', 'thx', 'commands');
}

/** The request's meaningful words, for a search of the API. */
function searchWords(words: string[]): string {
  const kept = words.filter((w) => w.length > 1 && (!FILLERS.has(w) || w === 'cluster' || w === 'package' || w === 'secret' || w === 'snippet'));
  return (kept.length ? kept : words).join(' ').slice(0, 500) || 'help';
}
