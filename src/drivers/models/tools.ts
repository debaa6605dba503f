// The four tools every agent turn offers its model (API.md 8.6), shared by the turn runner (which
// runs them) and the model providers (the local one plans with them). Each result is given to the
// model as the JSON text of the shapes below.
//
// - search {query}: operations of the OpenAPI document that match, best first:
//   `{operations: [{method, path, operation_id, summary}]}` (at most 10).
// - execute {code, summary?}: the body of an async JavaScript function run in the sandbox, with
//   `platform.request({method, path, query?, body?})` acting as the turn's creator; reads only (a
//   write is answered 403 TOOL_READ_ONLY inside the run). Result `{ok: true, output, logs}` or
//   `{ok: false, error: {code, message}, logs}`.
// - propose_change {code, summary}: code that writes. With the agent's `writes: APPROVAL_REQUIRED`
//   the turn waits for a person to approve this exact code, then it runs; result as execute's, or
//   `{ok: false, rejected: true, reason}` (a person rejected it) or `{ok: false, denied: true,
//   message}` (the agent's tool policy denies writes).
// - ask_user {question, choices?}: the turn waits for the person's answer: `{answer}`.
// A tool call that was running when its worker died is not run again: its result is
// `{ok: false, outcome_unknown: true, message}`; read before you retry.
import type { ToolSpec } from './driver.js';

export const TOOL_NAMES = ['search', 'execute', 'propose_change', 'ask_user'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

const code = { type: 'string', minLength: 1, maxLength: 50_000, description: 'the body of an async JavaScript function; `return` the result' };

export const AGENT_TOOLS: ToolSpec[] = [
  {
    name: 'search',
    description: 'Find the API operations that do something: searches the OpenAPI document by words. Returns method, path, operation_id, summary.',
    parameters: { type: 'object', properties: { query: { type: 'string', minLength: 1, maxLength: 500 } }, required: ['query'], additionalProperties: false },
  },
  {
    name: 'execute',
    description:
      'Run read-only JavaScript in the sandbox. `await platform.request({method, path, query?, body?})` calls the API as the user ' +
      '(GET only here) and returns {status, headers, body}. Return what you need; console.log lines come back too.',
    parameters: { type: 'object', properties: { code, summary: { type: 'string', maxLength: 500 } }, required: ['code'], additionalProperties: false },
  },
  {
    name: 'propose_change',
    description:
      'Run JavaScript that changes something (POST, PATCH, DELETE through platform.request). The user may have to approve the exact ' +
      'code first; say in `summary` what it does.',
    parameters: {
      type: 'object', properties: { code, summary: { type: 'string', minLength: 1, maxLength: 500 } }, required: ['code', 'summary'], additionalProperties: false,
    },
  },
  {
    name: 'ask_user',
    description: 'Ask the user a question when the request is ambiguous or information is missing; the turn waits for the answer.',
    parameters: {
      type: 'object',
      properties: { question: { type: 'string', minLength: 1, maxLength: 2000 }, choices: { type: 'array', items: { type: 'string', maxLength: 200 }, maxItems: 20 } },
      required: ['question'], additionalProperties: false,
    },
  },
];
