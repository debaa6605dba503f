// Secret values a run read (`:access` through platform.request) never reach its stored output,
// logs or error in plain text (issue 20): they are masked before the run is stored or answered, in
// the forms a snippet commonly makes of them, and short values only where they stand alone.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

describe('secret values masked in snippet runs', () => {
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let ws: string;
  const ctx = (user: TestUser) => ({ token: user.token, headers: { 'svc-context': ws } });

  async function secret(value: string): Promise<string> {
    const res = await t.request('POST', '/v1/secrets', { ...ctx(owner), body: { name: `s-${Math.random().toString(36).slice(2)}`, value } });
    assert.equal(res.status, 201, res.text);
    return res.body.id;
  }
  const read = (id: string) => `const value = (await platform.request({ method: 'POST', path: '/v1/secrets/${id}/versions/latest:access' })).body.value;`;

  before(async () => {
    t = await startTestApp({ SVC_SANDBOX_WORKERS: '1' });
    owner = await t.user('owner');
    member = await t.user('member');
    ws = (await t.workspace(owner, 'Masking')).id;
    await t.addMember(owner, ws, member, 'member');
  });
  after(() => t.close());

  test('a value read by a stored run is [masked] in its output, logs and error, for the runner and for a member reading view=full', async () => {
    const value = 'hunter2-correct-horse"battery';
    const id = await secret(value);
    const code = `${read(id)}
      console.log('the value is', value);
      console.log(JSON.stringify({ nested: value }));
      if (inputs.fail) throw new Error('leaked ' + value);
      return { plain: value, inText: 'x' + value + 'y', [value]: 'as a key', encoded: encodeURIComponent(value), json: JSON.stringify(value), other: 'kept' };`;
    const created = await t.request('POST', '/v1/snippets', {
      ...ctx(owner), body: { name: 'reads a secret', code, display_type: 'json', inputs: [{ key: 'fail', label: 'Fail', kind: 'boolean', default: false }] },
    });
    assert.equal(created.status, 201, created.text);
    const ran = await t.request('POST', `/v1/snippets/${created.body.id}/runs`, { ...ctx(owner), body: {} });
    assert.equal(ran.status, 201, ran.text);
    assert.equal(ran.body.state, 'succeeded');
    assert.ok(!ran.text.includes('hunter2'), ran.text);
    assert.deepEqual(ran.body.output, {
      plain: '[masked]', inText: 'x[masked]y', '[masked]': 'as a key', encoded: '[masked]', json: '"[masked]"', other: 'kept',
    });
    assert.deepEqual(ran.body.logs.map((l: { message: string }) => l.message), ['the value is [masked]', '{"nested":"[masked]"}']);
    const threw = await t.request('POST', `/v1/snippets/${created.body.id}/runs`, { ...ctx(owner), body: { inputs: { fail: true } } });
    assert.equal(threw.body.error.code, 'SNIPPET_THREW');
    assert.equal(threw.body.error.message, 'leaked [masked]');
    assert.ok(!threw.text.includes('hunter2'), threw.text);
    // What is stored is masked: the owner reading the runs sees no value; a member gets the
    // output and logs of these secret-derived runs withheld altogether (snippets-secret-derived.test.ts).
    const listed = await t.request('GET', `/v1/snippets/${created.body.id}/runs?view=full`, ctx(owner));
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.data.length, 2);
    assert.ok(!listed.text.includes('hunter2'), listed.text);
    assert.ok(listed.text.includes('[masked]'));
    const asMember = await t.request('GET', `/v1/snippets/${created.body.id}/runs?view=full`, ctx(member));
    assert.equal(asMember.status, 200, asMember.text);
    assert.ok(!asMember.text.includes('hunter2'), asMember.text);
    assert.deepEqual(asMember.body.data.map((r: { output_withheld: boolean }) => r.output_withheld), [true, true]);
  });

  test(':execute answers the same masked output; base64 of the value is masked too', async () => {
    const value = 'api-key-0123456789abcdef';
    const id = await secret(value);
    const base64 = Buffer.from(value).toString('base64');
    const code = `${read(id)}
      const table = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
      let bits = '', b64 = '';
      for (const c of value) bits += c.charCodeAt(0).toString(2).padStart(8, '0');
      for (let i = 0; i < bits.length; i += 6) b64 += table[parseInt(bits.slice(i, i + 6).padEnd(6, '0'), 2)];
      return { value, b64 };`;
    const res = await t.request('POST', '/v1/snippets:execute', { ...ctx(owner), body: { code } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.output.value, '[masked]');
    assert.ok(!res.text.includes(value) && !res.text.includes(base64.replace(/=+$/, '')), res.text);
  });

  test('a value under 8 characters is masked where it stands alone, not inside other words', async () => {
    const id = await secret('abc12');
    const res = await t.request('POST', '/v1/snippets:execute', {
      ...ctx(owner), body: { code: `${read(id)} return [value, 'pw=' + value, 'xabc12y', value + 'suffix'];` },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.output, ['[masked]', 'pw=[masked]', 'xabc12y', 'abc12suffix']);
  });

  test('a run that reads no secret is left as it is', async () => {
    await secret('never-read-value-123');
    const res = await t.request('POST', '/v1/snippets:execute', { ...ctx(owner), body: { code: "return 'never-read-value-123'" } });
    assert.equal(res.body.output, 'never-read-value-123');
  });
});
