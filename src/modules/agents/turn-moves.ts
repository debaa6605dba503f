// Every change of a turn's state goes through `move` (trigger.dev's one-place state machine): a
// conditional update from the states the move is allowed from, the events it appends, the
// session's mirrored state, and what a turn's end implies (the spend held for a model call given
// back, its pending approvals cancelled, its notices superseded, the session's next queued turn
// started) in the same transaction. A move
// whose turn is no longer in an allowed state changes nothing and returns undefined, so a worker
// racing a person's :cancel loses cleanly.
//
// The allowed moves:
//   QUEUED -> RUNNING (a worker starts it) | WAITING_FOR_PERMISSION (admission: a member's turn on
//     an agent that writes without approval) | FAILED (admission DENIED) | CANCELLED
//   RUNNING -> WAITING_FOR_INPUT (ask_user) | WAITING_FOR_PERMISSION (propose_change) | COMPLETED
//     | FAILED | CANCELLED
//   WAITING_FOR_INPUT -> RUNNING (:respond) | CANCELLED | FAILED (it waited past the turn's time)
//   WAITING_FOR_PERMISSION -> RUNNING (approved or rejected change) | QUEUED (approved turn)
//     | CANCELLED (a rejected turn, or :cancel) | FAILED
//   COMPLETED, FAILED, CANCELLED: terminal.
import type { Dialect, Executor } from '../../db/database.js';
import { enqueueJob } from '../../jobs/queue.js';
import type { Notifier } from '../../jobs/notifier.js';
import { clock } from '../../platform/clock.js';
import { agentTurnAnswered } from '../notifications/sources.js';
import type { EventInput, EventLog } from './agent-events.js';
import * as repo from './agents.repo.js';
import { isTerminalTurn, isWaitingTurn, type TurnState } from './agents.schemas.js';
import { sessionStateOfTurn } from './agents.service.js';
import type { SpendReservations } from './spend-reservations.js';
import { toTurn } from './agent-turns.service.js';
import { recordEvent } from '../../events/record.js';

export const MOVES_FROM: Record<TurnState, readonly TurnState[]> = {
  QUEUED: ['WAITING_FOR_PERMISSION'],
  RUNNING: ['QUEUED', 'WAITING_FOR_INPUT', 'WAITING_FOR_PERMISSION'],
  WAITING_FOR_INPUT: ['RUNNING'],
  WAITING_FOR_PERMISSION: ['QUEUED', 'RUNNING'],
  COMPLETED: ['RUNNING'],
  FAILED: ['QUEUED', 'RUNNING', 'WAITING_FOR_INPUT', 'WAITING_FOR_PERMISSION'],
  CANCELLED: ['QUEUED', 'RUNNING', 'WAITING_FOR_INPUT', 'WAITING_FOR_PERMISSION'],
};

export function createTurnMoves(deps: { dialect: Dialect; events: EventLog; notifier: Notifier; spend: Pick<SpendReservations, 'release'> }) {
  const { events, notifier, spend } = deps;

  /** Makes sure a job will run the turn (one job per turn at a time). */
  async function schedule(tx: Executor, turnId: string): Promise<void> {
    if (await repo.hasTurnJob(tx, turnId)) return;
    const jobId = await enqueueJob(tx, { kind: 'agent_turn', operationId: null, agentTurnId: turnId });
    await notifier.publish(tx, 'svc_jobs', jobId);
  }

  /** The session mirrors its newest turn's state. */
  async function mirrorOnSession(tx: Executor, turn: repo.TurnRow): Promise<void> {
    const latest = await repo.latestTurn(tx, turn.session_id);
    if (latest?.id !== turn.id) return;
    await repo.setSessionState(tx, turn.session_id, sessionStateOfTurn(turn.state), clock.now());
  }

  /**
   * Moves the turn to `to` (with `changes`) if it is in a state that move is allowed from, appends
   * `appended` events, and does what the new state implies. Returns the new row, or undefined.
   */
  async function move(tx: Executor, turnId: string, to: TurnState, changes: Partial<repo.TurnRow>, appended: EventInput[], by = 'agent_turn'): Promise<repo.TurnRow | undefined> {
    const now = clock.now();
    const terminal = isTerminalTurn(to);
    const moved = await repo.moveTurn(tx, turnId, MOVES_FROM[to], { ...changes, state: to, updated_at: now, ...(terminal ? { completed_at: now } : {}) });
    if (!moved) return undefined;
    await events.append(tx, moved, appended);
    await mirrorOnSession(tx, moved);
    if (terminal) {
      // A model call cut by the end (a :cancel, a failure) gives back the spend it held.
      await spend.release(tx, moved);
      await repo.cancelPendingApprovals(tx, moved.id, now);
      const next = await repo.nextQueuedTurn(tx, moved.session_id);
      if (next) await schedule(tx, next.id);
    }
    if (!isWaitingTurn(to)) await agentTurnAnswered(tx, moved.id, by);
    if (terminal || isWaitingTurn(to)) {
      await notifier.publish(tx, 'svc_agent_turns', moved.id);
      // agent_turn.completed|failed|cancelled|waiting (API.md 8.11), the turn as its GET returns it.
      const type = isWaitingTurn(to) ? 'agent_turn.waiting' : (`agent_turn.${to.toLowerCase()}` as 'agent_turn.completed' | 'agent_turn.failed' | 'agent_turn.cancelled');
      await recordEvent(tx, { type, workspace_id: moved.workspace_id, data: toTurn(moved) });
    }
    return moved;
  }

  return { move, schedule, mirrorOnSession };
}

export type TurnMoves = ReturnType<typeof createTurnMoves>;
