// The model providers by name (API.md 8.6), built from config.agents: `openai` and `anthropic` are
// always there (an agent's model_policy.provider may name either whatever SVC_AGENT_PROVIDER says),
// each loading its adapter and SDK on its first call, so `svc` start-up and the processes that
// never call a hosted model do not pay for them; `local` is registered beside them.
import type { AgentsConfig } from '../../config-agents.js';
import { ModelProviderError, type ModelProvider, type ModelProviderName, type ModelRequest, type ModelStreamEvent } from './driver.js';

/** A provider whose implementation is imported on its first call (again after a failed import). */
function lazyProvider(name: ModelProviderName, load: () => Promise<ModelProvider>): ModelProvider {
  let loaded: Promise<ModelProvider> | null = null;
  async function* stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    let provider: ModelProvider;
    try {
      provider = await (loaded ??= load());
    } catch (err) {
      loaded = null;
      // Not retryable: a missing or broken package stays so until the operator reinstalls.
      throw new ModelProviderError('bad_request', `the ${name} model provider could not be loaded: ${(err as Error).message}`);
    }
    yield* provider.stream(request);
  }
  return { name, stream };
}

export function createModelProviders(config: AgentsConfig): Map<ModelProviderName, ModelProvider> {
  return new Map<ModelProviderName, ModelProvider>([
    ['openai', lazyProvider('openai', async () => (await import('./openai.js')).createOpenAiProvider(config.openai))],
    ['anthropic', lazyProvider('anthropic', async () => (await import('./anthropic.js')).createAnthropicProvider(config.anthropic))],
  ]);
}

/** Registers the offline `local` provider (src/drivers/models/local.ts) beside the hosted ones. */
export function registerLocal(providers: Map<ModelProviderName, ModelProvider>, provider: ModelProvider): void {
  providers.set('local', provider);
}
