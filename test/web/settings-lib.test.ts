// Unit tests of the settings pages' logic kept free of the DOM (web/src/lib): roles, token expiry
// choices, quota wording and bar bounds, and the page a notification or audit event links to.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { grantable, roleAtLeast } from '../../web/src/lib/roles.js';
import { expiresAt } from '../../web/src/lib/expiry.js';
import { meterBounds, quotaWords } from '../../web/src/lib/quota.js';
import { resourceHref } from '../../web/src/lib/links.js';

test('roles: ordered member < admin < owner; an unknown role has none; grants never exceed the caller', () => {
  assert.equal(roleAtLeast('owner', 'admin'), true);
  assert.equal(roleAtLeast('admin', 'admin'), true);
  assert.equal(roleAtLeast('member', 'admin'), false);
  assert.equal(roleAtLeast(undefined, 'member'), false);
  assert.equal(roleAtLeast('viewer', 'member'), false);
  assert.deepEqual(grantable('admin', ['member', 'admin', 'owner']), [['member', 'Member'], ['admin', 'Admin']]);
  assert.deepEqual(grantable('owner', ['member', 'admin']), [['member', 'Member'], ['admin', 'Admin']]);
  assert.deepEqual(grantable('member', ['member', 'admin']), [['member', 'Member']]);
});

test('token expiry: days from now, never, or a future date within 10 years', () => {
  const now = Date.UTC(2026, 0, 1);
  const s = now / 1000;
  assert.deepEqual(expiresAt('30', '', now), { ok: true, value: s + 30 * 86400 });
  assert.deepEqual(expiresAt('never', '', now), { ok: true, value: undefined });
  assert.deepEqual(expiresAt('date', '2026-03-01T12:00Z', now), { ok: true, value: Date.UTC(2026, 2, 1, 12) / 1000 });
  assert.deepEqual(expiresAt('date', '', now), { ok: false, error: 'pick a date and time' });
  assert.deepEqual(expiresAt('date', '2025-12-31T00:00Z', now), { ok: false, error: 'must be in the future' });
  assert.deepEqual(expiresAt('date', '2040-01-01T00:00Z', now), { ok: false, error: 'at most 10 years ahead' });
  assert.equal(expiresAt('-3', '', now).ok, false);
});

test('quota words and bar bounds', () => {
  const q = (usage: number, limit: number) => ({ display_name: 'Installs', type: 'allocation', usage, limit });
  assert.equal(quotaWords(q(3, 5)), '3 of 5 installs');
  assert.equal(quotaWords(q(5, 5)), '5 of 5 installs (the limit is reached)');
  assert.equal(quotaWords(q(6, 5)), '6 of 5 installs (over the limit)');
  assert.equal(quotaWords(q(0, 0)), '0 of 0 installs (not in this plan)');
  assert.deepEqual(meterBounds(q(3, 5)), { max: 5, value: 3, high: 4, optimum: 0 });
  assert.deepEqual(meterBounds(q(6, 5)).value, 5);
  assert.deepEqual(meterBounds(q(0, 0)).max, 1);
});

test('resource links: record pages, settings pages, a secret version to its secret, unknown kinds to none', () => {
  assert.equal(resourceHref('operation', 'op_1'), '/operations/op_1');
  assert.equal(resourceHref('secret', 'sec_1'), '/secrets/sec_1');
  assert.equal(resourceHref('secret_version', 'secv_1', { secret_id: 'sec_1' }), '/secrets/sec_1');
  assert.equal(resourceHref('secret_version', 'secv_1'), null);
  assert.equal(resourceHref('api_token', 'tok_1'), '/settings/tokens');
  assert.equal(resourceHref('workspace_member', 'wsm_1'), '/settings/members');
  assert.equal(resourceHref('subscription_change_request', 'scr_1'), '/settings/plan');
  assert.equal(resourceHref('something_new', 'x_1'), null);
});
