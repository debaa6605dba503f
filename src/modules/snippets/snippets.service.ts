// Snippets (API.md 8.3): create, read, list, change (if-match), archive and restore; run a stored
// snippet or ad hoc code in the sandbox as the caller, and the history of runs. A run is admitted
// in one short transaction (the snippet is active, the inputs match its declarations, its last
// writer's rights now, the workspace is active, the daily `snippets/runs` quota is counted), then
// runs with no transaction open (up to a minute), then is recorded in a second one. Only runs that
// ran count: a refused run rolls the count back with its transaction, and a run the sandbox refuses
// (429 SANDBOX_BUSY) or a run without rights (WRITER_UNAUTHORIZED) is not counted. Secret values the
// run read are masked in its output, logs and error before anyone sees them (snippet-masking.ts).
import type { Db, Executor } from '../../db/database.js';
import type { Role, WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, invalidArgument, notFound } from '../../platform/errors.js';
import { etagMismatch, etagOf } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import { inputsProblem, type JsonValue, type RunResult } from '../../sandbox/index.js';
import type { QuotaService, RateCharge } from '../quotas/quotas.service.js';
import { readsSecretValues } from '../secrets/secret-readers.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import { runBridge, type Dispatch, type RunCredentials } from './snippet-bridge.js';
import { checkDeclarations, resolveInputs } from './snippet-inputs.js';
import { SecretMask } from './snippet-masking.js';
import type { SnippetRunner } from './snippet-runner.js';
import { lowerRole, writerColumns, writerRights, type Writer } from './snippet-writer.js';
import * as repo from './snippets.repo.js';
import {
  DEFAULT_TIMEOUT_MS, MAX_RUN_INPUT_DEPTH,
  type CreateSnippetBodyT, type CreatedSnippetT, type ExecuteBodyT, type ExecuteResultT, type InputDeclarationT, type ListRunsQueryT,
  type ListSnippetsQueryT, type PatchSnippetBodyT, type RunOverridesT, type RunSnippetBodyT, type RunState, type SnippetRunT, type SnippetT,
} from './snippets.schemas.js';

export interface SnippetServiceDeps {
  db: Db;
  cursors: CursorCodec;
  quotas: QuotaService;
  runner: SnippetRunner;
  credentials: RunCredentials;
  publicUrl: string;
}

/** Where a run's platform.request calls are served and which request started it. */
export interface RunContext {
  dispatch: Dispatch;
  requestId: string;
}

/** A run that ended, not yet recorded. */
export interface FinishedRun {
  snippet: repo.SnippetRow;
  scope: WorkspaceScope;
  source: 'manual' | 'dashboard';
  inputs: Record<string, JsonValue>;
  overrides: RunOverridesT;
  startedAt: number;
  result: RunResult;
  /** the run read a secret value (`:access`) */
  secretDerived: boolean;
}

const archivedError = (id: string) =>
  new ApiError('FAILED_PRECONDITION', `snippet ${id} is archived; restore it with :undelete first`, { reason: 'SNIPPET_ARCHIVED' });

/** A run that never started because its last writer has no rights now: recorded as failed, not counted. */
function writerUnauthorized(message: string, details: { [key: string]: JsonValue }): RunResult {
  const error = { code: 'WRITER_UNAUTHORIZED', message, details } as unknown as Extract<RunResult, { ok: false }>['error'];
  return { ok: false, error, logs: [], stats: { cpu_time_ms: 0, wall_time_ms: 0, heap_used_bytes: 0, request_count: 0 } };
}

function stateOf(result: RunResult): RunState {
  if (result.ok) return 'succeeded';
  return result.error.code === 'TIMEOUT' ? 'timed_out' : 'failed';
}

export function createSnippetService(deps: SnippetServiceDeps) {
  const { db, cursors, quotas, runner, credentials, publicUrl } = deps;

  function toSnippet(row: repo.SnippetRow): SnippetT {
    return {
      id: row.id,
      workspace_id: row.workspace_id,
      name: row.name,
      description: row.description,
      code: row.code,
      display_type: row.display_type as SnippetT['display_type'],
      inputs: JSON.parse(row.inputs) as InputDeclarationT[],
      visibility: row.visibility as SnippetT['visibility'],
      origin: row.origin as SnippetT['origin'],
      purpose: row.purpose as SnippetT['purpose'],
      agent_session_id: row.agent_session_id,
      agent_turn_id: row.agent_turn_id,
      created_by: row.created_by,
      last_writer_id: row.writer_id ?? row.created_by,
      created_at: row.created_at,
      updated_at: row.updated_at,
      archived_at: row.archived_at,
      etag: etagOf(row.revision),
      html_url: `${publicUrl}/snippets/${row.id}`,
    };
  }

  /** A run as `reader` may see it: a secret-derived run's output, error and logs only for roles that may read secret values. */
  function toRun(row: repo.BasicRunRow & Partial<repo.SnippetRunRow>, full: boolean, reader: Role): SnippetRunT {
    const derived = row.secret_derived === 1;
    const withheld = derived && !readsSecretValues(reader);
    const run: SnippetRunT = {
      id: row.id,
      snippet_id: row.snippet_id,
      workspace_id: row.workspace_id,
      agent_session_id: row.agent_session_id,
      agent_turn_id: row.agent_turn_id,
      state: row.state as RunState,
      source: row.source as SnippetRunT['source'],
      run_by: row.run_by,
      snippet_etag: etagOf(row.snippet_revision),
      inputs: JSON.parse(row.inputs),
      overrides: JSON.parse(row.overrides),
      stats: { cpu_time_ms: row.cpu_time_ms, wall_time_ms: row.wall_time_ms, heap_used_bytes: Number(row.heap_used_bytes), request_count: row.request_count },
      duration_ms: row.wall_time_ms,
      created_at: row.created_at,
      etag: '1',
      secret_derived: derived,
      output_withheld: withheld,
    };
    if (full) {
      run.output = withheld || row.output == null ? null : JSON.parse(row.output);
      run.error = withheld || row.error == null ? null : JSON.parse(row.error);
      run.logs = withheld ? [] : JSON.parse(row.logs ?? '[]');
    }
    return run;
  }

  async function findOr404(executor: Executor, scope: WorkspaceScope, id: string): Promise<repo.SnippetRow> {
    const row = isId('snippet', id) ? await repo.findSnippet(executor, scope.workspaceId, id) : undefined;
    if (!row) throw notFound('snippet');
    return row;
  }

  async function createSnippet(writer: Writer, body: CreateSnippetBodyT, tx: Executor): Promise<CreatedSnippetT> {
    const { scope } = writer;
    const inputs = body.inputs ?? [];
    checkDeclarations(inputs, 'body.inputs');
    await assertWorkspaceActive(tx, scope.workspaceId);
    const now = clock.now();
    const row: repo.SnippetRow = {
      id: newId('snippet'),
      workspace_id: scope.workspaceId,
      name: body.name,
      description: body.description ?? null,
      code: body.code,
      display_type: body.display_type,
      inputs: JSON.stringify(inputs),
      visibility: body.visibility ?? 'workspace',
      origin: body.origin ?? 'user',
      purpose: body.purpose ?? 'general',
      agent_session_id: body.agent_session_id ?? null,
      agent_turn_id: body.agent_turn_id ?? null,
      created_by: scope.actorId,
      ...(await writerColumns(tx, writer)),
      created_at: now,
      updated_at: now,
      archived_at: null,
      revision: 1,
    };
    await repo.insertSnippet(tx, row);
    const snippet = toSnippet(row);
    return { snippet_id: snippet.id, ...snippet };
  }

  async function loadCreated(workspaceId: string, id: string): Promise<CreatedSnippetT | null> {
    const row = await repo.findSnippet(db, workspaceId, id);
    return row ? { snippet_id: row.id, ...toSnippet(row) } : null;
  }

  async function getSnippet(scope: WorkspaceScope, id: string): Promise<SnippetT> {
    return toSnippet(await findOr404(db, scope, id));
  }

  async function listSnippets(scope: WorkspaceScope, query: ListSnippetsQueryT): Promise<Page<SnippetT>> {
    const filters = { purpose: query.purpose, visibility: query.visibility, archived: query.archived ?? 'false' };
    const page = cursors.request(query, scope.workspaceId, filters);
    const rows = await repo.listSnippets(db, scope.workspaceId, { ...filters, includeArchived: filters.archived === 'true' }, page);
    return cursors.page(rows, page, scope.workspaceId, filters, toSnippet);
  }

  /** Why a conditional write matched nothing: absent (404), stale etag (409) or the archived state (422). */
  async function explainMiss(scope: WorkspaceScope, id: string, revision: number | null): Promise<never> {
    const current = await findOr404(db, scope, id);
    if (revision !== null && current.revision !== revision) throw etagMismatch(`snippet ${id}`, current.revision);
    throw archivedError(id);
  }

  async function updateSnippet(writer: Writer, id: string, revision: number | null, body: PatchSnippetBodyT): Promise<SnippetT> {
    const { scope } = writer;
    if (!isId('snippet', id)) throw notFound('snippet');
    if (body.inputs) checkDeclarations(body.inputs, 'body.inputs');
    const changes: Parameters<typeof repo.updateSnippetIf>[5] = { updated_at: clock.now() };
    if (body.name !== undefined) changes.name = body.name;
    if (body.description !== undefined) changes.description = body.description;
    if (body.display_type !== undefined) changes.display_type = body.display_type;
    if (body.visibility !== undefined) changes.visibility = body.visibility;
    if (body.purpose !== undefined) changes.purpose = body.purpose;
    if (body.inputs !== undefined) changes.inputs = JSON.stringify(body.inputs);
    if (body.code !== undefined) changes.code = body.code;
    // Whoever changes what a run does (the code, or the declared inputs and their defaults, which
    // the code reads) vouches for it: runs act with at most that writer's rights, read at each run.
    // Name, description, display_type, visibility and purpose change nothing a run does.
    if (body.code !== undefined || body.inputs !== undefined) Object.assign(changes, await writerColumns(db, writer));
    const row = await repo.updateSnippetIf(db, scope.workspaceId, id, revision, false, changes);
    return row ? toSnippet(row) : explainMiss(scope, id, revision);
  }

  /**
   * DELETE (archive: archived_at set) and :undelete (active again). A snippet already in the
   * wanted state is returned as it is, when the etag matches.
   */
  async function setArchived(scope: WorkspaceScope, id: string, revision: number | null, archive: boolean): Promise<SnippetT> {
    if (!isId('snippet', id)) throw notFound('snippet');
    const now = clock.now();
    const row = await repo.updateSnippetIf(db, scope.workspaceId, id, revision, !archive, { archived_at: archive ? now : null, updated_at: now });
    if (row) return toSnippet(row);
    const current = await findOr404(db, scope, id);
    if (revision !== null && current.revision !== revision) throw etagMismatch(`snippet ${id}`, current.revision);
    return toSnippet(current);
  }

  /** Counts the run against the daily quota, in the admission transaction; the charge can be refunded. */
  async function admit(tx: Executor, scope: WorkspaceScope): Promise<RateCharge | null> {
    await assertWorkspaceActive(tx, scope.workspaceId);
    return quotas.enforce(tx, { workspaceId: scope.workspaceId }, 'snippets/runs');
  }

  /**
   * Runs `code` as `role` in the scope's workspace; the run's credential lives exactly as long as
   * the run. A run the sandbox refuses (busy, shutting down) gives its quota `charge` back. The
   * result has every secret value the run read masked.
   */
  async function sandboxRun(
    scope: WorkspaceScope, role: Role, code: string, inputs: Record<string, JsonValue>, overrides: RunOverridesT, ctx: RunContext, charge: RateCharge | null,
  ): Promise<{ result: RunResult; secretDerived: boolean }> {
    const credential = credentials.mint({ workspaceId: scope.workspaceId, role, actorId: scope.actorId });
    const mask = new SecretMask();
    try {
      const timeoutMs = overrides.timeout_ms ?? DEFAULT_TIMEOUT_MS;
      const result = await runner.run({
        code, inputs, tenant: scope.workspaceId, limits: { wallMs: timeoutMs, cpuMs: timeoutMs },
        bridge: runBridge(ctx.dispatch, credential.token, scope.workspaceId, ctx.requestId, mask),
      });
      return { result: mask.result(result), secretDerived: mask.read };
    } catch (err) {
      // The refusal is the answer: a refund that fails (the database gone) leaves one run over-counted.
      await quotas.refund(db, charge).catch(() => undefined);
      throw err;
    } finally {
      credential.revoke();
    }
  }

  /** Admits and runs a stored snippet; the caller records the outcome with recordRun. */
  async function runSnippet(scope: WorkspaceScope, id: string, body: RunSnippetBodyT, ctx: RunContext): Promise<FinishedRun> {
    if (!isId('snippet', id)) throw notFound('snippet');
    const startedAt = clock.now();
    const admitted = await db.transaction().execute(async (tx) => {
      const row = await findOr404(tx, scope, id);
      if (row.archived_at !== null) throw archivedError(id);
      const resolved = resolveInputs(JSON.parse(row.inputs) as InputDeclarationT[], (body.inputs ?? {}) as Record<string, unknown>);
      // The last writer's rights now, read in this transaction: none means the run fails uncounted.
      const rights = await writerRights(tx, row);
      const charge = rights.ok ? await admit(tx, scope) : null;
      return { snippet: row, inputs: resolved, rights, charge };
    });
    const { snippet, inputs, rights } = admitted;
    const overrides = body.overrides ?? {};
    const source = body.source ?? 'manual';
    if (!rights.ok) return { snippet, scope, source, inputs, overrides, startedAt, result: writerUnauthorized(rights.message, rights.details), secretDerived: false };
    // Never more than the runner, nor than the last writer has now.
    const role = lowerRole(scope.role, rights.role);
    const { result, secretDerived } = await sandboxRun(scope, role, snippet.code, inputs, overrides, ctx, admitted.charge);
    return { snippet, scope, source, inputs, overrides, startedAt, result, secretDerived };
  }

  async function recordRun(tx: Executor, run: FinishedRun): Promise<SnippetRunT> {
    const { result } = run;
    const row: repo.SnippetRunRow = {
      id: newId('snippetRun'),
      workspace_id: run.snippet.workspace_id,
      snippet_id: run.snippet.id,
      agent_session_id: run.snippet.agent_session_id,
      agent_turn_id: run.snippet.agent_turn_id,
      state: stateOf(result),
      source: run.source,
      run_by: run.scope.actorId,
      snippet_revision: run.snippet.revision,
      inputs: JSON.stringify(run.inputs),
      overrides: JSON.stringify(run.overrides),
      output: result.ok ? JSON.stringify(result.output) : null,
      error: result.ok ? null : JSON.stringify(result.error),
      logs: JSON.stringify(result.logs),
      cpu_time_ms: result.stats.cpu_time_ms,
      wall_time_ms: result.stats.wall_time_ms,
      heap_used_bytes: result.stats.heap_used_bytes,
      request_count: result.stats.request_count,
      secret_derived: run.secretDerived ? 1 : 0,
      created_at: run.startedAt,
    };
    // Deleting the workspace removes its snippets, also while one of them runs: then there is nothing to record into.
    if (!(await repo.findSnippet(tx, row.workspace_id, row.snippet_id))) throw notFound('snippet');
    await repo.insertRun(tx, row);
    return toRun(row, true, run.scope.role);
  }

  /** Runs code without storing anything (the run still counts against the daily quota). */
  async function execute(scope: WorkspaceScope, body: ExecuteBodyT, ctx: RunContext): Promise<ExecuteResultT> {
    // The inputs go to the sandbox as given: its bounds (depth first, linearly, then size) are a 400 here.
    const checked = inputsProblem(body.inputs ?? {}, MAX_RUN_INPUT_DEPTH);
    if ('problem' in checked) {
      throw invalidArgument(`the inputs ${checked.problem}`, 'INVALID_INPUTS', [{ field: 'body.inputs', description: `the inputs ${checked.problem}` }]);
    }
    const charge = await db.transaction().execute((tx) => admit(tx, scope));
    // Nothing is stored, and the answer goes to the caller whose rights the code ran with: shown whole.
    const { result } = await sandboxRun(scope, scope.role, body.code, (body.inputs ?? {}) as Record<string, JsonValue>, body.overrides ?? {}, ctx, charge);
    return result.ok
      ? { output: result.output, error: null, logs: result.logs, stats: result.stats }
      : { output: null, error: result.error, logs: result.logs, stats: result.stats };
  }

  async function listRuns(scope: WorkspaceScope, id: string, query: ListRunsQueryT): Promise<Page<SnippetRunT>> {
    await findOr404(db, scope, id);
    const full = query.view === 'full';
    const filters = { state: query.state, view: query.view ?? 'basic' };
    const page = cursors.request(query, scope.workspaceId, { snippet: id, ...filters });
    const rows = await repo.listRuns(db, id, query.state, full, page);
    return cursors.page(rows, page, scope.workspaceId, { snippet: id, ...filters }, (row) => toRun(row, full, scope.role));
  }

  async function getRun(scope: WorkspaceScope, id: string, runId: string): Promise<SnippetRunT> {
    const row = isId('snippet', id) && isId('snippetRun', runId) ? await repo.findRun(db, scope.workspaceId, id, runId) : undefined;
    if (!row) throw notFound('snippet run');
    return toRun(row, true, scope.role);
  }

  /** For idempotent replays of POST …/runs: the run recorded under the key, as `scope` may see it. */
  async function loadRun(scope: WorkspaceScope, snippetId: string, runId: string): Promise<SnippetRunT | null> {
    const row = await repo.findRun(db, scope.workspaceId, snippetId, runId);
    return row ? toRun(row, true, scope.role) : null;
  }

  return {
    toSnippet, createSnippet, loadCreated, getSnippet, listSnippets, updateSnippet, setArchived,
    runSnippet, recordRun, execute, listRuns, getRun, loadRun,
  };
}

export type SnippetService = ReturnType<typeof createSnippetService>;
