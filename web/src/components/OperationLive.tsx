// An operation followed live (API.md 8.8): its state and steps as they start and end, retries with
// last_error, then the result, without reloading the page. It follows through
// POST /v1/operations/{id}:wait, which answers at once when the operation ends (the end is pushed
// to every instance) and otherwise after `timeout` seconds; a short timeout lets the steps show as
// they move. Every page that starts an operation shows it with this component.
import { useEffect, useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../lib/api.ts';
import { toApiError } from '../lib/useApi.ts';
import type { ApiError } from '../lib/api.ts';
import { ErrorNotice } from './ErrorNotice.tsx';
import { Time } from './Time.tsx';
import { StateBadge } from './StateBadge.tsx';
import { useAction } from './Form.tsx';

export type Operation = Schemas['Operation'];

/** Seconds each :wait may hold before answering with the state so far. */
export const FOLLOW_TIMEOUT = 2;

/** Follows an operation until it is done; returns the latest state and any error reading it. */
export function useOperation(id: string, initial?: Operation, onDone?: (op: Operation) => void): { op: Operation | undefined; error: ApiError | undefined; set: (op: Operation) => void } {
  const [op, setOp] = useState<Operation | undefined>(initial);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  useEffect(() => {
    const abort = new AbortController();
    let stopped = false;
    (async () => {
      let current = initial?.id === id ? initial : undefined;
      try {
        if (!current) {
          current = await ok(client.GET('/v1/operations/{id}', { params: { path: { id } }, signal: abort.signal }));
          setOp(current);
        }
        while (!current.done && !stopped) {
          current = await ok(client.POST('/v1/operations/{id}:wait', { params: { path: { id }, query: { timeout: FOLLOW_TIMEOUT } }, signal: abort.signal }));
          if (!stopped) setOp(current);
        }
        if (!stopped) onDone?.(current);
      } catch (err) {
        if (!stopped) setError(toApiError(err));
      }
    })();
    return () => {
      stopped = true;
      abort.abort();
    };
    // follow again only for another operation
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [id]);
  return { op, error, set: setOp };
}

const STEP_WORD: Record<string, string> = { pending: 'Waiting', running: 'Running', completed: 'Done', failed: 'Failed', skipped: 'Skipped' };

export function OperationSteps(props: { op: Operation }) {
  return (
    <ol class="steps" aria-label="Steps">
      {(props.op.steps ?? []).map((s) => (
        <li key={s.name} class={`step step-${s.status}`}>
          <span class="step-status">{STEP_WORD[s.status] ?? s.status}</span> <strong>{s.name}</strong>
          {s.attempts > 1 && <span class="muted"> · attempt {s.attempts}</span>}
          {s.started_at !== undefined && (
            <span class="muted">
              {' '}
              · started <Time at={s.started_at} />
            </span>
          )}
          {s.error_message && <p class="step-error">{s.error_message}</p>}
        </li>
      ))}
    </ol>
  );
}

/** The live view of one operation: state, steps, last error while retrying, result, Cancel. */
export function OperationLive(props: { id: string; initial?: Operation; onDone?: (op: Operation) => void; title?: string }) {
  const { op, error, set } = useOperation(props.id, props.initial, props.onDone);
  if (error) return <ErrorNotice error={error} title="The operation could not be followed." />;
  if (!op) return <p aria-busy="true">Loading the operation…</p>;
  return <OperationProgress op={op} title={props.title} onChange={set} />;
}

/** One state of an operation as OperationLive shows it (for pages that follow it themselves). */
export function OperationProgress(props: { op: Operation; title?: string; onChange: (op: Operation) => void }) {
  const { op, onChange: set } = props;
  const cancel = useAction();
  const lastError = op.last_error as { message?: string } | null;
  const failure = op.error as { message?: string } | null;
  return (
    <section class="card operation" aria-labelledby={`op-${op.id}`}>
      <h2 id={`op-${op.id}`}>
        {props.title ?? 'Progress'} <StateBadge state={op.state} />
      </h2>
      <p class="muted" aria-live="polite">
        {op.done ? (
          <>
            Finished <Time at={op.completed_at} />
          </>
        ) : (
          'Following live: the steps update as they run.'
        )}
      </p>
      <OperationSteps op={op} />
      {!op.done && lastError?.message && (
        <div class="notice notice-warn" role="status">
          <strong>Retrying after an error:</strong> {lastError.message}
        </div>
      )}
      {op.state === 'FAILED' && failure?.message && (
        <div class="notice notice-error" role="alert">
          <strong>Failed:</strong> {failure.message}
        </div>
      )}
      <ErrorNotice error={cancel.error} title="Could not cancel." />
      {!op.done && (
        <button type="button" class="danger" disabled={cancel.busy} onClick={() => cancel.run(async () => set(await ok(client.POST('/v1/operations/{id}:cancel', { params: { path: { id: op.id } } }))))}>
          Cancel operation
        </button>
      )}
    </section>
  );
}
