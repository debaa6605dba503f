// The agents' settings (API.md 8.6), read by loadConfig (src/config.ts) and nowhere else: which model
// provider agents use by default, where the real providers are and with which key, the price table
// that turns reported tokens into cents, and the bounds of a turn and of an event stream. API keys
// are non-enumerable properties, so a config that reaches a log line or JSON.stringify shows none;
// no message here quotes a key.
import { readFileSync } from 'node:fs';
import { ConfigError } from './config.js';
import { MODEL_PROVIDERS, type ModelEndpoint, type ModelProviderName } from './drivers/models/driver.js';

/** cents per million tokens, input and output */
export interface ModelPrice {
  input: number;
  output: number;
}

export interface AgentsConfig {
  /** the provider of agents that name none (SVC_AGENT_PROVIDER, default local) */
  provider: ModelProviderName;
  /** the model of agents created without a model_policy (SVC_AGENT_MODEL; default by provider) */
  defaultModel: string;
  /** SVC_OPENAI_BASE_URL (default https://api.openai.com/v1) and SVC_OPENAI_API_KEY */
  openai: ModelEndpoint;
  /** SVC_ANTHROPIC_BASE_URL (default https://api.anthropic.com) and SVC_ANTHROPIC_API_KEY */
  anthropic: ModelEndpoint;
  /**
   * SVC_AGENT_PRICES: JSON `{"<model>": [input, output], "*": [input, output]}` in cents per million
   * tokens, or `@/path/to/prices.json`. A model without an entry takes "*". Default `{"*": [300, 1500]}`
   * (a mid-size hosted model), which the local model is priced at too, so budgets can be tried offline.
   */
  prices: Record<string, ModelPrice>;
  /** tool rounds per turn before it fails STEP_LIMIT (SVC_AGENT_STEP_LIMIT, default 20) */
  stepLimit: number;
  /** a turn running longer than this in total fails TIMEOUT (SVC_AGENT_TURN_TIMEOUT_S, default 600) */
  turnTimeoutSeconds: number;
  /** tries of a model call that fails transiently (429, 5xx, a cut stream) before MODEL_UNAVAILABLE (SVC_AGENT_MODEL_TRIES, default 4) */
  modelTries: number;
  /** the most output tokens one model call may take (SVC_AGENT_MAX_OUTPUT_TOKENS, default 4096) */
  maxOutputTokens: number;
  /** an SSE stream sends a comment line this often when idle (SVC_AGENT_STREAM_HEARTBEAT_S, default 15) */
  streamHeartbeatSeconds: number;
  /** an SSE connection ends after this long; the client resumes with Last-Event-ID (SVC_AGENT_STREAM_MAX_S, default 3600) */
  streamMaxSeconds: number;
}

const DEFAULT_MODELS: Record<ModelProviderName, string> = { local: 'local-1', openai: 'gpt-4o-mini', anthropic: 'claude-sonnet-4-6' };

type NumberSetting = (name: string, fallback: number, min: number, max: number) => number;

function endpoint(env: NodeJS.ProcessEnv, prefix: 'OPENAI' | 'ANTHROPIC', fallbackUrl: string, timeoutMs: number): ModelEndpoint {
  const baseUrl = (env[`SVC_${prefix}_BASE_URL`] || fallbackUrl).replace(/\/+$/, '');
  const url = URL.canParse(baseUrl) ? new URL(baseUrl) : null;
  if (!url || !/^https?:$/.test(url.protocol) || url.username || url.password || url.search || url.hash) {
    throw new ConfigError(`SVC_${prefix}_BASE_URL must be an http(s) URL without credentials or query, got "${baseUrl}"`);
  }
  const key = (env[`SVC_${prefix}_API_KEY`] ?? '').trim();
  if (key && !/^[\x21-\x7e]+$/.test(key)) throw new ConfigError(`SVC_${prefix}_API_KEY must be printable ASCII without spaces (its value is not shown)`);
  const result: ModelEndpoint = { baseUrl, apiKey: key || null, timeoutMs };
  Object.defineProperty(result, 'apiKey', { enumerable: false });
  return result;
}

function parsePrices(raw: string | undefined): Record<string, ModelPrice> {
  if (!raw) return { '*': { input: 300, output: 1500 } };
  let text = raw;
  if (raw.startsWith('@')) {
    try {
      text = readFileSync(raw.slice(1), 'utf8');
    } catch (err) {
      throw new ConfigError(`SVC_AGENT_PRICES names a file that cannot be read: ${(err as Error).message}`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError('SVC_AGENT_PRICES must be JSON: {"<model>": [input, output], "*": [input, output]} in cents per million tokens');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError('SVC_AGENT_PRICES must be a JSON object of models');
  const prices: Record<string, ModelPrice> = {};
  for (const [model, pair] of Object.entries(parsed as Record<string, unknown>)) {
    const ok = Array.isArray(pair) && pair.length === 2 && pair.every((n) => typeof n === 'number' && Number.isFinite(n) && n >= 0 && n <= 1e9);
    if (!ok || model.length === 0 || model.length > 120) {
      throw new ConfigError(`SVC_AGENT_PRICES: "${model.slice(0, 120)}" must map to [input, output], two numbers of cents per million tokens (0 to 1e9)`);
    }
    const [input, output] = pair as [number, number];
    prices[model] = { input, output };
  }
  return prices;
}

export function parseAgents(env: NodeJS.ProcessEnv, numberSetting: NumberSetting): AgentsConfig {
  const provider = env.SVC_AGENT_PROVIDER || 'local';
  if (!(MODEL_PROVIDERS as readonly string[]).includes(provider)) {
    throw new ConfigError(`SVC_AGENT_PROVIDER must be one of ${MODEL_PROVIDERS.join(', ')}, got "${provider}"`);
  }
  const name = provider as ModelProviderName;
  const defaultModel = env.SVC_AGENT_MODEL || DEFAULT_MODELS[name];
  if (defaultModel.length > 120) throw new ConfigError('SVC_AGENT_MODEL must be at most 120 characters');
  const timeoutMs = numberSetting('SVC_AGENT_MODEL_TIMEOUT_MS', 120_000, 1000, 3_600_000);
  return {
    provider: name,
    defaultModel,
    openai: endpoint(env, 'OPENAI', 'https://api.openai.com/v1', timeoutMs),
    anthropic: endpoint(env, 'ANTHROPIC', 'https://api.anthropic.com', timeoutMs),
    prices: parsePrices(env.SVC_AGENT_PRICES),
    stepLimit: numberSetting('SVC_AGENT_STEP_LIMIT', 20, 1, 200),
    turnTimeoutSeconds: numberSetting('SVC_AGENT_TURN_TIMEOUT_S', 600, 5, 24 * 3600),
    modelTries: numberSetting('SVC_AGENT_MODEL_TRIES', 4, 1, 20),
    maxOutputTokens: numberSetting('SVC_AGENT_MAX_OUTPUT_TOKENS', 4096, 16, 200_000),
    streamHeartbeatSeconds: numberSetting('SVC_AGENT_STREAM_HEARTBEAT_S', 15, 1, 300),
    streamMaxSeconds: numberSetting('SVC_AGENT_STREAM_MAX_S', 3600, 5, 24 * 3600),
  };
}
