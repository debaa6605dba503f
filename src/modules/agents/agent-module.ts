// Builds the agents module's services (API.md 8.6) and registers the job that runs turns.
import type { Config } from '../../config.js';
import type { Db, Dialect } from '../../db/database.js';
import type { ModelProvider, ModelProviderName } from '../../drivers/models/driver.js';
import { createModelProviders, registerLocal } from '../../drivers/models/registry.js';
import { createLocalModelProvider } from '../../drivers/models/local.js';
import type { Notifier } from '../../jobs/notifier.js';
import type { JobHandler } from '../../jobs/worker.js';
import type { Keyring } from '../../platform/keyring.js';
import type { CursorCodec } from '../../platform/pagination.js';
import type { QuotaService } from '../quotas/quotas.service.js';
import type { InProcessApi } from '../../platform/in-process-api.js';
import type { RunCredentials } from '../snippets/snippet-bridge.js';
import type { SnippetRunner } from '../snippets/snippet-runner.js';
import { createEventLog } from './agent-events.js';
import { createApprovalService } from './agent-approvals.service.js';
import { createTurnRunner } from './agent-runner.js';
import { createAgentTools } from './agent-tools.js';
import { createTurnService } from './agent-turns.service.js';
import { createAgentService } from './agents.service.js';
import { StreamRegistry } from './event-stream.js';
import { createSpendReservations } from './spend-reservations.js';
import { createTurnMoves } from './turn-moves.js';

export interface AgentModuleDeps {
  db: Db;
  dialect: Dialect;
  cursors: CursorCodec;
  notifier: Notifier;
  quotas: QuotaService;
  keyring: Keyring;
  config: Config;
  snippetRunner: SnippetRunner;
  runCredentials: RunCredentials;
  /** serves the platform.request calls of agent tool runs */
  api: InProcessApi;
  jobHandlers: Map<string, JobHandler>;
}

export function createAgentModule(deps: AgentModuleDeps) {
  const { db, dialect, cursors, notifier, quotas, config } = deps;
  const agentEvents = createEventLog({ db, notifier });
  const spend = createSpendReservations({ dialect, quotas });
  const moves = createTurnMoves({ dialect, events: agentEvents, notifier, spend });
  const agents = createAgentService({ db, cursors, publicUrl: config.publicUrl, agents: config.agents });
  const agentTurns = createTurnService({ db, dialect, cursors, notifier, quotas, agents, events: agentEvents, moves, config: config.agents });
  const agentApprovals = createApprovalService({ db, dialect, cursors, agents, moves });
  /** model providers by name (tests may replace one) */
  const modelProviders: Map<ModelProviderName, ModelProvider> = createModelProviders(config.agents);
  registerLocal(modelProviders, createLocalModelProvider({ testHooks: config.testHooks }));
  const tools = createAgentTools({ runner: deps.snippetRunner, credentials: deps.runCredentials, dispatch: () => (options) => deps.api.inject(options) });
  deps.jobHandlers.set('agent_turn', createTurnRunner({
    db, dialect, notifier, events: agentEvents, moves, tools, providers: modelProviders, config: config.agents, keyring: deps.keyring, spend,
    backoffScale: config.jobs.backoffScale,
  }));
  return { agents, agentTurns, agentApprovals, agentEvents, modelProviders, agentStreams: new StreamRegistry() };
}
