// Error reasons are one closed set (src/platform/reasons.ts) and the OpenAPI document says which
// ones each operation answers: every `reason X` an operation's description (or a response's) names
// is in the set, the Error schema lists the set, and every reason of the set is named by some
// operation or is global (answered by the shared mechanics of every route).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GLOBAL_REASONS, REASONS, type Reason } from '../src/platform/reasons.js';
import { startTestApp, type TestApp } from './harness.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
/** `reason X`, `reasons X, Y or Z`, `reason X/Y` */
const MENTION = /\breasons? ([A-Z][A-Z0-9_]+(?:(?:, | or | and |\/)[A-Z][A-Z0-9_]+)*)/g;

/**
 * Reasons of the set that no operation names yet: the debt of per-route declarations, named here
 * so that it only shrinks (a reason that an operation starts naming must leave this list).
 */
const NOT_YET_DECLARED: readonly Reason[] = [
  // (UPSTREAM_*, ROUTE_HAS_NO_SERVICE, TOO_MANY_STREAMS: the preview router's, not an API route's; its CLUSTER_UNREACHABLE is also the install logs' route's)
  'AGENT_ARCHIVED', 'AGENT_NOT_FOUND', 'ALIAS_TARGET_INVALID', 'ALREADY_CANCELING', 'ALREADY_MEMBER',
  'APPROVAL_NOT_PENDING', 'AUDIT_UNAVAILABLE', 'BOOTSTRAP_NOT_ACTIVE', 'CLUSTER_HAS_MACHINES', 'CLUSTER_NAME_TAKEN',
  'CLUSTER_NOT_ACTIVE', 'CLUSTER_PROVIDER_UNSUPPORTED', 'CREDENTIAL_UNAVAILABLE',
  'DUPLICATE_AUTHORIZATION', 'EMAIL_NOT_ALLOWED', 'EMAIL_TAKEN', 'HOSTNAME_TAKEN', 'HOST_NOT_FOUND',
  'INPUT_SCHEMA_UNUSABLE', 'INVALID_EMAIL', 'INVALID_EXPIRY', 'INVALID_INPUTS', 'INVALID_KUBECONFIG',
  'INVALID_PASSWORD', 'JOIN_TOKEN_REJECTED', 'LAST_OWNER', 'MACHINE_CREDENTIAL_REQUIRED', 'MACHINE_CREDENTIAL_REVOKED',
  'MACHINE_DELETED', 'MACHINE_DELETING', 'MACHINE_STATE', 'MODEL_NOT_ALLOWED', 'NESTED_AGENT_TURN',
  'NESTED_SNIPPET_RUN', 'NESTING_TOO_DEEP', 'NOTHING_TO_CANCEL', 'NOT_A_SESSION', 'NO_ENABLED_VERSION',
  'OFFER_ARCHIVED', 'OFFER_IN_USE', 'OFFER_NOT_REDEEMABLE', 'ONE_OF_EMAIL_USER_ID', 'OWNER_PROTECTED',
  'PAYMENT_PROVIDER_UNAVAILABLE', 'RENDER_NOT_DEPLOYED', 'RENDER_NOT_FOUND', 'ROUTES_UNAVAILABLE',
  'ROUTE_HAS_NO_SERVICE', 'SECRET_DELETED', 'SECRET_NAME_TAKEN', 'SECRET_NOT_DELETED', 'SECRET_PURGE_DUE',
  'SECRET_REF_FORBIDDEN', 'SECRET_REF_INVALID', 'SECRET_REF_NOT_ALLOWED', 'SESSION_NOT_YOURS', 'SIGNUP_CLOSED',
  'SLUG_TAKEN', 'TOOL_READ_ONLY', 'TOO_MANY_STREAMS', 'TURN_ENDED', 'TURN_NOT_WAITING', 'UNKNOWN_TIER',
  'UPSTREAM_TIMEOUT', 'UPSTREAM_UNREACHABLE', 'USER_CODE_THROTTLED', 'VALUES_INVALID', 'VALUES_TOO_LARGE',
  'VALUE_LOCKED', 'VALUE_TOO_LARGE', 'VALUE_UNREADABLE', 'VERSION_DISABLED', 'WEBHOOK_SIGNATURE_INVALID',
  'WRONG_PHASE',
];

function reasonsNamedIn(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(MENTION)) out.push(...m[1]!.split(/, | or | and |\//));
  return out;
}

describe('error reasons', () => {
  let t: TestApp;
  let doc: any;
  before(async () => {
    t = await startTestApp();
    const res = await t.request('GET', '/v1/openapi.json');
    assert.equal(res.status, 200);
    doc = res.body;
  });
  after(() => t.close());

  /** reason -> the operations that name it */
  function declared(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const texts = [op.description ?? '', ...Object.values<any>(op.responses ?? {}).map((r) => r.description ?? '')];
        for (const reason of texts.flatMap(reasonsNamedIn)) out.set(reason, [...(out.get(reason) ?? []), `${method.toUpperCase()} ${path}`]);
      }
    }
    return out;
  }

  test('the Error schema lists the closed set of reasons', () => {
    assert.deepEqual(doc.components.schemas.Error.properties.error.properties.reason.enum, [...REASONS]);
  });

  test('every reason an operation names is in the closed set', () => {
    const unknown = [...declared()].filter(([reason]) => !(REASONS as readonly string[]).includes(reason)).map(([r, ops]) => `${r} (${ops.join(', ')})`);
    assert.deepEqual(unknown, []);
  });

  test('every reason of the set is global or named by some operation; the list of undeclared ones only shrinks', () => {
    const named = declared();
    const undeclared = REASONS.filter((r) => !GLOBAL_REASONS.includes(r) && !named.has(r)).sort();
    assert.deepEqual(undeclared, [...NOT_YET_DECLARED], 'declare these in a route\'s description (`reason X`), or remove them from NOT_YET_DECLARED');
  });
});
