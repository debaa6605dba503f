// The configuration tables of docs/configuration.md against the settings the code reads: every
// environment variable src/config*.ts reads (the only readers of the server's environment) has a row,
// and every row names a variable something reads. Reads are found in the source text:
//   env.NAME, env?.NAME, env['NAME']                     a direct read
//   numberSetting(env, 'NAME', ...), oneOf('NAME', ...)  a quoted name handed to a reader
//   env[`SVC_${prefix}_API_KEY`]                        a name built from a parameter whose type is
//                                                       a union of quoted literals ('OPENAI' | 'ANTHROPIC')
// A quoted string counts when it is a whole variable name (SVC_... or one of the standard names
// below); names inside messages and comments do not.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ROOT as CHECKOUT } from './paths.js';

/** Variables without the SVC_ prefix that the service reads by their usual names. */
const STANDARD = ['PORT', 'HOST', 'DATABASE_URL', 'LOG_LEVEL'];
/**
 * Variables the table documents that src/config*.ts does not read itself, because a library reads
 * them from the environment (e.g. an SDK's standard variables), each with where it is read.
 */
const READ_ELSEWHERE: Record<string, string> = {};

const NAME = `(?:SVC_[A-Z0-9_]*[A-Z0-9]|OTEL_[A-Z0-9_]*[A-Z0-9]|${STANDARD.join('|')})`;

/** The variable names one source text reads. */
export function settingsRead(source: string, file = 'source'): Set<string> {
  const names = new Set<string>();
  for (const m of source.matchAll(/\benv\??\.([A-Z][A-Z0-9_]*)\b/g)) names.add(m[1]!);
  for (const m of source.matchAll(new RegExp(`(['"])(${NAME})\\1`, 'g'))) names.add(m[2]!);
  for (const m of source.matchAll(/\benv\[`([^`]*)`\]/g)) {
    const template = m[1]!;
    let expanded = [template];
    for (const [, param] of template.matchAll(/\$\{(\w+)\}/g)) {
      const union = new RegExp(`\\b${param}\\s*:\\s*((?:'[A-Z0-9_]+'\\s*\\|?\\s*)+)`).exec(source);
      assert.ok(union, `${file}: env[\`${template}\`] is built from ${param}, whose type must be a union of quoted names ('A' | 'B') for this test to know them`);
      const values = [...union[1]!.matchAll(/'([A-Z0-9_]+)'/g)].map((v) => v[1]!);
      expanded = expanded.flatMap((t) => values.map((v) => t.replace(`\${${param}}`, v)));
    }
    for (const name of expanded) names.add(name);
  }
  return names;
}

/** The first column of every table headed `| Variable |` in a markdown text (a cell may name several). */
export function tableNames(markdown: string): Set<string> {
  const names = new Set<string>();
  let inTable = false;
  for (const line of markdown.split('\n')) {
    if (/^\|\s*Variable\s*\|/.test(line)) {
      inTable = true;
      continue;
    }
    if (!line.startsWith('|')) {
      inTable = false;
      continue;
    }
    if (!inTable || /^\|[-\s|:]+\|$/.test(line)) continue;
    const first = line.split('|')[1]!;
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.add(m[1]!);
  }
  return names;
}

const configFiles = readdirSync(join(CHECKOUT, 'src')).filter((f) => /^config.*\.ts$/.test(f));
const read = new Map<string, string>();
for (const f of configFiles) for (const name of settingsRead(readFileSync(join(CHECKOUT, 'src', f), 'utf8'), `src/${f}`)) read.set(name, `src/${f}`);
const documented = tableNames(readFileSync(join(CHECKOUT, 'docs', 'configuration.md'), 'utf8'));

describe('the configuration tables (docs/configuration.md)', () => {
  test('the reader finds every kind of read, and only reads', () => {
    const found = settingsRead(`
      const a = env.SVC_A; const b = env?.SVC_B; const c = env['SVC_C'];
      numberSetting(env, 'SVC_D', 1, 0, 2); oneOf('SVC_E', env.SVC_E, MODES);
      function endpoint(env: NodeJS.ProcessEnv, prefix: 'ONE' | 'TWO') { return env[\`SVC_\${prefix}_KEY\`]; }
      throw new ConfigError('SVC_F must be set'); // SVC_G in a comment
    `);
    assert.deepEqual([...found].sort(), ['SVC_A', 'SVC_B', 'SVC_C', 'SVC_D', 'SVC_E', 'SVC_ONE_KEY', 'SVC_TWO_KEY']);
    assert.throws(() => settingsRead('function f(p: string) { return env[`SVC_${p}_X`]; }'), /union of quoted names/);
    assert.deepEqual([...tableNames('| Variable | Default | Meaning |\n|---|---|---|\n| `SVC_A`, `SVC_B` | `1` | uses `SVC_C` |\n\n| Ask | Answer |\n|---|---|\n| `SVC_D` | no |\n')], ['SVC_A', 'SVC_B']);
  });

  test('the code reads the settings this test knows to look for', () => {
    // a reader that stopped finding reads would pass the next test for nothing
    for (const name of ['PORT', 'DATABASE_URL', 'SVC_SECRET_KEY', 'SVC_SIGNUP', 'SVC_OPENAI_API_KEY', 'SVC_ANTHROPIC_BASE_URL', 'SVC_CHECKOUT_TTL_S', 'SVC_AGENT_STREAM_MAX_S', 'SVC_HCLOUD_TOKEN', 'SVC_OIDC_CLIENT_SECRET']) {
      assert.ok(read.has(name), `${name} is read by src/config*.ts`);
    }
    assert.ok(read.size >= 80, `only ${read.size} settings found`);
  });

  test('every setting the code reads has a row', () => {
    const missing = [...read.keys()].filter((name) => !documented.has(name)).sort();
    assert.deepEqual(missing, [], `read but not in a table of docs/configuration.md: ${missing.map((n) => `${n} (${read.get(n)})`).join(', ')}`);
  });

  test('every row names a setting something reads', () => {
    const stale = [...documented].filter((name) => !read.has(name) && !(name in READ_ELSEWHERE)).sort();
    assert.deepEqual(stale, [], `in docs/configuration.md but read by nothing in src/config*.ts (remove the row, or add it to READ_ELSEWHERE in test/settings-table.test.ts saying who reads it): ${stale.join(', ')}`);
  });
});
