// The local model's changes: create a secret, create a snippet, deploy a package. Each gathers
// what it needs (from the message, else by asking the person), proposes the code that writes
// (propose_change: the person may have to approve it), then tells how it went.
import { answerTo, asked, lastCall, type TurnView } from './conversation.js';
import { catalogCode, createInstallCode, createSecretCode, createSnippetCode, listCode } from './code.js';
import { behaviourOf, nameFromAnswer, wordsOf } from './extract.js';
import type { Intent } from './intent.js';
import { outputOf, trouble } from './replies.js';
import { RESOURCES } from './resources.js';
import { act, ask, execute, MAY_NEED_APPROVAL, propose, Q, say, type Step } from './steps.js';

const str = (v: unknown): string => (v === null || v === undefined ? '' : String(v));

export function secretPlan(intent: Extract<Intent, { kind: 'secret' }>, view: TurnView): Step {
  const name = intent.name ?? nameFromAnswer(answerTo(view, Q.secretName));
  if (!name) return asked(view, Q.secretName) ? say('I still do not know what to call the secret, so I created nothing.') : act('', ask(Q.secretName));
  // a value is taken exactly as the person typed it, only trimmed
  const value = intent.value ?? answerTo(view, Q.secretValue);
  if (!value) {
    return asked(view, Q.secretValue) ? say('I did not get a value for the secret, so I created nothing.')
      : act('', ask(`${Q.secretValue} ${name} hold? It is stored encrypted and never shown again.`));
  }
  const change = lastCall(view, 'propose_change');
  if (!change) return act(`I'll create the secret ${name}; ${MAY_NEED_APPROVAL}`, propose(createSecretCode(name, value), `Create the secret ${name}`));
  const problem = trouble(change.result, `create the secret ${name}`, 'the secrets (svc secrets list)');
  if (problem) return say(problem);
  const out = outputOf(change.result);
  return say(`Created secret ${str(out.name) || name} (${str(out.id)}).`);
}

const SNIPPET_CHOICES = ['list installs', 'count installs', 'list clusters', 'list failed operations', 'count running operations', 'list secrets'];

export function snippetPlan(intent: Extract<Intent, { kind: 'snippet' }>, view: TurnView): Step {
  const name = intent.name ?? nameFromAnswer(answerTo(view, Q.snippetName));
  if (!name) return asked(view, Q.snippetName) ? say('I still do not know what to call the snippet, so I created nothing.') : act('', ask(Q.snippetName));
  let { resource, count, state } = intent;
  if (!resource) {
    const answer = answerTo(view, Q.snippetShows);
    if (answer) ({ resource, count, state } = behaviourOf(answer));
    else if (!asked(view, Q.snippetShows)) return act('', ask(`${Q.snippetShows} For example:`, SNIPPET_CHOICES));
    if (!resource) return say('I can write snippets that list or count installs, clusters, machines, secrets, snippets, operations, packages, agents, members or API tokens; I did not understand which, so I created nothing.');
  }
  if (resource === 'members' && !view.workspaceId) return say('I do not know which workspace this conversation is in, so I cannot write a snippet that reads its members.');
  const kind = RESOURCES[resource];
  const displayType = count ? 'stat' : 'table';
  const code = listCode(resource, { state, cluster: null, workspaceId: view.workspaceId ?? '', mode: displayType });
  const description = `${count ? 'Counts' : 'Lists'} the ${state ? `${state.toLowerCase()} ` : ''}${kind.plural} (written by the local agent model).`;
  const change = lastCall(view, 'propose_change');
  if (!change) {
    return act(`I'll save a snippet named ${name} that ${count ? 'counts' : 'lists'} the ${kind.plural}; ${MAY_NEED_APPROVAL}`,
      propose(createSnippetCode(name, code, displayType, description), `Create the snippet ${name}`));
  }
  const problem = trouble(change.result, `create the snippet ${name}`, 'the snippets (svc snippets list)');
  if (problem) return say(problem);
  const out = outputOf(change.result);
  return say(`Created snippet ${str(out.name) || name} (${str(out.id)}).${out.html_url ? ` Open it at ${str(out.html_url)}.` : ''}`);
}

interface Named {
  id: string;
  name: string;
  [key: string]: unknown;
}

/** The item a name means: exactly (any case), else the one whose name is a word of the text, longest first. */
function find(items: Named[], name: string | null, text: string): Named | null {
  if (name) {
    const exact = items.find((i) => i.name.toLowerCase() === name.toLowerCase());
    if (exact) return exact;
  }
  const words = new Set(wordsOf(text));
  const lower = text.toLowerCase();
  const inText = items.filter((i) => words.has(i.name.toLowerCase()) || (i.name.includes(' ') && lower.includes(i.name.toLowerCase())));
  return inText.sort((a, b) => b.name.length - a.name.length)[0] ?? null;
}

const names = (items: Named[]): string => items.map((i) => i.name).join(', ');

export function deployPlan(intent: Extract<Intent, { kind: 'deploy' }>, view: TurnView): Step {
  const catalog = lastCall(view, 'execute');
  if (!catalog) {
    return act('Let me find the package and the cluster.', execute(catalogCode(intent.packageName, intent.clusterName), 'Read the packages and clusters to deploy with'));
  }
  const problem = trouble(catalog.result, 'read the packages and clusters');
  if (problem) return say(problem);
  const out = outputOf(catalog.result);
  const packages = (Array.isArray(out.packages) ? out.packages : []) as Named[];
  const clusters = (Array.isArray(out.clusters) ? out.clusters : []) as Named[];

  // the package: named in the message, else the only one, else the person's choice
  const packageAnswer = answerTo(view, Q.package);
  const pkg = find(packages, intent.packageName, view.message) ?? (packageAnswer ? find(packages, packageAnswer, packageAnswer)
    : packages.length === 1 && !intent.packageName ? packages[0]! : null);
  if (!pkg) {
    if (packages.length === 0) return say('There are no packages in this workspace, so there is nothing to deploy. Create a package and publish a version first.');
    if (asked(view, Q.package)) return say(`I could not find a package named ${packageAnswer ?? 'that'}. The packages are: ${names(packages)}.`);
    const missing = intent.packageName ? ` There is no package named ${intent.packageName}.` : '';
    return act('', ask(`${Q.package}${missing}`, packages.map((p) => p.name)));
  }
  if (!intent.version && !pkg.latest_version) return say(`The package ${pkg.name} has no released version yet, so there is nothing to deploy. Publish a version first.`);

  // the cluster: named in the message, else the only active one, else the person's choice
  const active = clusters.filter((c) => c.state === 'active');
  const clusterAnswer = answerTo(view, Q.cluster);
  const inMessage = find(clusters.filter((c) => c.name.toLowerCase() !== pkg.name.toLowerCase()), null, view.message);
  const cluster = (intent.clusterName ? find(clusters, intent.clusterName, '') : inMessage)
    ?? (clusterAnswer ? find(clusters, clusterAnswer, clusterAnswer) : !intent.clusterName && active.length === 1 ? active[0]! : null);
  if (!cluster) {
    if (active.length === 0) {
      return say(clusters.length ? `None of the clusters is active (${clusters.map((c) => `${c.name} is ${str(c.state)}`).join(', ')}), so I cannot deploy now.`
        : 'There is no cluster to deploy to. Create one first (svc clusters create).');
    }
    if (asked(view, Q.cluster)) return say(`I could not find a cluster named ${clusterAnswer ?? 'that'}. The active clusters are: ${names(active)}.`);
    const missing = intent.clusterName ? ` There is no cluster named ${intent.clusterName}.` : '';
    return act('', ask(`${Q.cluster}${missing}`, active.map((c) => c.name)));
  }
  if (cluster.state !== 'active') return say(`The cluster ${cluster.name} is ${str(cluster.state)}, not active, so I cannot deploy to it now.`);

  const version = intent.version ?? `${str(pkg.latest_version)} (latest)`;
  const change = lastCall(view, 'propose_change');
  if (!change) {
    const code = createInstallCode({ packageId: pkg.id, packageName: pkg.name, clusterId: cluster.id, clusterName: cluster.name, version: intent.version });
    return act(`I'll deploy ${pkg.name} ${version} to the cluster ${cluster.name}; ${MAY_NEED_APPROVAL}`, propose(code, `Deploy ${pkg.name} ${version} to the cluster ${cluster.name}`));
  }
  const failed = trouble(change.result, `deploy ${pkg.name} to ${cluster.name}`, 'the installs (svc installs list)');
  if (failed) return say(failed);
  const op = outputOf(change.result);
  return say(`Deploying ${pkg.name} ${version} to ${cluster.name}: install ${str(op.install_id)} is being created by operation ${str(op.operation_id)}. ` +
    `Follow it with \`svc operations wait ${str(op.operation_id)}\`, or ask me why it failed if it does.`);
}
