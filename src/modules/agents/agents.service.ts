// Agents and sessions (API.md 8.6): admins manage agents, members use them; a session is its
// creator's (another member gets 404; admins and owners may read it, not post to it). Usage
// summaries of a page of agents or sessions come from one grouped statement.
import type { Db, Executor } from '../../db/database.js';
import { requireRole, roleAtLeast, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, fieldInvalid, notFound } from '../../platform/errors.js';
import { etagMismatch, etagOf } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import type { AgentsConfig } from '../../config-agents.js';
import { recordAuditEvent } from '../audit/audit.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import * as repo from './agents.repo.js';
import { summedUsage } from './agent-usage.js';
import type {
  AgentT, BudgetPeriod, CreateAgentBodyT, ModelPolicyT, PatchAgentBodyT, SessionState, SessionT, WritePolicy,
} from './agents.schemas.js';
import type { ModelProviderName } from '../../drivers/models/driver.js';

/** An agent's model policy with its defaults filled in, as stored. */
export interface StoredModelPolicy {
  provider: ModelProviderName;
  default_model: string;
  allowed_models: string[];
  credential_secret_id: string | null;
  max_turn_budget_cents: number | null;
  max_budget_cents: number | null;
  budget_period: BudgetPeriod;
}

export const modelPolicyOf = (row: repo.AgentRow): StoredModelPolicy => JSON.parse(row.model_policy) as StoredModelPolicy;
export const writePolicyOf = (row: repo.AgentRow): WritePolicy => (JSON.parse(row.tool_policy) as { writes: WritePolicy }).writes;

export const sessionStateOfTurn = (turnState: string): SessionState => (turnState === 'QUEUED' || turnState === 'RUNNING' ? 'ACTIVE' : (turnState as SessionState));

export function createAgentService(deps: { db: Db; cursors: CursorCodec; publicUrl: string; agents: AgentsConfig }) {
  const { db, cursors, publicUrl } = deps;

  function toAgent(row: repo.AgentRow, sums: repo.UsageSums | undefined): AgentT {
    return {
      id: row.id, workspace_id: row.workspace_id, organization_id: null, name: row.name, description: row.description,
      instructions: row.instructions, capabilities: JSON.parse(row.capabilities) as AgentT['capabilities'],
      model_policy: modelPolicyOf(row), tool_policy: { writes: writePolicyOf(row) }, state: row.state as AgentT['state'], origin: 'USER',
      created_by: row.created_by, usage_summary: summedUsage(sums), html_url: `${publicUrl}/agents/${row.id}`,
      created_at: row.created_at, updated_at: row.updated_at, archived_at: row.archived_at, etag: etagOf(row.revision),
    };
  }

  function toSession(row: repo.SessionRow, sums: repo.UsageSums | undefined): SessionT {
    return {
      id: row.id, workspace_id: row.workspace_id, organization_id: null, agent_id: row.agent_id,
      state: (row.archived === 1 ? 'ARCHIVED' : row.state) as SessionState, origin: row.origin as SessionT['origin'], title: row.title,
      created_by: row.created_by, usage_summary: summedUsage(sums), html_url: `${publicUrl}/agent_sessions/${row.id}`,
      created_at: row.created_at, updated_at: row.updated_at, etag: etagOf(row.revision),
    };
  }

  async function usageOf(column: 'agent_id' | 'session_id', ids: string[]): Promise<Map<string, repo.UsageSums>> {
    return new Map((await repo.usageBy(db, column, ids)).map((r) => [r.key, r]));
  }

  /** The model policy of a create or patch, defaults filled in; a credential secret must be the workspace's. */
  async function storedPolicy(executor: Executor, workspaceId: string, given: ModelPolicyT | undefined): Promise<StoredModelPolicy> {
    const provider = given?.provider ?? deps.agents.provider;
    const policy: StoredModelPolicy = {
      provider,
      // model_policy requires default_model when given; without one, the operator's provider and model
      default_model: given?.default_model ?? deps.agents.defaultModel,
      allowed_models: given?.allowed_models ?? [],
      credential_secret_id: given?.credential_secret_id ?? null,
      max_turn_budget_cents: given?.max_turn_budget_cents ?? null,
      max_budget_cents: given?.max_budget_cents ?? null,
      budget_period: given?.budget_period ?? 'MONTH',
    };
    if (policy.allowed_models.length > 0 && !policy.allowed_models.includes(policy.default_model)) {
      throw fieldInvalid('body.model_policy.default_model', 'must be one of allowed_models', 'MODEL_NOT_ALLOWED');
    }
    const secretId = policy.credential_secret_id;
    if (secretId !== null) {
      const found = isId('secret', secretId)
        ? await repo.findWorkspaceSecretId(executor, workspaceId, secretId)
        : undefined;
      if (!found) throw fieldInvalid('body.model_policy.credential_secret_id', 'must name a secret of this workspace (sec_...)');
    }
    return policy;
  }

  async function findAgentOr404(executor: Executor, scope: WorkspaceScope, id: string): Promise<repo.AgentRow> {
    const row = isId('agent', id) ? await repo.findAgent(executor, scope.workspaceId, id) : undefined;
    if (!row) throw notFound('agent');
    return row;
  }

  async function createAgent(scope: WorkspaceScope, body: CreateAgentBodyT, tx: Executor): Promise<AgentT> {
    requireRole(scope, 'admin');
    await assertWorkspaceActive(tx, scope.workspaceId);
    const now = clock.now();
    const row: repo.AgentRow = {
      id: newId('agent'), workspace_id: scope.workspaceId, name: body.name, description: body.description ?? null, instructions: body.instructions,
      capabilities: JSON.stringify(body.capabilities), model_policy: JSON.stringify(await storedPolicy(tx, scope.workspaceId, body.model_policy)),
      tool_policy: JSON.stringify({ writes: body.tool_policy?.writes ?? 'APPROVAL_REQUIRED' }), state: 'ENABLED', origin: 'USER',
      created_by: scope.actorId, created_at: now, updated_at: now, archived_at: null, revision: 1,
    };
    await repo.insertAgent(tx, row);
    await recordAuditEvent(tx, scope, { action: 'agent.create', resourceType: 'agent', resourceId: row.id, metadata: { name: row.name } });
    return toAgent(row, undefined);
  }

  async function loadAgent(workspaceId: string, id: string): Promise<AgentT | null> {
    const row = await repo.findAgent(db, workspaceId, id);
    return row ? toAgent(row, (await usageOf('agent_id', [id])).get(id)) : null;
  }

  async function getAgent(scope: WorkspaceScope, id: string): Promise<AgentT> {
    const row = await findAgentOr404(db, scope, id);
    return toAgent(row, (await usageOf('agent_id', [id])).get(id));
  }

  async function listAgents(scope: WorkspaceScope, query: PageQueryT & { state?: string | undefined }): Promise<Page<AgentT>> {
    const filters = { state: query.state };
    const page = cursors.request(query, scope.workspaceId, filters);
    const rows = await repo.listAgents(db, scope.workspaceId, query.state, page);
    const usage = await usageOf('agent_id', rows.map((r) => r.id));
    return cursors.page(rows, page, scope.workspaceId, filters, (r) => toAgent(r, usage.get(r.id)));
  }

  async function explainAgentMiss(scope: WorkspaceScope, id: string, revision: number | null): Promise<never> {
    const current = await findAgentOr404(db, scope, id);
    if (revision !== null && current.revision !== revision) throw etagMismatch(`agent ${id}`, current.revision);
    throw new ApiError('FAILED_PRECONDITION', `agent ${id} changed while it was written; retry`, { reason: 'CONFLICT' });
  }

  async function updateAgent(scope: WorkspaceScope, id: string, revision: number | null, body: PatchAgentBodyT): Promise<AgentT> {
    requireRole(scope, 'admin');
    const current = await findAgentOr404(db, scope, id);
    const changes: Partial<repo.AgentRow> = { updated_at: clock.now() };
    if (body.name !== undefined) changes.name = body.name;
    if (body.description !== undefined) changes.description = body.description;
    if (body.instructions !== undefined) changes.instructions = body.instructions;
    if (body.capabilities !== undefined) changes.capabilities = JSON.stringify(body.capabilities);
    if (body.model_policy !== undefined) changes.model_policy = JSON.stringify(await storedPolicy(db, scope.workspaceId, body.model_policy));
    if (body.tool_policy !== undefined) changes.tool_policy = JSON.stringify({ writes: body.tool_policy.writes ?? writePolicyOf(current) });
    const row = await db.transaction().execute(async (tx) => {
      const updated = await repo.updateAgentIf(tx, scope.workspaceId, id, revision, changes);
      if (updated) await recordAuditEvent(tx, scope, { action: 'agent.update', resourceType: 'agent', resourceId: id, metadata: { fields: Object.keys(body).sort().join(',') } });
      return updated;
    });
    if (!row) return explainAgentMiss(scope, id, revision);
    return toAgent(row, (await usageOf('agent_id', [id])).get(id));
  }

  /** DELETE archives (takes no new turns; running ones finish); :undelete restores. */
  async function setAgentArchived(scope: WorkspaceScope, id: string, revision: number | null, archive: boolean): Promise<AgentT> {
    requireRole(scope, 'admin');
    if (!isId('agent', id)) throw notFound('agent');
    const now = clock.now();
    const row = await db.transaction().execute(async (tx) => {
      const current = await findAgentOr404(tx, scope, id);
      if (revision !== null && current.revision !== revision) throw etagMismatch(`agent ${id}`, current.revision);
      if ((current.state === 'ARCHIVED') === archive) return current;
      const updated = await repo.updateAgentIf(tx, scope.workspaceId, id, current.revision, {
        state: archive ? 'ARCHIVED' : 'ENABLED', archived_at: archive ? now : null, updated_at: now,
      });
      await recordAuditEvent(tx, scope, { action: archive ? 'agent.delete' : 'agent.undelete', resourceType: 'agent', resourceId: id, metadata: { name: current.name } });
      return updated ?? current;
    });
    return toAgent(row, (await usageOf('agent_id', [id])).get(id));
  }

  // ---- sessions ----

  const canRead = (scope: WorkspaceScope, row: repo.SessionRow) => row.created_by === scope.actorId || roleAtLeast(scope.role, 'admin');

  /** The session as the caller may see it: theirs, or any when they are an admin or owner; else 404. */
  async function readableSession(executor: Executor, scope: WorkspaceScope, id: string): Promise<repo.SessionRow> {
    const row = isId('agentSession', id) ? await repo.findSession(executor, scope.workspaceId, id) : undefined;
    if (!row || !canRead(scope, row)) throw notFound('agent session');
    return row;
  }

  /** The session when the caller is its creator: admins who may only read it get 403, others 404. */
  async function ownSession(executor: Executor, scope: WorkspaceScope, id: string): Promise<repo.SessionRow> {
    const row = await readableSession(executor, scope, id);
    if (row.created_by !== scope.actorId) {
      throw new ApiError('PERMISSION_DENIED', `agent session ${id} is ${row.created_by}'s: admins may read it, only its creator posts to it`, { reason: 'SESSION_NOT_YOURS' });
    }
    return row;
  }

  async function createSession(scope: WorkspaceScope, body: { agent_id: string; title?: string | undefined }, origin: SessionT['origin'], tx: Executor): Promise<SessionT> {
    await assertWorkspaceActive(tx, scope.workspaceId);
    const agent = isId('agent', body.agent_id) ? await repo.findAgent(tx, scope.workspaceId, body.agent_id) : undefined;
    if (!agent) throw fieldInvalid('body.agent_id', 'must name an agent of this workspace (agt_...)', 'AGENT_NOT_FOUND');
    if (agent.state === 'ARCHIVED') throw new ApiError('FAILED_PRECONDITION', `agent ${agent.id} is archived; restore it first (:undelete)`, { reason: 'AGENT_ARCHIVED' });
    const now = clock.now();
    const row: repo.SessionRow = {
      id: newId('agentSession'), workspace_id: scope.workspaceId, agent_id: agent.id, state: 'ACTIVE', archived: 0, origin,
      title: body.title ?? null, created_by: scope.actorId, event_seq: 0, created_at: now, updated_at: now, revision: 1,
    };
    await repo.insertSession(tx, row);
    return toSession(row, undefined);
  }

  async function loadSession(workspaceId: string, id: string): Promise<SessionT | null> {
    const row = await repo.findSession(db, workspaceId, id);
    return row ? toSession(row, (await usageOf('session_id', [id])).get(id)) : null;
  }

  async function getSession(scope: WorkspaceScope, id: string): Promise<SessionT> {
    const row = await readableSession(db, scope, id);
    return toSession(row, (await usageOf('session_id', [id])).get(id));
  }

  async function listSessions(scope: WorkspaceScope, query: PageQueryT & { agent_id?: string | undefined; state?: string | undefined }): Promise<Page<SessionT>> {
    // Members list their own sessions; admins and owners every session of the workspace.
    const filters: repo.SessionFilters = {
      agent_id: query.agent_id, state: query.state, created_by: roleAtLeast(scope.role, 'admin') ? undefined : scope.actorId,
    };
    const page = cursors.request(query, scope.workspaceId, filters as Record<string, unknown>);
    const rows = await repo.listSessions(db, scope.workspaceId, filters, page);
    const usage = await usageOf('session_id', rows.map((r) => r.id));
    return cursors.page(rows, page, scope.workspaceId, filters as Record<string, unknown>, (r) => toSession(r, usage.get(r.id)));
  }

  /** DELETE archives the session (it takes no new turns); :undelete restores it. Only its creator. */
  async function setSessionArchived(scope: WorkspaceScope, id: string, revision: number | null, archive: boolean): Promise<SessionT> {
    const row = await db.transaction().execute(async (tx) => {
      const current = await ownSession(tx, scope, id);
      if (revision !== null && current.revision !== revision) throw etagMismatch(`agent session ${id}`, current.revision);
      if ((current.archived === 1) === archive) return current;
      return (await repo.updateSessionIf(tx, scope.workspaceId, id, current.revision, { archived: archive ? 1 : 0, updated_at: clock.now() })) ?? current;
    });
    return toSession(row, (await usageOf('session_id', [id])).get(id));
  }

  return {
    toAgent, createAgent, loadAgent, getAgent, listAgents, updateAgent, setAgentArchived,
    readableSession, ownSession, createSession, loadSession, getSession, listSessions, setSessionArchived,
  };
}

export type AgentService = ReturnType<typeof createAgentService>;
