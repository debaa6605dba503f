// The token count of a conversation when a provider reports none (remote.ts) and before a call is
// made (the agents' budget checks): one estimate, so both sides count alike.
import type { ModelMessage } from './driver.js';

/** Tokens of a conversation, estimated at 4 characters each (the figure providers quote for English). */
export function estimateTokens(messages: ModelMessage[]): number {
  let chars = 0;
  for (const m of messages) {
    chars += m.content.length;
    if (m.role === 'assistant' && m.tool_calls) for (const c of m.tool_calls) chars += JSON.stringify(c.arguments).length + c.name.length;
  }
  return Math.ceil(chars / 4);
}
