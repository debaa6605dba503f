// A snippet run's outcome as its display_type says (lib/snippet-output.ts shapes it): a real table,
// a big value with its label, pretty JSON, or the console lines with their levels. A failed run
// shows its error (code, message, the stack when it threw) first; the console lines, when the
// output is not the logs themselves, sit below in a disclosure. Reused wherever a run is shown
// (a snippet's page, a run's page, code tried without saving, the agents' pages).
import { formatDuration } from '../lib/format.ts';
import { logSummary, shapeOutput, type DisplayType, type LogLine, type Table } from '../lib/snippet-output.ts';

export interface RunError {
  code: string;
  message: string;
  details?: unknown;
}

export function SnippetOutput(props: { displayType: DisplayType; output: unknown; logs?: LogLine[]; error?: RunError | null; label?: string }) {
  const logs = props.logs ?? [];
  const shaped = shapeOutput(props.displayType, props.output, logs);
  return (
    <div class="snippet-output">
      {props.error && <RunFailure error={props.error} />}
      {!props.error && shaped.kind === 'table' && <OutputTable table={shaped.table} label={props.label ?? 'Output'} />}
      {!props.error && shaped.kind === 'stat' && (
        <figure class="stat-box" aria-label={props.label ?? 'Output'}>
          <p class="stat">{shaped.stat.value}</p>
          {shaped.stat.label && <figcaption class="muted">{shaped.stat.label}</figcaption>}
        </figure>
      )}
      {!props.error && shaped.kind === 'json' && (
        <>
          {shaped.mismatch && <p class="muted small">{shaped.mismatch}</p>}
          <pre class="json" tabIndex={0}>
            {shaped.text}
          </pre>
        </>
      )}
      {shaped.kind === 'logs' ? (
        <LogLines lines={logs} />
      ) : (
        logs.length > 0 && (
          <details class="console" open={Boolean(props.error)}>
            <summary>Console: {logSummary(logs)}</summary>
            <LogLines lines={logs} />
          </details>
        )
      )}
    </div>
  );
}

function OutputTable(props: { table: Table; label: string }) {
  const { columns, rows } = props.table;
  if (rows.length === 0) return <p class="muted">No rows.</p>;
  return (
    <table class="table">
      <caption class="visually-hidden">{props.label}</caption>
      <thead>
        <tr>
          {columns.map((c) => (
            <th scope="col" key={c}>
              {c}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row, i) => (
          <tr key={i}>
            {row.map((cell, j) => (
              <td key={columns[j]} data-label={columns[j]}>
                {cell}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The console lines in monospace, each with its level in words and its time since the start. */
export function LogLines(props: { lines: LogLine[] }) {
  if (props.lines.length === 0) return <p class="muted">The run wrote nothing to the console.</p>;
  return (
    <ol class="logs" aria-label="Console lines" tabIndex={0}>
      {props.lines.map((l, i) => (
        <li key={i} class={`log log-${l.level}`}>
          <span class="log-at">+{formatDuration(l.at_ms)}</span> <span class="log-level">{l.level}</span> <span class="log-message">{l.message}</span>
        </li>
      ))}
    </ol>
  );
}

function RunFailure(props: { error: RunError }) {
  const stack = (props.error.details as { stack?: unknown } | null | undefined)?.stack;
  return (
    <div class="notice notice-error" role="alert">
      <p>
        <strong>The run failed ({props.error.code}).</strong> {props.error.message}
      </p>
      {typeof stack === 'string' && stack.trim() !== '' && (
        <details>
          <summary>Stack</summary>
          <pre class="code">{stack}</pre>
        </details>
      )}
    </div>
  );
}
