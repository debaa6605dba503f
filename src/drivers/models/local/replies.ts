// The local model's answers, written from tool results in plain sentences. A result that is not
// a success is told as it is: a refusal of the API (403: the person lacks the right), a run that
// failed, an outcome nobody knows (the worker died mid-call), a rejected or denied change.
import type { ToolResult } from './conversation.js';
import { counted, RESOURCES, type Item, type ResourceKey } from './resources.js';

/** Items an answer lists before it says how many more there are. */
const LISTED = 20;

type Output = Record<string, unknown>;
const str = (v: unknown): string => (v === null || v === undefined ? '' : String(v));
const obj = (v: unknown): Output => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Output) : {});

export const HELP =
  'I am the built-in local model: I work offline and understand a fixed set of requests about this workspace. Try:\n' +
  '- "How many installs are there?" or "list my clusters" (also machines, secrets, snippets, operations, packages, agents, members, API tokens)\n' +
  '- "Which operations failed?" or "why did the last deploy fail?"\n' +
  '- "Show the URLs of install inst_..."\n' +
  '- "Create a secret named db-password with value ..." (you may be asked to approve it)\n' +
  '- "Create a snippet named installs-table that lists installs"\n' +
  '- "Deploy hello to dev"\n' +
  'For anything else I search the API and tell you which operations could do it.';

/**
 * What went wrong with a tool call, in a sentence, or null when the call worked: `doing` is the
 * action in the infinitive ("list the installs"), `check` where to look before retrying a write.
 */
export function trouble(result: ToolResult | null, doing: string, check?: string): string | null {
  if (!result) return `I could not ${doing}: the tool gave no result.`;
  if (result.denied) return `This agent is not allowed to make changes (its tool policy denies writes), so I did not ${doing}. You can do it yourself in the web app or with the svc CLI.`;
  if (result.rejected) {
    const reason = str(result.reason);
    return `Understood: I did not ${doing}${reason && reason !== 'no reason given' ? ` (you said: ${reason})` : ''}. Nothing was changed.`;
  }
  if (result.outcome_unknown) {
    return check ? `I could not tell whether the attempt to ${doing} happened: it was cut off before it reported. Check ${check} before retrying.`
      : `I could not tell whether the attempt to ${doing} finished: it was cut off before it reported. Please ask again.`;
  }
  if (result.ok !== true) {
    const error = obj(result.error);
    if (error.code === 'NO_RIGHTS') return `I could not ${doing}: you no longer have rights in this workspace.`;
    return `I could not ${doing}: the code failed (${str(error.code) || 'ERROR'}: ${str(error.message) || 'no message'}).`;
  }
  const failed = obj(obj(result.output).failed);
  if (Object.keys(failed).length === 0) return null;
  const message = str(failed.message);
  if (failed.status === 403) return `You do not have permission to ${doing}${message ? ` (${message})` : ''}.`;
  if (failed.status === 404) return `I could not ${doing}: not found${message ? ` (${message})` : ''}.`;
  return `I could not ${doing}: the API answered ${str(failed.status)}${failed.code ? ` ${str(failed.code)}` : ''}${message ? `: ${message}` : ''}.`;
}

export const outputOf = (result: ToolResult | null): Output => obj(result?.output);

export function listReply(resource: ResourceKey, count: boolean, state: string | null, cluster: string | null, result: ToolResult | null): string {
  const kind = RESOURCES[resource];
  const problem = trouble(result, `list the ${kind.plural}`);
  if (problem) return problem;
  const out = outputOf(result);
  if (typeof out.no_cluster === 'string') {
    const names = Array.isArray(out.clusters) ? out.clusters.map(str) : [];
    return `There is no cluster named ${out.no_cluster}.${names.length ? ` The clusters are: ${names.join(', ')}.` : ''}`;
  }
  const n = typeof out.count === 'number' ? out.count : 0;
  const more = out.more === true;
  const where = cluster ? ` on the cluster ${cluster}` : '';
  const total = counted(resource, n, state, more);
  const head = `There ${n === 1 && !more ? 'is' : 'are'} ${total}${where}`;
  const caveat = more ? ` (I read the first ${n}; there are more)` : '';
  if (count || n === 0) return `${head}${caveat}.`;
  const shown = (Array.isArray(out.shown) ? out.shown : []).slice(0, LISTED) as Item[];
  const lines = shown.map((item) => `- ${kind.describe(item)}`);
  if (n > shown.length) lines.push(`- …and ${n - shown.length} more`);
  return `${head}${caveat}:\n${lines.join('\n')}`;
}

export function failureReply(asked: { operationId: string | null; ownerType: string | null; ownerId: string | null }, result: ToolResult | null): string {
  const problem = trouble(result, asked.operationId ? `read the operation ${asked.operationId}` : 'read the failed operations');
  if (problem) return problem;
  const op = outputOf(result);
  if (op.found === false) {
    const article = (noun: string) => (/^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`);
    const of = asked.ownerId ? ` of ${asked.ownerId}` : asked.ownerType ? ` of ${article(asked.ownerType)}` : '';
    return `I found no failed operation${of}, so there is nothing to explain.`;
  }
  const what = `Operation ${str(op.id)} (${str(op.type) || 'an operation'} of ${str(op.owner_id)})`;
  const step = obj(op.failed_step);
  const last = obj(op.last_error);
  if (op.state === 'RUNNING') {
    return Object.keys(last).length
      ? `${what} has not failed: it is still running. Its latest error, in the step ${str(last.step_name)}, was: ${str(last.message)}. The step is retried.`
      : `${what} has not failed: it is still running, without errors so far.`;
  }
  if (op.state === 'SUCCEEDED') return `${what} did not fail: it succeeded.`;
  const parts = [`${what} ${op.state === 'CANCELLED' ? 'was cancelled' : 'failed'}`];
  if (step.name) parts[0] += ` in the step ${str(step.name)} after ${str(step.attempts)} attempt${step.attempts === 1 ? '' : 's'}`;
  parts[0] += op.error ? `: ${str(op.error)}.` : '.';
  if (last.message && last.message !== op.error) parts.push(`The last error, in the step ${str(last.step_name)}, was: ${str(last.message)}.`);
  else if (step.error_message && step.error_message !== op.error) parts.push(`The step reported: ${str(step.error_message)}.`);
  if (op.html_url) parts.push(`Details: ${str(op.html_url)}`);
  return parts.join(' ');
}

export function installReply(installId: string | null, result: ToolResult | null): string {
  const problem = trouble(result, installId ? `read the install ${installId}` : 'read the installs');
  if (problem) return problem;
  const out = outputOf(result);
  const installs = (Array.isArray(out.installs) ? out.installs : []).map(obj);
  if (installs.length === 0) return 'There are no installs yet.';
  const blocks = installs.map((x) => {
    const urls = (Array.isArray(x.urls) ? x.urls : []).map(obj);
    const head = `Install ${str(x.id)} (${str(x.package)} ${str(x.semver)} on ${str(x.cluster)}) ${x.state === 'failed' ? 'has failed' : `is ${str(x.state)}`}${x.reconciling ? ', and an operation is working on it' : ''}.`;
    if (urls.length === 0) return `${head} It has no URLs yet.`;
    return `${head} ${urls.length === 1 ? 'Its URL' : 'Its URLs'}:\n${urls.map((u) => `- ${str(u.route_key)}: ${str(u.url)}${u.error ? ` (not answering: ${str(u.error)})` : ''}`).join('\n')}`;
  });
  const n = typeof out.count === 'number' ? out.count : installs.length;
  if (n > installs.length) blocks.push(`…and ${n - installs.length} more installs.`);
  return blocks.join('\n');
}

export function searchReply(result: ToolResult | null): string {
  const operations = (Array.isArray(result?.operations) ? result.operations : []).map(obj).slice(0, 5);
  if (!result || result.ok === false) return `I cannot do that myself yet, and searching the API failed (${str(obj(result?.error).message) || 'no result'}).`;
  if (operations.length === 0) return 'I cannot do that myself yet, and I found no API operation that matches. Say "help" to see what I understand.';
  const lines = operations.map((op) => `- ${str(op.method)} ${str(op.path)} (${str(op.operation_id)}): ${str(op.summary)}`);
  return `I cannot do that myself yet. These API operations look related:\n${lines.join('\n')}\nYou can call them with the svc CLI or the web app.`;
}
