// The local model's next step for a conversation: the request's intent (intent.ts), then how far
// this turn got (its earlier tool calls and their results), decide what to do now. Reads are one
// `execute` and an answer; writes are in writes.ts; anything else is a `search` and an answer.
import { answerTo, asked, lastCall, type TurnView } from './conversation.js';
import { LOOP_CODE, SLEEP_CODE, installCode, listCode, operationCode } from './code.js';
import { behaviourOf } from './extract.js';
import { parseIntent, type Intent } from './intent.js';
import { failureReply, HELP, installReply, listReply, searchReply } from './replies.js';
import { RESOURCES, RESOURCE_KEYS } from './resources.js';
import { act, ask, execute, Q, say, search, type Step } from './steps.js';
import { deployPlan, secretPlan, snippetPlan } from './writes.js';

const RESOURCE_CHOICES = RESOURCE_KEYS.map((k) => RESOURCES[k].plural);

export function plan(view: TurnView): Step {
  const { triggers } = view;
  if (triggers.has('loop')) return act('Let me look once more.', execute(LOOP_CODE, 'one more look ([loop] test trigger)'));
  if (triggers.has('sleep-tool')) return sleepPlan(view);
  const intent = parseIntent(view.message, view.earlier, triggers);
  switch (intent.kind) {
    case 'help':
      return say(intent.thanks ? 'You are welcome. Ask me anything else about this workspace, or say "help".' : HELP);
    case 'list':
      return listPlan(intent, view);
    case 'counts':
      return countsPlan(intent, view);
    case 'explain':
      return explainPlan(intent, view);
    case 'install':
      return installPlan(intent, view);
    case 'secret':
      return secretPlan(intent, view);
    case 'snippet':
      return snippetPlan(intent, view);
    case 'deploy':
      return deployPlan(intent, view);
    case 'search':
      return searchPlan(intent, view);
  }
}

function listPlan(intent: Extract<Intent, { kind: 'list' }>, view: TurnView): Step {
  let { resource, state, count } = intent;
  if (!resource) {
    const answer = answerTo(view, Q.resource);
    if (answer) {
      const meant = behaviourOf(answer);
      ({ resource, state } = meant);
      count ||= meant.count;
    }
    else if (!asked(view, Q.resource)) return act('', ask(Q.resource, RESOURCE_CHOICES));
    if (!resource) return say(`I did not understand which kind of resource you mean. I can count and list ${RESOURCE_CHOICES.join(', ')}.`);
  }
  const kind = RESOURCES[resource];
  if (resource === 'members' && !view.workspaceId) return say('I do not know which workspace this conversation is in, so I cannot read its members.');
  const read = lastCall(view, 'execute');
  if (!read) {
    const code = listCode(resource, { state, cluster: intent.cluster, workspaceId: view.workspaceId ?? '', mode: count ? 'count' : 'answer' });
    const what = `the ${state ? `${state.toLowerCase().replace('_', ' ')} ` : ''}${kind.plural}`;
    return act(`Let me ${count ? 'count' : 'look up'} ${what}.`, execute(code, `${count ? 'Count' : 'List'} ${what}`));
  }
  return say(listReply(resource, count, state, intent.cluster, read.result));
}

/** Several kinds counted at once: one read per kind in one step, then one sentence each. */
function countsPlan(intent: Extract<Intent, { kind: 'counts' }>, view: TurnView): Step {
  const reads = view.calls.filter((c) => c.name === 'execute');
  if (reads.length < intent.resources.length) {
    const names = intent.resources.map((r) => RESOURCES[r].plural);
    const calls = intent.resources.map((r) => execute(listCode(r, { state: null, cluster: null, workspaceId: view.workspaceId ?? '', mode: 'count' }), `Count the ${RESOURCES[r].plural}`));
    return act(`Let me count the ${names.slice(0, -1).join(', ')} and ${names.at(-1)}.`, ...calls);
  }
  return say(intent.resources.map((r, i) => listReply(r, true, null, null, reads[i]!.result)).join(' '));
}

function explainPlan(intent: Extract<Intent, { kind: 'explain' }>, view: TurnView): Step {
  const read = lastCall(view, 'execute');
  if (!read) {
    const what = intent.operationId ? `the operation ${intent.operationId}` : 'the newest failed operation';
    return act(`Let me read ${what}.`, execute(operationCode(intent.operationId, intent), `Read ${what} with its steps`));
  }
  return say(failureReply(intent, read.result));
}

function installPlan(intent: Extract<Intent, { kind: 'install' }>, view: TurnView): Step {
  const read = lastCall(view, 'execute');
  if (!read) {
    const what = intent.installId ? `the install ${intent.installId}` : 'the installs';
    return act(`Let me read ${what}.`, execute(installCode(intent.installId, intent.words), `Read ${what} with URLs`));
  }
  return say(installReply(intent.installId, read.result));
}

function searchPlan(intent: Extract<Intent, { kind: 'search' }>, view: TurnView): Step {
  const found = lastCall(view, 'search');
  if (!found) return act('That is not something I know how to do; let me search the API for it.', search(intent.query));
  return say(searchReply(found.result));
}

/** [sleep-tool]: a sandbox run that lasts until it is cancelled or hits its time limit. */
function sleepPlan(view: TurnView): Step {
  const run = lastCall(view, 'execute');
  if (!run) return act('Running a long task.', execute(SLEEP_CODE, 'a long task ([sleep-tool] test trigger)'));
  const error = run.result?.error as { code?: string } | undefined;
  return say(run.result?.ok === true ? 'The long task finished.' : `The long task ended: ${error?.code ?? 'without a result'}.`);
}

