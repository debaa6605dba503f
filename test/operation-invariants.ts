// The rules of spec 2.1 and API.md section 5 that hold for every operation in every state; tests
// call this on each state an operation passes through.
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { OPERATION_DOCUMENT_SCHEMAS, OPERATION_TYPES } from '../src/modules/operations/operations.schemas.js';

// The OpenAPI document's variant of each workflow's metadata and response (one per `type`):
// every operation a test sees must match the variant its type maps to, so the document cannot
// promise fields a workflow does not set.
const ajv = new Ajv2020({ strict: false, allErrors: true });
const variantCheck = new Map<string, ReturnType<typeof ajv.compile>>();
function variantOf(union: 'OperationMetadata' | 'OperationResult', type: string) {
  const key = `${union}:${type}`;
  let check = variantCheck.get(key);
  if (!check) {
    const mapping = (OPERATION_DOCUMENT_SCHEMAS[union] as { discriminator: { mapping: Record<string, string> } }).discriminator.mapping;
    const name = mapping[type]!.split('/').pop()!;
    check = ajv.compile(OPERATION_DOCUMENT_SCHEMAS[name] as object);
    variantCheck.set(key, check);
  }
  return check;
}
function assertVariant(union: 'OperationMetadata' | 'OperationResult', value: unknown, type: string, where: string) {
  // Workflows that tests register themselves (`test.*`) have no variant in the document.
  if (!OPERATION_TYPES.includes(type)) return;
  const check = variantOf(union, type);
  assert.ok(check(value), `${where}: ${union} does not match its documented variant: ${JSON.stringify(check.errors)} in ${JSON.stringify(value)}`);
}

const PREFIX: Record<string, string> = {
  install: 'inst_', repository_change_request: 'rcr_', repository: 'repo_', workspace: 'ws_', machine: 'mch_', cluster: 'clu_', package: 'pkg_',
};

export function assertOperationInvariants(op: any, opts: { publicUrl?: string; listItem?: boolean } = {}): void {
  const where = `operation ${op.id} (${op.state})`;
  assert.match(op.id, /^op_[0-9a-z]{26}$/, where);
  assert.ok(op.id.length <= 53);
  assert.equal(op.organization_id, null, where);
  assert.ok(op.workspace_id === null || /^ws_/.test(op.workspace_id), where);
  assert.ok(op.owner_id.startsWith(PREFIX[op.owner_type]!), `${where}: owner_id prefix matches owner_type`);
  assert.ok(['RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'].includes(op.state), where);
  assert.equal(op.done, op.state !== 'RUNNING', `${where}: done iff terminal`);
  if (opts.publicUrl) assert.equal(op.html_url, `${opts.publicUrl}/operations/${op.id}`);
  assert.equal(typeof op.metadata.type, 'string', where);
  assert.ok('cluster_id' in op.metadata, `${where}: metadata has cluster_id`);
  assertVariant('OperationMetadata', op.metadata, op.metadata.type, where);
  if (op.state === 'SUCCEEDED') {
    assert.ok(op.response && typeof op.response === 'object', `${where}: response set`);
    assert.equal(op.response.type, op.metadata.type, `${where}: response discriminated by type`);
    assert.ok('cluster_id' in op.response, `${where}: response has cluster_id`);
    assertVariant('OperationResult', op.response, op.metadata.type, where);
  } else {
    assert.equal(op.response, null, `${where}: response only when SUCCEEDED`);
  }
  if (op.state === 'FAILED' || op.state === 'CANCELLED') {
    assert.equal(typeof op.error?.message, 'string', `${where}: error.message`);
    assert.ok(op.error.message.length > 0);
  } else {
    assert.equal(op.error, null, `${where}: error only when FAILED or CANCELLED`);
  }
  if (op.last_error !== null) {
    assert.equal(typeof op.last_error.message, 'string');
    assert.equal(typeof op.last_error.step_name, 'string');
  }
  assert.ok(Number.isInteger(op.started_at) && op.started_at >= 0);
  if (op.done) assert.ok(Number.isInteger(op.completed_at) && op.completed_at >= op.started_at, `${where}: completed_at`);
  else assert.equal(op.completed_at, null, `${where}: completed_at null while running`);
  if (opts.listItem) {
    assert.equal(op.steps, undefined, 'list items omit steps');
  } else {
    assert.ok(Array.isArray(op.steps), `${where}: steps`);
    for (const step of op.steps) {
      assert.equal(typeof step.name, 'string');
      assert.ok(['pending', 'running', 'completed', 'failed', 'skipped'].includes(step.status));
      assert.equal(typeof step.retryable, 'boolean');
      assert.equal(typeof step.skippable, 'boolean');
      if (step.status === 'pending') assert.equal(step.started_at, undefined);
      if (step.status === 'completed') {
        assert.ok(Number.isInteger(step.started_at) && Number.isInteger(step.completed_at));
        assert.equal(step.error_message, undefined, 'a completed step carries no error');
      }
    }
    if (op.state === 'SUCCEEDED') assert.ok(op.steps.every((s: any) => s.status === 'completed' || s.status === 'skipped'));
  }
}
