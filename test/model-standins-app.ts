// The app with both model provider stand-ins as its providers: the OpenAI-compatible one and the
// Anthropic one (their base URLs and the Anthropic key in the config), for the turn tests that talk
// to real HTTP providers. And the check that no piece of a key shows in what a person can read.
import assert from 'node:assert/strict';
import { createModelProviders } from '../src/drivers/models/registry.js';
import { ANTHROPIC_STANDIN_KEY, startAnthropicStandin, type AnthropicStandin } from './anthropic-standin.js';
import { startTestApp, type TestApp } from './harness.js';
import { startOpenAiStandin, type OpenAiStandin } from './openai-standin.js';

export interface StandinsApp {
  t: TestApp;
  openai: OpenAiStandin;
  anthropic: AnthropicStandin;
  /** closes the app, then both stand-ins */
  close(): Promise<void>;
}

export async function startAppWithModelStandins(env: Record<string, string>): Promise<StandinsApp> {
  const openai = await startOpenAiStandin();
  const anthropic = await startAnthropicStandin();
  const t = await startTestApp({
    ...env,
    SVC_OPENAI_BASE_URL: openai.baseUrl, SVC_ANTHROPIC_BASE_URL: anthropic.baseUrl, SVC_ANTHROPIC_API_KEY: ANTHROPIC_STANDIN_KEY,
  });
  for (const [name, provider] of createModelProviders(t.config.agents)) t.services.modelProviders.set(name, provider);
  return {
    t, openai, anthropic,
    async close() {
      await t.close();
      await openai.close();
      await anthropic.close();
    },
  };
}

/** Fails when any 8 characters in a row of `key` show in `seen`. */
export function assertNoPieceOf(seen: string, key: string): void {
  for (let i = 0; i + 8 <= key.length; i++) assert.ok(!seen.includes(key.slice(i, i + 8)), `a piece of a key shows: ${key.slice(i, i + 8)}`);
}
