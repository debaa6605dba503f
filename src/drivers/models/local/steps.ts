// A step of the local model: the text it writes and the tool calls it makes in one model call.
// Helpers to build them, and the questions it asks (a question's opening words identify which
// missing piece an answer fills, since the model keeps no state of its own).
import type { ToolName } from '../tools.js';

export interface PlannedCall {
  name: ToolName;
  arguments: Record<string, unknown>;
}

export interface Step {
  text: string;
  calls: PlannedCall[];
}

export const say = (text: string): Step => ({ text, calls: [] });
export const act = (text: string, ...calls: PlannedCall[]): Step => ({ text, calls });
export const execute = (code: string, summary: string): PlannedCall => ({ name: 'execute', arguments: { code, summary } });
export const propose = (code: string, summary: string): PlannedCall => ({ name: 'propose_change', arguments: { code, summary } });
export const search = (query: string): PlannedCall => ({ name: 'search', arguments: { query } });
export const ask = (question: string, choices?: string[]): PlannedCall =>
  ({ name: 'ask_user', arguments: choices && choices.length ? { question, choices: choices.slice(0, 20) } : { question } });

/** The opening words of each question; an answer is matched to its question by them. */
export const Q = {
  resource: 'Which kind of resource do you mean?',
  secretName: 'What should the secret be called?',
  secretValue: 'What value should the secret',
  snippetName: 'What should the snippet be called?',
  snippetShows: 'What should the snippet show?',
  package: 'Which package should I deploy?',
  cluster: 'Which cluster should I deploy to?',
} as const;

/** "may need approval": the model does not know the agent's tool policy; the runner does. */
export const MAY_NEED_APPROVAL = 'you may be asked to approve the code first.';
