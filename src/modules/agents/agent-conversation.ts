// The conversation a turn's model call sees, rebuilt from the database at every call (so a turn
// resumes in any process): the agent's instructions, the session's earlier turns (message and
// answer), this turn's message, then each recorded model step with the results of its tool calls.
import type { ModelMessage, ToolCall } from '../../drivers/models/driver.js';
import type { AgentRow, StepRow, TurnRow } from './agents.repo.js';

/** A model step's recorded answer. */
export interface ModelAnswer {
  text: string;
  tool_calls: ToolCall[];
}

const GUIDE =
  'You act in a workspace of a platform API through tools. Use `search` to find API operations, `execute` to run read-only ' +
  'JavaScript that calls `await platform.request({method, path, query?, body?})` (it returns {status, headers, body}; lists ' +
  'answer {data, has_more, next_cursor}), `propose_change` for code that writes (a person may have to approve it first), and ' +
  '`ask_user` when the request is ambiguous. You act with the rights of the person you talk to, never more. Answer briefly.';

export function systemPrompt(agent: Pick<AgentRow, 'instructions' | 'workspace_id'>): string {
  return `${agent.instructions}\n\n${GUIDE}\nThe workspace is ${agent.workspace_id}.`;
}

export function conversationOf(
  agent: Pick<AgentRow, 'instructions' | 'workspace_id'>,
  history: Pick<TurnRow, 'input_content' | 'output_text' | 'state'>[],
  turn: Pick<TurnRow, 'input_content'>,
  steps: StepRow[],
): ModelMessage[] {
  const messages: ModelMessage[] = [{ role: 'system', content: systemPrompt(agent) }];
  for (const past of history) {
    messages.push({ role: 'user', content: past.input_content });
    messages.push({ role: 'assistant', content: past.output_text ?? `(that turn ended ${past.state} without an answer)` });
  }
  messages.push({ role: 'user', content: turn.input_content });
  const byCall = new Map(steps.filter((s) => s.kind === 'tool').map((s) => [s.call_id, s]));
  for (const step of steps) {
    if (step.kind !== 'model' || step.state !== 'DONE') continue;
    const answer = JSON.parse(step.request ?? '{}') as ModelAnswer;
    messages.push({ role: 'assistant', content: answer.text, ...(answer.tool_calls.length ? { tool_calls: answer.tool_calls } : {}) });
    for (const call of answer.tool_calls) {
      const done = byCall.get(call.id);
      if (done && (done.state === 'DONE' || done.state === 'UNKNOWN')) {
        messages.push({ role: 'tool', tool_call_id: call.id, name: call.name, content: done.result ?? '{}' });
      }
    }
  }
  return messages;
}
