// Where a model call's API key comes from (API.md 8.6): the agent's credential secret (bring your
// own key: the enabled latest version of a workspace secret, opened when each call is made, so a
// rotated key takes effect at the next call) or else the operator's key for the provider. The key
// lives in memory for the call only: never in a turn, an event, a log line or an error.
import type { Executor } from '../../db/database.js';
import type { AgentsConfig } from '../../config-agents.js';
import type { ModelProviderName } from '../../drivers/models/driver.js';
import type { Keyring } from '../../platform/keyring.js';
import { ApiError } from '../../platform/errors.js';
import { findSecret } from '../secrets/secrets.service.js';
import { assertReadable, openVersionValue, resolveVersion } from '../secrets/secret-values.js';
import type { StoredModelPolicy } from './agents.service.js';

/** Endpoints that always need a key; self-hosted OpenAI-compatible servers (Ollama, vLLM, llama.cpp) may not. */
const HOSTED = /(^|\.)(openai\.com|anthropic\.com|openrouter\.ai)$/;

function needsKey(provider: ModelProviderName, config: AgentsConfig): boolean {
  if (provider === 'local') return false;
  const endpoint = provider === 'openai' ? config.openai : config.anthropic;
  return provider === 'anthropic' || HOSTED.test(new URL(endpoint.baseUrl).hostname);
}

function operatorKey(provider: ModelProviderName, config: AgentsConfig): string | null {
  if (provider === 'openai') return config.openai.apiKey;
  if (provider === 'anthropic') return config.anthropic.apiKey;
  return null;
}

/** Whether a call could get a key now (admission): the secret is readable, or the operator set one, or none is needed. */
export async function keyAvailability(db: Executor, workspaceId: string, policy: StoredModelPolicy, config: AgentsConfig): Promise<{ ok: true } | { ok: false; message: string }> {
  if (policy.credential_secret_id !== null) {
    const secret = await findSecret(db, workspaceId, policy.credential_secret_id);
    if (!secret) return { ok: false, message: `the agent's credential secret ${policy.credential_secret_id} no longer exists` };
    try {
      assertReadable(secret, await resolveVersion(db, secret, 'latest'));
    } catch (err) {
      if (err instanceof ApiError) return { ok: false, message: `the agent's credential secret ${secret.id} cannot be read: ${err.message}` };
      throw err;
    }
    return { ok: true };
  }
  if (needsKey(policy.provider, config) && operatorKey(policy.provider, config) === null) {
    const setting = policy.provider === 'openai' ? 'SVC_OPENAI_API_KEY' : 'SVC_ANTHROPIC_API_KEY';
    return { ok: false, message: `no API key for ${policy.provider}: the operator sets ${setting}, or the agent names a workspace secret holding one (model_policy.credential_secret_id)` };
  }
  return { ok: true };
}

/** The key of one model call; throws ApiError (FAILED_PRECONDITION) saying why there is none. */
export async function resolveKey(db: Executor, keyring: Keyring, workspaceId: string, policy: StoredModelPolicy, config: AgentsConfig): Promise<string | null> {
  if (policy.credential_secret_id !== null) {
    const secret = await findSecret(db, workspaceId, policy.credential_secret_id);
    if (!secret) throw new ApiError('FAILED_PRECONDITION', `the agent's credential secret ${policy.credential_secret_id} no longer exists`, { reason: 'CREDENTIAL_UNAVAILABLE' });
    const version = await resolveVersion(db, secret, 'latest');
    assertReadable(secret, version);
    return openVersionValue(keyring, version).trim();
  }
  return operatorKey(policy.provider, config);
}
