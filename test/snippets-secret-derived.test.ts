// A snippet run that read a secret value is secret-derived (issue 33): masking cannot catch a
// value split, reversed or re-encoded, so the run's output, error and logs are shown only to roles
// that may read secret values (`:access`: admins and owners). A member reads the run, flagged
// `secret_derived` with `output_withheld`, and none of what it returned or logged.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

const VALUE = 'correct-horse-battery-staple-42';
const REVERSED = [...VALUE].reverse().join('');

describe('secret-derived snippet runs', () => {
  let t: TestApp;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let ws: string;
  const ctx = (user: TestUser) => ({ token: user.token, headers: { 'svc-context': ws } });

  before(async () => {
    t = await startTestApp({ SVC_SANDBOX_WORKERS: '1' });
    owner = await t.user('owner');
    admin = await t.user('admin');
    member = await t.user('member');
    ws = (await t.workspace(owner, 'Derived')).id;
    await t.addMember(owner, ws, admin, 'admin');
    await t.addMember(owner, ws, member, 'member');
  });
  after(() => t.close());

  test('a run that outputs and logs a secret reversed and split: admins read it, a member gets it withheld', async () => {
    const secret = await t.request('POST', '/v1/secrets', { ...ctx(owner), body: { name: 'db-password', value: VALUE } });
    assert.equal(secret.status, 201, secret.text);
    const code = `const value = (await platform.request({ method: 'POST', path: '/v1/secrets/${secret.body.id}/versions/latest:access' })).body.value;
      const reversed = [...value].reverse().join('');
      console.log('reversed:', reversed);
      if (inputs.fail) throw new Error('reversed ' + reversed);
      return { reversed, halves: [value.slice(0, 10), value.slice(10)] };`;
    const created = await t.request('POST', '/v1/snippets', {
      ...ctx(owner), body: { name: 'reverses a secret', code, display_type: 'json', inputs: [{ key: 'fail', label: 'Fail', kind: 'boolean', default: false }] },
    });
    assert.equal(created.status, 201, created.text);
    const ran = await t.request('POST', `/v1/snippets/${created.body.id}/runs`, { ...ctx(owner), body: {} });
    assert.equal(ran.status, 201, ran.text);
    // Masking does not catch these forms: the value is in the run, which is why the run is flagged.
    assert.equal(ran.body.output.reversed, REVERSED);
    assert.equal(ran.body.secret_derived, true);
    assert.equal(ran.body.output_withheld, false);
    const threw = await t.request('POST', `/v1/snippets/${created.body.id}/runs`, { ...ctx(owner), body: { inputs: { fail: true } } });
    assert.equal(threw.body.error.message, `reversed ${REVERSED}`);

    for (const reader of [owner, admin]) {
      const run = await t.request('GET', `/v1/snippets/${created.body.id}/runs/${ran.body.id}`, ctx(reader));
      assert.equal(run.status, 200, run.text);
      assert.deepEqual(run.body.output, { reversed: REVERSED, halves: [VALUE.slice(0, 10), VALUE.slice(10)] });
      assert.deepEqual(run.body.logs.map((l: { message: string }) => l.message), [`reversed: ${REVERSED}`]);
      assert.equal(run.body.output_withheld, false);
    }

    const one = await t.request('GET', `/v1/snippets/${created.body.id}/runs/${ran.body.id}`, ctx(member));
    assert.equal(one.status, 200, one.text);
    assert.equal(one.body.secret_derived, true);
    assert.equal(one.body.output_withheld, true);
    assert.equal(one.body.output, null);
    assert.equal(one.body.error, null);
    assert.deepEqual(one.body.logs, []);
    assert.equal(one.body.state, 'succeeded', 'the record itself is there');
    const failed = await t.request('GET', `/v1/snippets/${created.body.id}/runs/${threw.body.id}`, ctx(member));
    assert.equal(failed.body.state, 'failed');
    assert.equal(failed.body.error, null);
    const listed = await t.request('GET', `/v1/snippets/${created.body.id}/runs?view=full`, ctx(member));
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.data.map((r: { secret_derived: boolean; output_withheld: boolean }) => [r.secret_derived, r.output_withheld]), [[true, true], [true, true]]);
    for (const seen of [one.text, failed.text, listed.text]) {
      assert.ok(!seen.includes(REVERSED) && !seen.includes(VALUE.slice(0, 10)) && !seen.includes(VALUE.slice(10)), seen);
    }
  });

  test('a run that read no secret value is shown whole to a member', async () => {
    const created = await t.request('POST', '/v1/snippets', { ...ctx(owner), body: { name: 'plain', code: "console.log('hi'); return 42;", display_type: 'stat' } });
    const ran = await t.request('POST', `/v1/snippets/${created.body.id}/runs`, { ...ctx(owner), body: {} });
    const run = await t.request('GET', `/v1/snippets/${created.body.id}/runs/${ran.body.id}`, ctx(member));
    assert.equal(run.body.secret_derived, false);
    assert.equal(run.body.output_withheld, false);
    assert.equal(run.body.output, 42);
    assert.deepEqual(run.body.logs.map((l: { message: string }) => l.message), ['hi']);
  });
});
