// The client can never drift from the API: the committed generated files (the OpenAPI document the
// CLI derives its commands from, and the openapi-typescript types of its typed client) must equal
// what `npm run generate:client` makes from the document the server serves now.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { GENERATED_DIR, generateClientFiles } from '../scripts/generate-client.js';
import { commandTree } from '../src/cli/spec.js';

test('src/cli/generated/ matches the served OpenAPI document (run `npm run generate:client` after an API change)', async () => {
  const files = await generateClientFiles();
  assert.deepEqual(Object.keys(files).sort(), ['api.ts', 'openapi.json']);
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
  };
  for (const [resource, actions] of Object.entries(expected)) {
    for (const action of actions) assert.ok(tree.get(resource)?.includes(action), `svc ${resource} ${action}`);
  }
  // Every /v1 operation is a command, and no two share a name.
  const all = commandTree().flatMap((r) => r.commands.map((c) => `${r.name} ${c.action}`));
  assert.equal(new Set(all).size, all.length);
  const doc = JSON.parse(readFileSync(join(GENERATED_DIR, 'openapi.json'), 'utf8')) as { paths: Record<string, Record<string, unknown>> };
  const v1 = Object.entries(doc.paths).filter(([p]) => p.startsWith('/v1/')).flatMap(([, ops]) => Object.keys(ops));
  assert.equal(all.length, v1.length);
});
