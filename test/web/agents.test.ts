// Journey: agents (issue 24), against a real `svc serve` and its built-in local model. An admin
// creates an agent from the form (a budget without a model is refused at its field first); its
// settings are saved over a stale etag after the conflict is shown; it is archived and restored.
// Then a chat: "how many installs are there?" streams its answer with a tool row that opens to its
// code; creating a secret shows an approval card with the exact code, approved, and the secret
// exists; another is rejected with a reason; an ambiguous deploy asks which cluster and is answered
// by a choice and the deploy approved; a [slow] turn is cancelled while it writes; a [fail] turn
// shows its failure; the chats list (a member's own only; an admin reads another's without
// writing, and approves a member's turn that needs it); keyboard-only sending; axe on every page,
// and 360 px in dark mode.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { MANIFEST, SCHEMA } from '../installs-fixtures.js';
import { api, checkA11y, noOverflow, open, shot, skipReason, startWeb, tabTo, type Web, type WebUser } from './harness.js';

/** The last turn of the chat's conversation (its list item). */
const lastTurn = (page: Page) => page.getByRole('list', { name: 'Conversation' }).locator(':scope > li').last();

/** Types a message in the composer and sends it with Enter. */
async function say(page: Page, message: string): Promise<void> {
  const box = page.getByRole('textbox', { name: /^Message to/ });
  await box.fill(message);
  await box.press('Enter');
  await lastTurn(page).getByText(message, { exact: true }).waitFor();
}

/** Waits until the chat's composer can send again (the turn ended). */
async function turnEnded(page: Page): Promise<void> {
  await page.getByRole('textbox', { name: /^Message to/ }).and(page.locator(':not([aria-disabled])')).waitFor({ timeout: 60_000 });
}

describe('web journey: agents', { skip: skipReason }, () => {
  let web: Web;
  let ada: WebUser;
  let page: Page;
  let ws: string;
  let agentId: string;
  let chatUrl: string;
  let bob: WebUser;

  before(async () => {
    // Streams end every 5 s (the least allowed): the chat resumes them all along the journey.
    web = await startWeb({ SVC_AGENT_STREAM_MAX_S: '5' });
    ada = await web.user('Ada');
    page = await web.signIn(ada);
    const created = await api(page, 'POST', '/v1/workspaces', { name: 'Acme' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ws = created.body.id;
    await page.reload();
    await page.getByRole('combobox', { name: 'Workspace' }).waitFor();
  });
  after(() => web?.close());

  test('an admin creates an agent from the form; a budget without a model is refused at its field first', async () => {
    await open(page, '/agents', 'Agents');
    await page.getByText('No agents yet.').waitFor();
    await checkA11y(page, 'agents, empty');
    await page.getByRole('link', { name: 'New agent' }).click();
    await page.getByRole('heading', { level: 1, name: 'New agent' }).waitFor();
    await page.getByLabel('Name').fill('ops');
    await page.getByLabel('Description').fill('Answers questions about the workspace');
    await page.getByLabel('Instructions').fill('You help the team run their workspace. Be brief.');
    await page.getByLabel('Most one turn may cost (USD)').fill('0.50');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByText('Name the model when you choose a provider').waitFor();
    await checkA11y(page, 'new agent form with a refusal');
    await page.getByLabel('Model', { exact: true }).fill('local-1');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByRole('heading', { level: 1, name: 'ops' }).waitFor();
    agentId = new URL(page.url()).pathname.split('/').pop()!;
    assert.match(agentId, /^agt_/);
    const agent = (await api(page, 'GET', `/v1/agents/${agentId}`, undefined, ws)).body;
    assert.equal(agent.model_policy.default_model, 'local-1');
    assert.equal(agent.model_policy.max_turn_budget_cents, 50);
    assert.equal(agent.tool_policy.writes, 'APPROVAL_REQUIRED');
    await page.getByRole('region', { name: 'Usage' }).getByText('0 tokens · $0.00 · 0 API calls').waitFor();
    await checkA11y(page, 'agent page');
    await open(page, '/agents', 'Agents');
    await page.getByRole('table', { name: 'Agents' }).getByRole('link', { name: 'ops' }).waitFor();
  });

  test('a settings change over a stale etag shows the conflict and is applied again', async () => {
    await open(page, `/agents/${agentId}`, 'ops');
    await page.getByRole('button', { name: 'Edit settings' }).click();
    const settings = page.getByRole('region', { name: 'Settings' });
    await settings.getByLabel('Description').fill('Knows the workspace');
    // Someone else changes the agent meanwhile.
    const current = (await api(page, 'GET', `/v1/agents/${agentId}`, undefined, ws)).body;
    const other = await api(page, 'PATCH', `/v1/agents/${agentId}`, { instructions: 'You help the team. Be brief and exact.' }, ws, { 'if-match': current.etag });
    assert.equal(other.status, 200, JSON.stringify(other.body));
    // The page's reload of the agent after the refusal is held until released: meanwhile the offer
    // to apply the change again is disabled (applied on the state the page had, it would be refused
    // again, which a quick click on a busy machine did).
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const agentUrl = `**/v1/agents/${agentId}`;
    await page.route(agentUrl, async (route) => {
      if (route.request().method() === 'GET') await held;
      await route.continue();
    });
    await settings.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('The agent changed since this page loaded it.').waitFor();
    await page.getByRole('button', { name: 'Apply my change again', disabled: true }).waitFor();
    release();
    await page.getByRole('button', { name: 'Apply my change again', disabled: false }).waitFor();
    await page.unroute(agentUrl);
    await checkA11y(page, 'agent settings conflict');
    await page.getByRole('button', { name: 'Apply my change again' }).click();
    await settings.getByText('You help the team. Be brief and exact.').waitFor();
    await page.getByText('Knows the workspace').first().waitFor();
    const saved = (await api(page, 'GET', `/v1/agents/${agentId}`, undefined, ws)).body;
    assert.equal(saved.description, 'Knows the workspace');
    assert.equal(saved.instructions, 'You help the team. Be brief and exact.', 'the other change stays');
  });

  test('archiving is confirmed and restoring brings New chat back', async () => {
    await open(page, `/agents/${agentId}`, 'ops');
    await page.getByRole('button', { name: 'Archive' }).click();
    await page.getByRole('dialog', { name: 'Archive the agent ops?' }).getByRole('button', { name: 'Archive agent' }).click();
    await page.getByText('it takes no new turns until it is restored').waitFor();
    assert.equal(await page.getByRole('link', { name: 'New chat' }).count(), 0);
    assert.equal((await api(page, 'GET', `/v1/agents/${agentId}`, undefined, ws)).body.state, 'ARCHIVED');
    await page.getByRole('button', { name: 'Restore' }).click();
    await page.getByRole('link', { name: 'New chat' }).waitFor();
    assert.equal((await api(page, 'GET', `/v1/agents/${agentId}`, undefined, ws)).body.state, 'ENABLED');
  });

  test('a chat: the answer streams in with a tool row that opens to its code; usage shows', async () => {
    await open(page, `/agents/${agentId}`, 'ops');
    await page.getByRole('link', { name: 'New chat' }).click();
    await page.getByRole('heading', { level: 1, name: 'New chat with ops' }).waitFor();
    await checkA11y(page, 'new chat');
    const box = page.getByRole('textbox', { name: 'Message to ops' });
    await box.fill('how many installs are there?');
    await box.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'how many installs are there?' }).waitFor();
    chatUrl = new URL(page.url()).pathname;
    assert.match(chatUrl, /^\/agent_sessions\/ags_/);
    const turn = lastTurn(page);
    await turnEnded(page);
    await turn.locator('.msg-agent').getByText(/no installs|0 installs/i).waitFor();
    assert.equal(await turn.locator('.notice-error').count(), 0, 'the turn did not fail');
    await shot(page, 'agent-chat');
    const tool = turn.locator('details.tool').first();
    await tool.locator('summary').click();
    await tool.getByText('platform.request').first().waitFor();
    await turn.getByText(/This turn: .* tokens · \$[0-9.]+ · [0-9]+ API calls?/).waitFor();
    await checkA11y(page, 'chat with a tool row open');
  });

  test('a change waits for approval: the card shows the exact code; approved, it runs and the secret exists', async () => {
    await open(page, chatUrl, 'how many installs are there?');
    await say(page, 'create a secret named db-password with value hunter2-hunter2');
    const card = lastTurn(page).getByRole('region', { name: /^Approve this change\?/ });
    await card.waitFor({ timeout: 60_000 });
    const code = await card.getByLabel('Code of the change').textContent();
    assert.match(code!, /platform\.request/);
    assert.match(code!, /\/v1\/secrets/);
    await page.getByRole('status').getByText(/^Approval needed:/).waitFor();
    await checkA11y(page, 'chat with an approval card');
    await shot(page, 'agent-approval');
    assert.equal((await api(page, 'GET', '/v1/secrets', undefined, ws)).body.data.length, 0, 'nothing is written before the approval');
    // The waiting turn notifies its creator; the notification opens the chat, its card replayed there.
    await open(page, '/notifications', 'Notifications');
    await page.getByRole('link', { name: 'An agent turn waits for approval' }).click();
    await page.getByRole('heading', { level: 1, name: 'how many installs are there?' }).waitFor();
    await card.getByRole('button', { name: 'Approve' }).click();
    await card.getByText('Approved by you.').waitFor();
    await turnEnded(page);
    await lastTurn(page).getByText(/^Created secret db-password \(sec_/).waitFor();
    const secrets = (await api(page, 'GET', '/v1/secrets', undefined, ws)).body.data;
    assert.deepEqual(secrets.map((x: { name: string }) => x.name), ['db-password']);
    const audit = (await api(page, 'GET', '/v1/audit_events?action=approval_request.approve', undefined, ws)).body.data;
    assert.equal(audit.length, 1);
  });

  test('a rejected change is told to the agent with its reason and nothing is written', async () => {
    await open(page, chatUrl, 'how many installs are there?');
    await say(page, 'create a secret named api-key with value abc-abc-abc-abc');
    const card = lastTurn(page).getByRole('region', { name: /^Approve this change\?/ });
    await card.getByRole('button', { name: 'Reject…' }).click();
    await card.getByLabel('Why (told to the agent)').fill('not today');
    await card.getByRole('button', { name: 'Reject change' }).click();
    await card.getByText('Rejected by you: “not today”').waitFor();
    await turnEnded(page);
    await lastTurn(page).getByText(/you said: not today/).waitFor();
    const names = (await api(page, 'GET', '/v1/secrets', undefined, ws)).body.data.map((x: { name: string }) => x.name);
    assert.deepEqual(names, ['db-password']);
  });

  test('an ambiguous deploy asks which cluster; a choice answers it, and the deploy is approved', async () => {
    const pkg = await api(page, 'POST', '/v1/packages', { name: 'hello' }, ws);
    assert.equal(pkg.status, 201, JSON.stringify(pkg.body));
    const version = await api(page, 'POST', `/v1/packages/${pkg.body.id}/versions`, { semver: '1.0.0', input_schema: SCHEMA, manifest: MANIFEST }, ws);
    assert.equal(version.status, 201, JSON.stringify(version.body));
    for (const name of ['staging', 'prod']) {
      const op = await api(page, 'POST', '/v1/clusters', { name }, ws);
      assert.equal(op.status, 202, JSON.stringify(op.body));
      assert.equal((await api(page, 'POST', `/v1/operations/${op.body.id}:wait?timeout=60`, undefined, ws)).body.state, 'SUCCEEDED');
    }
    await open(page, chatUrl, 'how many installs are there?');
    await say(page, 'deploy hello');
    const question = lastTurn(page).getByRole('region', { name: 'The agent asks: Which cluster should I deploy to?' });
    await question.waitFor({ timeout: 60_000 });
    await page.getByRole('status').getByText(/^The agent asks: Which cluster should I deploy to\?/).waitFor();
    await checkA11y(page, 'chat with a question');
    await shot(page, 'agent-question');
    await question.getByRole('group', { name: 'Choices' }).getByRole('button', { name: 'staging' }).click();
    await question.getByText('Answered: staging').waitFor();
    const card = lastTurn(page).getByRole('region', { name: /^Approve this change\? Deploy hello/ });
    await card.getByRole('button', { name: 'Approve' }).click();
    await turnEnded(page);
    await lastTurn(page).getByText(/^Deploying hello .* to staging/).waitFor();
    const installs = (await api(page, 'GET', '/v1/installs', undefined, ws)).body.data;
    assert.equal(installs.length, 1);
  });

  test('Cancel stops a turn while the model writes; the turn ends CANCELLED', async () => {
    await open(page, chatUrl, 'how many installs are there?');
    await say(page, 'how many installs are there? [slow]');
    const turn = lastTurn(page);
    // The answer is being written ([slow]: a piece a second) when the person cancels.
    await turn.locator('.msg-agent[aria-busy="true"]').waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Cancel turn' }).click();
    await turn.getByText('Cancelled', { exact: true }).waitFor();
    await page.getByRole('status').getByText('The turn was cancelled.').waitFor();
    await turnEnded(page);
    const sessionId = chatUrl.split('/').pop();
    const turns = (await api(page, 'GET', `/v1/agent_turns?session_id=${sessionId}`, undefined, ws)).body.data;
    assert.equal(turns[0].state, 'CANCELLED');
    assert.equal(await page.getByRole('button', { name: 'Cancel turn' }).count(), 0);
  });

  test('a turn whose stream is cut reads exactly as stored, live and after a reload', async () => {
    await open(page, chatUrl, 'how many installs are there?');
    await page.getByText('Live', { exact: true }).waitFor();
    await say(page, 'list the clusters [slow]');
    // The connection drops while the answer is written: the page resumes after the last event it had.
    await lastTurn(page).locator('.msg-agent[aria-busy="true"]').waitFor({ timeout: 60_000 });
    await page.context().setOffline(true);
    await page.getByText('Connection lost; reconnecting…').waitFor();
    await page.context().setOffline(false);
    await turnEnded(page);
    const sessionId = chatUrl.split('/').pop()!;
    const turnId = (await api(page, 'GET', `/v1/agent_turns?session_id=${sessionId}&limit=1`, undefined, ws)).body.data[0].id;
    const events = (await api(page, 'GET', `/v1/agent_events?turn_id=${turnId}&limit=100`, undefined, ws)).body.data as { type: string; data: any }[];
    const said = events.filter((e) => e.type === 'message.created').map((e) => e.data.content);
    const tools = events.filter((e) => e.type === 'tool.started').length;
    assert.match(said.at(-1), /^There are 2 clusters:[\s\S]*prod[\s\S]*staging/);
    const shown = async () => ({ said: await lastTurn(page).locator('.msg-agent .prose').allTextContents(), tools: await lastTurn(page).locator('details.tool').count() });
    assert.deepEqual(await shown(), { said, tools }, 'no piece missing or repeated, each tool call once');
    await page.reload();
    await lastTurn(page).locator('.msg-agent').last().getByText(/staging: active/).waitFor();
    assert.deepEqual(await shown(), { said, tools }, 'the replay after a reload reads the same');
  });

  test('a failed turn shows its code and message', async () => {
    await open(page, chatUrl, 'how many installs are there?');
    await say(page, 'how many installs are there? [fail]');
    await lastTurn(page).getByText('The turn failed (MODEL_UNAVAILABLE).').waitFor({ timeout: 60_000 });
    await lastTurn(page).getByText(/the local model failed on purpose/).waitFor();
    await turnEnded(page);
  });

  test('the chats list shows the chat; a member sees only their own, and an admin reads theirs without writing', async () => {
    await open(page, '/agent_sessions', 'Chats');
    const table = page.getByRole('table', { name: 'Chats' });
    await table.getByRole('link', { name: 'how many installs are there?' }).waitFor();
    await table.getByRole('link', { name: 'ops' }).first().waitFor();
    await checkA11y(page, 'chats');

    bob = await web.user('Bob');
    assert.equal((await api(page, 'POST', `/v1/workspaces/${ws}/members`, { email: bob.email, role: 'member' }, ws)).status, 201);
    const asBob = await web.signIn(bob);
    await open(asBob, '/agents', 'Agents');
    await asBob.getByText('Creating agents needs the admin or owner role.').waitFor();
    await open(asBob, '/agent_sessions', 'Chats');
    await asBob.getByText('No chats yet.').waitFor();
    await open(asBob, chatUrl, 'Chat');
    await asBob.getByText('The chat could not be loaded.').waitFor();

    await open(asBob, `/agents/${agentId}/chat`, 'New chat with ops');
    const box = asBob.getByRole('textbox', { name: 'Message to ops' });
    await box.fill('hello');
    await box.press('Enter');
    await asBob.getByRole('heading', { level: 1, name: 'hello' }).waitFor();
    const bobsChat = new URL(asBob.url()).pathname;
    await turnEnded(asBob);

    await open(page, bobsChat, 'hello');
    await page.getByText('This chat was started by someone else').waitFor();
    assert.equal(await page.getByRole('textbox', { name: /^Message to/ }).count(), 0);
    await checkA11y(page, 'another member\'s chat');
  });

  test('a member\'s turn on an agent that writes without asking waits for an admin, who approves it from the chat', async () => {
    const free = await api(page, 'POST', '/v1/agents', { name: 'free', instructions: 'Act.', capabilities: ['CHAT'], tool_policy: { writes: 'ALLOWED' } }, ws);
    assert.equal(free.status, 201, JSON.stringify(free.body));
    const asBob = await web.signIn(bob);
    await open(asBob, `/agents/${free.body.id}/chat`, 'New chat with free');
    const box = asBob.getByRole('textbox', { name: 'Message to free' });
    await box.fill('how many installs are there?');
    await box.press('Enter');
    const card = lastTurn(asBob).getByRole('region', { name: 'This turn needs an owner’s or admin’s approval' });
    await card.getByText('Waiting for an owner or admin to decide.').waitFor();
    assert.equal(await card.getByRole('button').count(), 0, 'a member cannot approve their own turn');
    const bobsChat = new URL(asBob.url()).pathname;

    await open(page, bobsChat, 'how many installs are there?');
    const adminCard = lastTurn(page).getByRole('region', { name: 'This turn needs an owner’s or admin’s approval' });
    await checkA11y(page, 'a member\'s turn waiting for an admin');
    await adminCard.getByRole('button', { name: 'Approve' }).click();
    await adminCard.getByText('Approved by you.').waitFor();
    // The member's page follows live: the turn runs and ends.
    await card.getByText(/^Approved by /).waitFor();
    await turnEnded(asBob);
  });

  test('keyboard only: a message is written and sent without the mouse', async () => {
    await open(page, chatUrl, 'how many installs are there?');
    await page.getByRole('textbox', { name: 'Message to ops' }).waitFor();
    let found = false;
    for (let i = 0; i < 80 && !found; i++) {
      await page.keyboard.press('Tab');
      found = await page.evaluate(() => document.activeElement?.tagName === 'TEXTAREA');
    }
    assert.ok(found, 'the message field is reachable with Tab');
    await page.keyboard.type('how many installs are there?');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('thanks');
    assert.equal(await page.getByRole('textbox', { name: 'Message to ops' }).inputValue(), 'how many installs are there?\nthanks', 'Shift+Enter starts a new line');
    await page.keyboard.press('Enter');
    await lastTurn(page).getByText('how many installs are there?\nthanks').waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'TEXTAREA', 'the focus stays in the message field');
    await turnEnded(page);
  });

  test('readable at 360 px wide, in dark mode', async () => {
    const narrow = await web.signIn(ada, { width: 360, colorScheme: 'dark' });
    for (const [path, heading, ready] of [['/agents', 'Agents', 'table'], [`/agents/${agentId}`, 'ops', 'table'], ['/agent_sessions', 'Chats', 'table'], [chatUrl, 'how many installs are there?', 'list']] as const) {
      await open(narrow, path, heading);
      await narrow.getByRole(ready).first().waitFor();
      assert.equal(await noOverflow(narrow), 0, `no horizontal scrolling at 360 px on ${path}`);
      await checkA11y(narrow, `${heading} at 360 px, dark`);
    }
    await shot(narrow, 'agent-chat-narrow-dark');
  });
});

