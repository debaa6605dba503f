// The work of a turn: a durable job (kind `agent_turn`) on the job queue, claimed with a lease like
// an operation's, so a dead worker's turn is taken over by another process. The loop records each
// step before the next: a model call (a step row before the call, its answer when it returns), then
// each tool call it asked for (a step row RUNNING before the tool runs, DONE with its result after).
// Resuming reads the steps back: a model call cut by a crash is made again (it changed nothing), a
// tool call found RUNNING is never run again, and the model is told its outcome is unknown.
//
// Every write is fenced: it holds the job's lease and finds the turn still RUNNING under the
// session's row lock, so a worker that lost its lease, or whose turn a person cancelled, writes
// nothing. A cancel is also pushed to the worker (svc_agent_turns), which aborts the model call and
// the sandbox run at once.
import type { Logger } from 'pino';
import type { Db, Dialect, Executor } from '../../db/database.js';
import type { AgentsConfig } from '../../config-agents.js';
import { ModelProviderError, type ModelProvider, type ModelProviderName, type ToolCall } from '../../drivers/models/driver.js';
import { AGENT_TOOLS } from '../../drivers/models/tools.js';
import { RESYNC, type Notifier } from '../../jobs/notifier.js';
import { completeJob, holdsJob, type ClaimedJob } from '../../jobs/queue.js';
import type { Role } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { Keyring } from '../../platform/keyring.js';
import { agentTurnWaiting } from '../notifications/sources.js';
import { writerRights } from '../snippets/snippet-writer.js';
import type { EventInput, EventLog } from './agent-events.js';
import { conversationOf, type ModelAnswer } from './agent-conversation.js';
import { boundedJson, type AgentTools } from './agent-tools.js';
import { costMicrocents, priceOf, turnUsage } from './agent-usage.js';
import * as repo from './agents.repo.js';
import { isTerminalTurn, type FailureCode } from './agents.schemas.js';
import { modelPolicyOf, writePolicyOf, type StoredModelPolicy } from './agents.service.js';
import { resolveKey } from './provider-keys.js';
import { BudgetRefused, callEstimate, type SpendReservations } from './spend-reservations.js';
import type { TurnMoves } from './turn-moves.js';

/** The turn is no longer this worker's to write (cancelled, ended, or the lease moved). */
class TurnStopped extends Error {}
/** The turn must end FAILED with this code. */
class TurnFailure extends Error {
  constructor(readonly code: FailureCode, message: string) {
    super(message);
  }
}

/** A text delta is written as an event at most this often; what comes between is gathered into one. */
const DELTA_FLUSH_MS = 40;
/** claims of one turn's job before the turn fails INTERNAL (a bug that kills every worker that runs it) */
const MAX_CLAIMS = 6;

export interface TurnRunnerDeps {
  db: Db;
  dialect: Dialect;
  notifier: Notifier;
  events: EventLog;
  moves: TurnMoves;
  tools: AgentTools;
  providers: Map<ModelProviderName, ModelProvider>;
  config: AgentsConfig;
  keyring: Keyring;
  spend: SpendReservations;
  backoffScale: number;
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(timer);
      reject(signal.reason);
    }
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export function createTurnRunner(deps: TurnRunnerDeps) {
  const { db, dialect, events, moves, tools, config } = deps;

  return async function runTurnJob(job: ClaimedJob, jobSignal: AbortSignal, logger: Logger): Promise<void> {
    const turnId = job.agentTurnId!;
    const first = await repo.findTurn(db, turnId);
    if (!first || isTerminalTurn(first.state) || first.state.startsWith('WAITING')) {
      await completeJob(db, job);
      return;
    }
    if (first.state === 'QUEUED' && (await repo.earlierOpenTurn(db, first.session_id, first.id))) {
      // The session's earlier turn runs first; its end schedules this one.
      await completeJob(db, job);
      return;
    }
    const abort = new AbortController();
    const stop = (reason: Error) => abort.abort(reason);
    const onJobAbort = () => stop(new TurnStopped('the worker stopped or lost the lease'));
    jobSignal.addEventListener('abort', onJobAbort, { once: true });
    const unsubscribe = deps.notifier.subscribe('svc_agent_turns', (payload) => {
      if (payload !== turnId && payload !== RESYNC) return;
      repo.findTurn(db, turnId).then((t) => {
        if (!t || isTerminalTurn(t.state)) stop(new TurnStopped('the turn ended'));
      }, () => undefined);
    });
    let deadline: NodeJS.Timeout | undefined;
    try {
      if (job.claims > MAX_CLAIMS) throw new TurnFailure('INTERNAL', `the turn's work failed ${job.claims - 1} times; see the service log`);
      const agent = (await repo.findAgent(db, first.workspace_id, first.agent_id))!;
      const policy = modelPolicyOf(agent);
      let turn = first;
      if (turn.state === 'QUEUED') {
        const started = await fenced(job, turnId, 'QUEUED', (tx) => moves.move(tx, turnId, 'RUNNING', { started_at: turn.started_at ?? clock.now() }, [
          { type: 'turn.started', data: { state: 'RUNNING', model: turn.model } },
        ]));
        if (!started) return;
        turn = started;
      }
      // The work between two waits on a person is bounded; the waits themselves are not.
      deadline = setTimeout(() => stop(new TurnFailure('TIMEOUT', `the turn worked longer than ${config.turnTimeoutSeconds} s without answering (SVC_AGENT_TURN_TIMEOUT_S)`)), config.turnTimeoutSeconds * 1000);
      await loop(job, agent, policy, abort.signal, logger);
    } catch (err) {
      const reason = abort.signal.aborted ? abort.signal.reason : err;
      if (reason instanceof TurnStopped || err instanceof TurnStopped) {
        if (!jobSignal.aborted) await completeJob(db, job);
        return;
      }
      if (reason instanceof TurnFailure) {
        await fail(job, turnId, reason.code, reason.message);
        return;
      }
      throw err;
    } finally {
      clearTimeout(deadline);
      unsubscribe();
      jobSignal.removeEventListener('abort', onJobAbort);
    }
  };

  /**
   * Runs `write` in a transaction that holds the job's lease and the session's lock and finds the
   * turn in `state`; throws TurnStopped otherwise.
   */
  async function fenced<T>(job: ClaimedJob, turnId: string, state: string, write: (tx: Executor, turn: repo.TurnRow) => Promise<T>): Promise<T> {
    return db.transaction().execute(async (tx) => {
      if (!(await holdsJob(tx, dialect, job))) throw new TurnStopped('lease lost');
      // PostgreSQL: the session's lock first, so the turn read next is what a concurrent :cancel
      // left (it holds the same lock); SQLite's transaction holds the whole database already.
      if (dialect === 'postgres') await repo.lockSessionOfTurn(tx, turnId);
      const current = await repo.findTurn(tx, turnId);
      if (!current) throw new TurnStopped('the turn is gone');
      if (current.state !== state) throw new TurnStopped(`the turn is ${current.state}`);
      return write(tx, current);
    });
  }

  async function fail(job: ClaimedJob, turnId: string, code: FailureCode, message: string): Promise<void> {
    await db.transaction().execute(async (tx) => {
      if (!(await holdsJob(tx, dialect, job))) return;
      const turn = (await repo.findTurn(tx, turnId))!;
      await repo.lockSession(tx, dialect, turn.session_id);
      await moves.move(tx, turnId, 'FAILED', { failure_code: code, failure_message: message.slice(0, 2000) }, [
        { type: 'turn.failed', data: { state: 'FAILED', failure: { code, message: message.slice(0, 2000) } } },
      ]);
      await completeJob(tx, job);
    });
  }

  async function loop(job: ClaimedJob, agent: repo.AgentRow, policy: StoredModelPolicy, signal: AbortSignal, logger: Logger): Promise<void> {
    const turnId = job.agentTurnId!;
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const steps = await repo.listSteps(db, turnId);
      await recoverInterrupted(job, turnId, steps);
      const lastModel = [...steps].reverse().find((s) => s.kind === 'model' && s.state === 'DONE');
      if (lastModel) {
        const answer = JSON.parse(lastModel.request ?? '{}') as ModelAnswer;
        const pending = answer.tool_calls.find((call) => {
          const step = steps.find((s) => s.kind === 'tool' && s.call_id === call.id && s.position > lastModel.position);
          return !step || step.state === 'WAITING' || step.state === 'RUNNING';
        });
        if (pending) {
          const step = steps.find((s) => s.kind === 'tool' && s.call_id === pending.id && s.position > lastModel.position);
          const waiting = await runTool(job, agent, pending, step, steps.length, signal);
          if (waiting) return;
          continue;
        }
        if (answer.tool_calls.length === 0) {
          await fenced(job, turnId, 'RUNNING', async (tx) => {
            await moves.move(tx, turnId, 'COMPLETED', { output_text: answer.text }, [{ type: 'turn.completed', data: { state: 'COMPLETED', content: answer.text } }]);
            await completeJob(tx, job);
          });
          return;
        }
      }
      const modelCalls = steps.filter((s) => s.kind === 'model' && s.state === 'DONE').length;
      if (modelCalls > config.stepLimit) throw new TurnFailure('STEP_LIMIT', `the model asked for tools ${config.stepLimit} rounds without answering (SVC_AGENT_STEP_LIMIT)`);
      await callModel(job, agent, policy, steps, signal, logger);
    }
  }

  /** A tool call found RUNNING was cut by a dead worker: it is not run again, the model hears its outcome is unknown. A model call found RUNNING is made again. */
  async function recoverInterrupted(job: ClaimedJob, turnId: string, steps: repo.StepRow[]): Promise<void> {
    const cut = steps.filter((s) => s.state === 'RUNNING');
    if (cut.length === 0) return;
    await fenced(job, turnId, 'RUNNING', async (tx, turn) => {
      const appended: EventInput[] = [];
      for (const step of cut) {
        if (step.kind === 'model') {
          await repo.moveStep(tx, step.id, ['RUNNING'], { state: 'ABANDONED', completed_at: clock.now() });
          continue;
        }
        const result = { ok: false, outcome_unknown: true, message: 'the worker running this tool call stopped before it reported; it may or may not have taken effect: read before you retry' };
        await repo.moveStep(tx, step.id, ['RUNNING'], { state: 'UNKNOWN', result: JSON.stringify(result), completed_at: clock.now() });
        appended.push({ type: 'tool.completed', data: { call_id: step.call_id, tool: step.tool, result } });
      }
      await events.append(tx, turn, appended);
    });
    for (const step of cut) step.state = step.kind === 'model' ? 'ABANDONED' : 'UNKNOWN';
  }

  /** What the turn's creator may do now: their role read at this moment, or none. */
  async function rightsNow(turn: repo.TurnRow): Promise<{ ok: true; role: Role } | { ok: false; message: string }> {
    const rights = await writerRights(db, { writer_id: null, created_by: turn.created_by, workspace_id: turn.workspace_id, writer_role_cap: turn.writer_role_cap });
    if (rights.ok) return rights;
    return { ok: false, message: `the turn's creator ${rights.details.writer_id} has no rights in the workspace now (${rights.details.cause})` };
  }

  /** Runs one tool call (or parks the turn on a person); true when the turn now waits. */
  async function runTool(job: ClaimedJob, agent: repo.AgentRow, call: ToolCall, existing: repo.StepRow | undefined, position: number, signal: AbortSignal): Promise<boolean> {
    const turnId = job.agentTurnId!;
    const args = call.arguments;
    const code = typeof args.code === 'string' ? args.code : '';
    const summary = typeof args.summary === 'string' ? args.summary.slice(0, 500) : '';
    const writes = writePolicyOf(agent);
    let step = existing;
    let runWrites = false;
    if (step?.state === 'WAITING') {
      // Back from a person: an approval's decision, or (ask_user) nothing to do until :respond.
      const approval = await repo.approvalOfStep(db, step.id);
      if (!approval || approval.state === 'PENDING') {
        await completeJob(db, job);
        return true;
      }
      if (approval.state !== 'APPROVED') {
        const result = { ok: false, rejected: true, reason: approval.reason ?? 'no reason given' };
        await finishTool(job, step, result, 0, 0);
        return false;
      }
      runWrites = true;
      const approved = step;
      await fenced(job, turnId, 'RUNNING', (tx) => repo.moveStep(tx, approved.id, ['WAITING'], { state: 'RUNNING' }));
    } else {
      const needsPerson = call.name === 'ask_user' || (call.name === 'propose_change' && writes === 'APPROVAL_REQUIRED' && code !== '');
      const row: repo.StepRow = {
        id: newId('agentStep'), turn_id: turnId, position, kind: 'tool', call_id: call.id, tool: call.name, state: needsPerson ? 'WAITING' : 'RUNNING',
        request: JSON.stringify(args), result: null, started_at: clock.now(), completed_at: null,
      };
      const started: EventInput = { type: 'tool.started', data: { call_id: call.id, tool: call.name, arguments: args } };
      if (needsPerson) return park(job, agent, row, started, call, code, summary);
      await fenced(job, turnId, 'RUNNING', async (tx, turn) => {
        await repo.insertStep(tx, row);
        await events.append(tx, turn, [started]);
      });
      step = row;
      runWrites = call.name === 'propose_change' && writes === 'ALLOWED';
    }
    const turn = (await repo.findTurn(db, turnId))!;
    let result: Record<string, unknown>;
    let cpuMs = 0;
    let requests = 0;
    let secretDerived = false;
    if (call.name === 'search') {
      result = typeof args.query === 'string' && args.query ? await tools.search(args.query) : { ok: false, error: { code: 'INVALID_ARGUMENTS', message: 'search needs a query' } };
    } else if (call.name === 'execute' || call.name === 'propose_change') {
      const rights = await rightsNow(turn);
      if (call.name === 'propose_change' && writes === 'DENIED') {
        result = { ok: false, denied: true, message: 'this agent may not write (its tool_policy.writes is DENIED); tell the user what to do themselves' };
      } else if (!code) {
        result = { ok: false, error: { code: 'INVALID_ARGUMENTS', message: `${call.name} needs code` } };
      } else if (!rights.ok) {
        result = { ok: false, error: { code: 'NO_RIGHTS', message: rights.message } };
      } else {
        const run = await tools.runCode({
          workspaceId: turn.workspace_id, actorId: turn.created_by, role: rights.role, code, writes: runWrites, requestId: `agent.${turn.id}`, signal,
        });
        if (signal.aborted) throw signal.reason;
        ({ result } = run);
        cpuMs = run.cpuMs;
        requests = run.requestCount;
        secretDerived = run.secretDerived;
      }
    } else {
      result = { ok: false, error: { code: 'UNKNOWN_TOOL', message: `there is no tool named ${call.name}; the tools are search, execute, propose_change, ask_user` } };
    }
    await finishTool(job, step, result, cpuMs, requests, secretDerived);
    return false;
  }

  async function finishTool(job: ClaimedJob, step: repo.StepRow, result: Record<string, unknown>, cpuMs: number, requests: number, secretDerived = false): Promise<void> {
    const text = boundedJson(result);
    await fenced(job, job.agentTurnId!, 'RUNNING', async (tx, turn) => {
      await repo.moveStep(tx, step.id, ['RUNNING', 'WAITING'], { state: 'DONE', result: text, completed_at: clock.now() });
      const used = cpuMs > 0 || requests > 0 ? await repo.addTurnUsage(tx, turn.id, { cost_microcents: 0, token_count: 0, compute_ms: cpuMs, api_call_count: requests }) : undefined;
      await events.append(tx, turn, [
        { type: 'tool.completed', data: { call_id: step.call_id, tool: step.tool, result: text.length < JSON.stringify(result).length ? text : result, secret_derived: secretDerived } },
        ...(used ? [{ type: 'usage.updated' as const, data: { usage_summary: turnUsage(used) } }] : []),
      ]);
    });
  }

  /** ask_user, or propose_change under APPROVAL_REQUIRED: the turn waits on its creator; the job ends with it. */
  async function park(job: ClaimedJob, agent: repo.AgentRow, row: repo.StepRow, started: EventInput, call: ToolCall, code: string, summary: string): Promise<boolean> {
    await fenced(job, row.turn_id, 'RUNNING', async (tx, turn) => {
      await repo.insertStep(tx, row);
      const to = { users: turn.writer_user_id ? [turn.writer_user_id] : [] };
      if (call.name === 'ask_user') {
        const question = String(call.arguments.question ?? 'The agent has a question.').slice(0, 2000);
        const choices = Array.isArray(call.arguments.choices) ? call.arguments.choices.filter((c): c is string => typeof c === 'string').slice(0, 20) : [];
        await moves.move(tx, turn.id, 'WAITING_FOR_INPUT', {}, [started, { type: 'input.requested', data: { call_id: call.id, question, choices } }]);
        await agentTurnWaiting(tx, { workspaceId: turn.workspace_id, turnId: turn.id, sessionId: turn.session_id, waitingFor: 'input', stepKey: row.id, what: `Agent ${agent.name} asks: ${question}`, to });
      } else {
        const now = clock.now();
        const approvalId = newId('approvalRequest');
        const what = summary || 'a change';
        await repo.insertApproval(tx, {
          id: approvalId, workspace_id: turn.workspace_id, agent_id: turn.agent_id, session_id: turn.session_id, turn_id: turn.id, step_id: row.id,
          kind: 'CHANGE', code, summary: what, state: 'PENDING', reason: null, resolved_by: null, resolved_at: null, created_by: turn.created_by,
          created_at: now, updated_at: now, revision: 1,
        });
        await moves.move(tx, turn.id, 'WAITING_FOR_PERMISSION', {}, [
          started, { type: 'approval.requested', data: { approval_request_id: approvalId, kind: 'CHANGE', call_id: call.id, code, summary: what } },
        ]);
        await agentTurnWaiting(tx, { workspaceId: turn.workspace_id, turnId: turn.id, sessionId: turn.session_id, waitingFor: 'approval', stepKey: approvalId, what: `Agent ${agent.name} wants to run code that changes something: ${what}.`, to });
      }
      await completeJob(tx, job);
    });
    return true;
  }

  async function callModel(job: ClaimedJob, agent: repo.AgentRow, policy: StoredModelPolicy, steps: repo.StepRow[], signal: AbortSignal, logger: Logger): Promise<void> {
    const turnId = job.agentTurnId!;
    const turn = (await repo.findTurn(db, turnId))!;
    const history = await repo.historyOf(db, turn.session_id, turn.id, 20);
    const messages = conversationOf(agent, history, turn, steps);
    const price = priceOf(config.prices, policy.default_model, deps.providers.get(policy.provider));
    // Each call sends the whole conversation again, so the last call's reported figures bound the next one's from below.
    const lastModel = [...steps].reverse().find((s) => s.kind === 'model' && s.state === 'DONE');
    const last = lastModel?.result ? (JSON.parse(lastModel.result) as { input_tokens: number; cost_microcents: number }) : null;
    const estimate = callEstimate(price, messages, config.maxOutputTokens, last);
    const provider = deps.providers.get(policy.provider);
    if (!provider) throw new TurnFailure('MODEL_UNAVAILABLE', `the model provider ${policy.provider} is not set up on this service`);
    let apiKey: string | null;
    try {
      apiKey = await resolveKey(db, deps.keyring, turn.workspace_id, policy, config);
    } catch (err) {
      if (err instanceof ApiError) throw new TurnFailure('MODEL_ERROR', `no API key for the model call: ${err.message}`);
      throw err;
    }
    const step: repo.StepRow = {
      id: newId('agentStep'), turn_id: turnId, position: steps.length, kind: 'model', call_id: null, tool: null, state: 'RUNNING',
      request: null, result: null, started_at: clock.now(), completed_at: null,
    };
    // The call's estimated cost is held in the transaction that records its step (spend-reservations.ts).
    try {
      await fenced(job, turnId, 'RUNNING', async (tx, current) => {
        await deps.spend.reserve(tx, current, policy, estimate);
        await repo.insertStep(tx, step);
      });
    } catch (err) {
      if (err instanceof BudgetRefused) throw new TurnFailure('BUDGET_EXHAUSTED', err.message);
      throw err;
    }
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await streamOnce(job, provider, { model: policy.default_model, workspaceId: turn.workspace_id, messages, apiKey }, signal);
        const cost = costMicrocents(price, answer.usage);
        await fenced(job, turnId, 'RUNNING', async (tx, current) => {
          await repo.moveStep(tx, step.id, ['RUNNING'], {
            state: 'DONE', request: JSON.stringify({ text: answer.text, tool_calls: answer.tool_calls }), result: JSON.stringify({ ...answer.usage, cost_microcents: cost }), completed_at: clock.now(),
          });
          const used = (await repo.addTurnUsage(tx, turnId, { cost_microcents: cost, token_count: answer.usage.input_tokens + answer.usage.output_tokens, compute_ms: 0, api_call_count: 0 }))!;
          await deps.spend.settle(tx, current, used);
          await events.append(tx, current, [
            ...(answer.text ? [{ type: 'message.created' as const, data: { content: answer.text } }] : []),
            { type: 'usage.updated', data: { usage_summary: turnUsage(used) } },
          ]);
        });
        return;
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (!(err instanceof ModelProviderError)) throw err;
        if (err.kind === 'context_too_long') throw new TurnFailure('CONTEXT_TOO_LONG', err.message);
        if (!err.retryable) throw new TurnFailure('MODEL_ERROR', err.message);
        if (attempt >= config.modelTries) throw new TurnFailure('MODEL_UNAVAILABLE', `${err.message} (after ${attempt} tries)`);
        const wait = Math.min(30_000, err.retryAfterMs ?? 500 * 2 ** (attempt - 1)) * deps.backoffScale;
        logger.warn({ turn_id: turnId, attempt, kind: err.kind, retry_in_ms: wait }, 'model call failed; retrying');
        await abortableSleep(wait, signal);
      }
    }
  }

  /** One streamed call: text deltas become message.delta events (gathered, at most one per DELTA_FLUSH_MS). */
  async function streamOnce(job: ClaimedJob, provider: ModelProvider, req: { model: string; workspaceId: string; messages: ReturnType<typeof conversationOf>; apiKey: string | null }, signal: AbortSignal) {
    let text = '';
    let pending = '';
    let flushedAt = Date.now();
    const calls: ToolCall[] = [];
    const flush = async () => {
      if (!pending) return;
      const piece = pending;
      pending = '';
      flushedAt = Date.now();
      await fenced(job, job.agentTurnId!, 'RUNNING', (tx, turn) => events.append(tx, turn, [{ type: 'message.delta', data: { text: piece } }]));
    };
    const stream = provider.stream({ model: req.model, workspaceId: req.workspaceId, messages: req.messages, tools: AGENT_TOOLS, maxOutputTokens: config.maxOutputTokens, apiKey: req.apiKey, signal });
    for await (const event of stream) {
      if (event.type === 'text') {
        text += event.text;
        pending += event.text;
        if (Date.now() - flushedAt >= DELTA_FLUSH_MS) await flush();
      } else if (event.type === 'tool_call') {
        calls.push(event.call);
      } else {
        await flush();
        return { text, tool_calls: calls, usage: event.usage };
      }
    }
    throw new ModelProviderError('stream_cut', 'the model\'s answer ended before it was complete');
  }
}
