// Journey: a page on another site (and one on another port of the same host, which the browser
// counts as the same site, so the SameSite=Lax cookie IS sent) tries to act with the signed-in
// person's cookie: form posts (urlencoded and text/plain JSON) and fetches with credentials. Each
// is refused and nothing changes; the app itself still works in the same browser.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { freePort } from '../harness.js';
import { skipReason, startWeb, type Web } from './harness.js';

function attackerPage(target: string): string {
  return `<!doctype html><html><body>
<form id="f1" method="POST" action="${target}/v1/workspaces"><input name="name" value="Evil1"></form>
<form id="f2" method="POST" enctype="text/plain" action="${target}/v1/workspaces"><input name='{"name":"Evil2","x":"' value='"}'></form>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe>
<script>
  window.attack = async () => {
    const results = [];
    for (const [mode, headers] of [['no-cors', {'content-type': 'text/plain'}], ['cors', {'content-type': 'application/json'}], ['cors', {'content-type': 'application/json', 'x-svc-csrf': '1'}]]) {
      try {
        const r = await fetch('${target}/v1/workspaces', { method: 'POST', mode, credentials: 'include', headers, body: JSON.stringify({ name: 'Evil3' }) });
        results.push(mode + ':' + r.status);
      } catch (e) { results.push(mode + ':blocked'); }
    }
    document.getElementById('f1').target = 'sink1'; document.getElementById('f1').submit();
    document.getElementById('f2').target = 'sink2'; document.getElementById('f2').submit();
    return results;
  };
</script></body></html>`;
}

describe('web: a cross-site page cannot act with the cookie', { skip: skipReason }, () => {
  let web: Web;
  let page: Page;
  let attacker: Server;
  let attackerPort: number;

  before(async () => {
    web = await startWeb();
    const ada = await web.user('Ada');
    page = await web.signIn(ada);
    attackerPort = await freePort();
    attacker = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(attackerPage(web.base));
    });
    await new Promise<void>((resolve) => attacker.listen(attackerPort, '127.0.0.1', resolve));
  });
  after(async () => {
    attacker?.close();
    await web?.close();
  });

  async function workspaceNames(): Promise<string[]> {
    return page.evaluate(async () => ((await (await fetch('/v1/workspaces')).json()) as { data: { name: string }[] }).data.map((w) => w.name));
  }

  for (const host of ['localhost', '127.0.0.1']) {
    test(`from http://${host}:<other port>: form posts and fetches change nothing`, async () => {
      const before = await workspaceNames();
      const evil = await page.context().newPage();
      await evil.goto(`http://${host}:${attackerPort}/`);
      // Both form posts must have been answered before the workspaces are counted again.
      let answered = 0;
      const formsAnswered = new Promise<void>((resolve) =>
        evil.on('requestfinished', (req) => {
          if (req.method() === 'POST' && req.resourceType() === 'document' && ++answered === 2) resolve();
        }),
      );
      const results = (await evil.evaluate('window.attack()')) as string[];
      await formsAnswered;
      await evil.close();
      assert.ok(results.every((r) => r === 'no-cors:0' || r.endsWith(':blocked')), `fetch results: ${results.join(', ')}`);
      assert.deepEqual(await workspaceNames(), before);
    });
  }

  test('the app in the same browser still creates a workspace (it sends the header)', async () => {
    await page.getByRole('link', { name: 'New workspace' }).click();
    await page.getByLabel('Name').fill('Real');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await page.getByRole('combobox', { name: 'Workspace' }).waitFor();
    assert.deepEqual(await workspaceNames(), ['Real']);
  });
});
