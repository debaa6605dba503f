// The client can never drift from the API: the committed generated files (the OpenAPI document, the
// command tree the CLI derives from it, and the openapi-typescript types of its typed client) must equal
// what `npm run generate:client` makes from the document the server serves now.
// svc-test: own process: an app built earlier in the same process changes the document a later one
// serves (number fields gain the safe-integer minimum/maximum: some schema object is completed in
// place when an app is built), so this file compares the document of the first app of its process.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { GENERATED_DIR, generateClientFiles } from '../scripts/generate-client.js';
import { commandTree } from '../src/cli/spec.js';

test('src/cli/generated/ matches the served OpenAPI document (run `npm run generate:client` after an API change)', async () => {
  const files = await generateClientFiles();
  assert.deepEqual(Object.keys(files).sort(), ['api.ts', 'commands.json', 'openapi.json']);
  for (const [name, text] of Object.entries(files)) {
    const committed = readFileSync(join(GENERATED_DIR, name), 'utf8');
    assert.ok(committed === text, `src/cli/generated/${name} is stale: run \`npm run generate:client\` and commit the result`);
  }
});

test('the command names the issue lists hold exactly, derived by the one rule', () => {
  const tree = new Map(commandTree().map((r) => [r.name, r.commands.map((c) => c.action)]));
  const expected: Record<string, string[]> = {
    workspaces: ['create', 'list', 'get', 'update', 'delete'],
    'api-tokens': ['create', 'list', 'revoke'],
    clusters: ['create', 'list', 'get', 'delete'],
    packages: ['create', 'list'],
    installs: ['create', 'list', 'get', 'update', 'delete'],
    operations: ['list', 'get', 'wait', 'cancel'],
    // the resources added after the CLI (issues 11-13), by the same rule
    // `secrets access`: the same command as `secret-versions access`, by the document's x-svc-cli-aliases
    secrets: ['create', 'list', 'get', 'update', 'delete', 'undelete', 'access'],
    'secret-versions': ['create', 'list', 'get', 'disable', 'enable', 'destroy', 'access'],
    'audit-events': ['list'],
    plans: ['list'],
    subscriptions: ['get', 'change-tier', 'cancel', 'reactivate', 'list-change-requests', 'get-change-request', 'list-plan-checkouts', 'get-plan-checkout'],
    quotas: ['list'],
    notifications: ['list', 'count-unread', 'mark-read', 'mark-all-read'],
    snippets: ['create', 'list', 'get', 'update', 'archive', 'undelete', 'run', 'list-runs', 'get-run', 'execute-code'],
    // issue 23
    machines: ['create', 'list', 'get', 'update', 'delete', 'suspend', 'resume'],
    // issue 24 (`svc chat` is hand-written over these)
    agents: ['create', 'list', 'get', 'update', 'delete', 'undelete'],
    'agent-sessions': ['create', 'list', 'get', 'delete', 'undelete'],
    'agent-turns': ['create', 'list', 'get', 'respond', 'cancel', 'wait'],
    'approval-requests': ['list', 'get', 'resolve'],
    'agent-events': ['list', 'stream'],
    // issue 25
    offers: ['create', 'list', 'get', 'update', 'delete', 'undelete', 'resolve'],
  };
  for (const action of ['create-worker-bootstrap', 'list-worker-bootstraps', 'get-worker-bootstrap', 'revoke-worker-bootstrap']) expected.clusters!.push(action);
  for (const [resource, actions] of Object.entries(expected)) {
    for (const action of actions) assert.ok(tree.get(resource)?.includes(action), `svc ${resource} ${action}`);
  }
  // Long text fields also come from a file; free-form maps are repeatable key=value flags.
  const flags = (resource: string, action: string) => commandTree().find((r) => r.name === resource)!.commands.find((c) => c.action === action)!.flags;
  const shape = (resource: string, action: string) => flags(resource, action).map((f) => `${f.flag}:${f.type}${f.mapValues ? `/${f.mapValues}` : ''}`);
  for (const [resource, action] of [['secrets', 'create'], ['secret-versions', 'create']] as const) assert.ok(shape(resource, action).includes('value-file:file'), `${resource} ${action}`);
  assert.ok(shape('secrets', 'create').includes('label:map/string'));
  assert.ok(shape('secrets', 'update').includes('version-alias:map/integer'));
  assert.ok(shape('snippets', 'run').includes('input:map/json'));
  assert.ok(shape('snippets', 'execute-code').includes('code-file:file'));
  assert.ok(shape('clusters', 'create').includes('kubeconfig-file:file'));
  assert.ok(!shape('secrets', 'create').includes('name-file:file'), 'short fields have no file twin');
  // Every /v1 operation is a command (plus the aliases the document names), and no two share a name.
  const all = commandTree().flatMap((r) => r.commands.map((c) => `${r.name} ${c.action}`));
  assert.equal(new Set(all).size, all.length);
  const doc = JSON.parse(readFileSync(join(GENERATED_DIR, 'openapi.json'), 'utf8')) as { paths: Record<string, Record<string, { 'x-svc-cli-aliases'?: string[] }>> };
  // The machine agent's calls (x-svc-cli: false) are made by `svc machine join`, not commands of their own.
  const v1 = Object.entries(doc.paths).filter(([p]) => p.startsWith('/v1/')).flatMap(([, ops]) => Object.values(ops))
    .filter((op) => (op as { 'x-svc-cli'?: boolean })['x-svc-cli'] !== false);
  const aliases = v1.flatMap((op) => op['x-svc-cli-aliases'] ?? []);
  assert.deepEqual(aliases, ['secrets access']);
  assert.equal(all.length, v1.length + aliases.length);
});
