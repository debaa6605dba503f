// Following an operation to its end (`--wait`, `svc operations wait`). The server's `:wait` answers
// as soon as the operation is done (pushed, not polled) or after `timeout` seconds; the client asks
// for 1-second slices so it can also show each step as it starts, retries and ends. Progress goes
// to stderr: a live line on a terminal, one line per change otherwise. Ctrl-C stops waiting (the
// operation goes on) and says how to resume.
import { CliError, EXIT, type Api, type ApiResult } from './http.js';
import { stateColor, terminalText, truncate, type Output } from './output.js';

interface Step {
  name: string;
  status: string;
  attempts?: number;
  started_at?: number | null;
  completed_at?: number | null;
  error_message?: string | null;
}

export interface OperationBody {
  id: string;
  state: string;
  done: boolean;
  started_at: number;
  completed_at?: number | null;
  metadata?: { type?: string } | null;
  error?: { message?: string } | null;
  last_error?: { message: string; step_name: string } | null;
  steps?: Step[];
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

/** Lines describing what changed between two snapshots of an operation (non-terminal output). */
export function changes(prev: OperationBody | null, next: OperationBody): string[] {
  const lines: string[] = [];
  for (const step of next.steps ?? []) {
    const before = prev?.steps?.find((s) => s.name === step.name);
    if (before?.status === step.status && before.attempts === step.attempts) continue;
    if (step.status === 'running' && before?.status !== 'running') lines.push(`step ${step.name}: started${(step.attempts ?? 1) > 1 ? ` (attempt ${step.attempts})` : ''}`);
    else if (step.status === 'completed' || step.status === 'skipped') {
      const took = step.started_at && step.completed_at ? ` in ${step.completed_at - step.started_at}s` : '';
      lines.push(`step ${step.name}: ${step.status}${took}`);
    } else if (step.status === 'failed' && next.done) lines.push(`step ${step.name}: failed: ${step.error_message ?? ''}`);
    else if (step.status === 'running' && before && before.attempts !== step.attempts) lines.push(`step ${step.name}: retrying (attempt ${step.attempts})`);
  }
  if (next.last_error && next.state === 'RUNNING' && next.last_error.message !== prev?.last_error?.message) {
    lines.push(`step ${next.last_error.step_name}: retrying after error: ${next.last_error.message}`);
  }
  return lines;
}

export interface WaitResult {
  op: OperationBody;
  last: ApiResult;
}

/** Follows `id` until it is done; resolves with the final operation, or throws CliError (Ctrl-C: exit 130). */
export async function followOperation(api: Api, o: Output, id: string, first?: ApiResult, context?: string): Promise<WaitResult> {
  // An operation of a deleted workspace is read with that workspace's id as svc-context (API.md 5).
  const workspaceId = context ?? (first?.body as { workspace_id?: string | null } | undefined)?.workspace_id;
  const header: Record<string, string> = workspaceId && api.settings.tokenKind !== 'api_token' ? { 'svc-context': workspaceId } : {};
  const began = Date.now();
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once('SIGINT', onSigint);
  let live = '';
  let frame = 0;
  const clearLive = () => {
    if (live) o.err.write('\r\x1b[2K');
    live = '';
  };
  const print = (line: string) => {
    clearLive();
    o.err.write(`${line}\n`);
  };
  const drawLive = (op: OperationBody) => {
    if (!o.errTty) return;
    const running = op.steps?.find((s) => s.status === 'running' || s.status === 'failed');
    const what = running ? `${running.name}${(running.attempts ?? 1) > 1 ? ` (attempt ${running.attempts})` : ''}` : op.metadata?.type ?? op.id;
    // a newline in an error message would break the redraw, an escape sequence act on the terminal
    const err = op.last_error ? o.errColor.red(` · last error: ${terminalText(op.last_error.message)}`) : '';
    live = `${o.errColor.cyan(SPINNER[frame++ % SPINNER.length]!)} ${terminalText(what)} ${o.errColor.dim(seconds(Date.now() - began))}${err}`;
    // One column short of the width: a line that fills the last column leaves the cursor waiting to
    // wrap (or wrapped, on some terminals), and the next `\r` would no longer reach its start.
    o.err.write(`\r\x1b[2K${truncate(live, o.errWidth() - 1)}`);
  };

  let prev: OperationBody | null = null;
  let last: ApiResult | undefined;
  // The first snapshot (e.g. the create response) is shown as is; then the loop asks :wait.
  let snapshot = first;
  if (!o.errTty) o.err.write(`waiting for ${id}\n`);
  try {
    for (;;) {
      snapshot ??= await api.call('POST', '/v1/operations/{id}:wait', { path: { id }, query: { timeout: 1 }, header, auth: 'workspace', signal: abort.signal });
      const op = snapshot.body as OperationBody;
      for (const line of changes(prev, op)) print(o.errTty ? `  ${terminalText(line)}` : line);
      prev = op;
      last = snapshot;
      if (op.done) break;
      drawLive(op);
      snapshot = undefined;
    }
  } catch (err) {
    if (abort.signal.aborted) {
      clearLive();
      throw new CliError(`stopped waiting; ${id} goes on on the server. Resume with: svc operations wait ${id}`, EXIT.INTERRUPTED);
    }
    throw err;
  } finally {
    process.removeListener('SIGINT', onSigint);
    clearLive();
  }
  const op = prev!;
  // The operation's own duration (server clock, whole seconds), not how long this client waited.
  const ran = op.completed_at ? op.completed_at - op.started_at : null;
  const took = ran === null ? seconds(Date.now() - began) : ran < 1 ? '<1s' : `${ran}s`;
  if (op.state === 'SUCCEEDED') {
    o.err.write(`${o.errColor.green('✓')} ${op.id} ${stateColor(o.errColor, op.state)} in ${took}\n`);
    return { op, last: last! };
  }
  o.err.write(`${o.errColor.red('✗')} ${op.id} ${stateColor(o.errColor, op.state)} after ${took}\n`);
  const failure = new CliError(`operation ${op.id} ${op.state}: ${op.error?.message ?? 'no message'}`, EXIT.ERROR);
  (failure as CliError & { result?: WaitResult }).result = { op, last: last! };
  throw failure;
}
