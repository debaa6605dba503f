#!/usr/bin/env node
// `npm run bench:agents`: the agent budgets of issue 24, on SQLite (built dist/, LOG_LEVEL info), with
// the built-in `local` model.
//
//   1. Submit to first event: a follower streams the session (GET /v1/agent_events:stream); the time
//      from sending POST /v1/agent_turns to the turn's first event arriving on the stream, over
//      BENCH_TURNS (40) turns. Budget: median under 50 ms. Also reported: to the model's first text.
//   2. A three-tool-call turn end to end (THREE_TOOLS: the local model reads three lists with three
//      `execute` calls, then answers): submit to turn.completed on the stream, BENCH_TURNS turns.
//      Budget: median under 300 ms.
//   3. 100 concurrent SSE followers, idle: the server's CPU time over BENCH_IDLE_S (30) seconds of
//      wall time with 100 open streams and nothing happening. Budget: under 5 % of a core.
//   4. GET /v1/installs p99 idle, then while 20 turns run at once (each in its own session, each
//      reading in a loop of tool calls): p99 while busy at most 2x p99 idle.
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { percentile, round } from './load.js';
import { call } from './members.js';
import { cpuSeconds, ensureBuilt, freePort, RESULTS, roomyPlansFile, startProcess, stopProcess, waitUntilUp } from './processes.js';

const TURNS = Number(process.env.BENCH_TURNS ?? 40);
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 30);
const FOLLOWERS = 100;
const BUSY_TURNS = 20;
const BUDGET = { firstEventMedianMs: 50, threeToolTurnMedianMs: 300, idleFollowersCorePercent: 5, busyP99Ratio: 2 };
const TOKEN = randomBytes(24).toString('hex').slice(0, 32);
/** the local model's request that reads three lists with three execute calls (see docs/agents.md, "The local model") */
const THREE_TOOLS = 'count installs, clusters and secrets';
const SIMPLE = 'how many installs are there?';
/** keeps a turn busy with tool rounds until the step limit (200 here) */
const BUSY = '[loop] count installs';

/** An SSE reader: calls onEvent(type, event) for each event; returns a closer. */
function follow(base, path, headers, onEvent) {
  let buffer = '';
  const req = httpRequest(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}`, ...headers } }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk) => {
      buffer += chunk;
      let at;
      while ((at = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const type = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (type && data) onEvent(type, JSON.parse(data));
      }
    });
  });
  req.on('error', () => {});
  req.end();
  return () => req.destroy();
}

async function main() {
  ensureBuilt();
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-agents-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    SVC_DATA_DIR: join(work, 'data'), SVC_SECRET_KEY: randomBytes(32).toString('hex'),
    SVC_BOOTSTRAP_EMAIL: 'owner@bench.test', SVC_BOOTSTRAP_PASSWORD: 'bench owner password', SVC_BOOTSTRAP_TOKEN: TOKEN,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', PORT: String(port), HOST: '127.0.0.1', SVC_PLANS_FILE: await roomyPlansFile(work),
    // The busy turns loop through tool rounds for the whole window of step 4, not 20 rounds.
    SVC_QUOTAS_ENFORCED: 'false', SVC_SANDBOX_PREWARM: 'true', SVC_AGENT_STEP_LIMIT: '200',
    // the busy turns' [loop] is a test trigger of the local model
    SVC_TEST_HOOKS: '1',
  };
  const proc = startProcess(['bin/svc.js', 'serve'], env, join(work, 'svc.log'));
  try {
    await waitUntilUp(`${base}/readyz`, proc);
    const ws = (await call(base, 'POST', '/v1/workspaces', TOKEN, { name: 'Bench agents' })).body.id;
    const ctx = { 'svc-context': ws };
    const agent = (await call(base, 'POST', '/v1/agents', TOKEN, { name: 'bench', instructions: 'Answer briefly.', capabilities: ['CHAT'] }, ctx)).body;
    const newSession = async () => (await call(base, 'POST', '/v1/agent_sessions', TOKEN, { agent_id: agent.id }, ctx)).body.id;

    /** Runs `message` TURNS times in one session, timing the first event, the first text and the end from the submit. */
    async function timedTurns(message) {
      const session = await newSession();
      const firstEvent = [];
      const firstText = [];
      const total = [];
      let current = null;
      const close = follow(base, `/v1/agent_events:stream?session_id=${session}`, ctx, (type, event) => {
        if (!current || event.turn_id !== current.id) return;
        const at = performance.now() - current.t0;
        if (!current.first) {
          current.first = true;
          firstEvent.push(at);
        }
        if (type === 'message.delta' && !current.text) {
          current.text = true;
          firstText.push(at);
        }
        if (type === 'turn.completed' || type === 'turn.failed' || type === 'turn.cancelled') {
          if (type !== 'turn.completed') console.warn(`turn ended ${type}: ${JSON.stringify(event.data)}`);
          total.push(at);
          current.done();
        }
      });
      await new Promise((r) => setTimeout(r, 200));
      for (let i = 0; i < TURNS + 3; i++) {
        const ended = new Promise((resolve) => {
          current = { id: null, t0: performance.now(), first: false, text: false, done: resolve };
        });
        const pending = [];
        const res = await call(base, 'POST', '/v1/agent_turns', TOKEN, { session_id: session, message }, ctx);
        current.id = res.body.id;
        void pending;
        await ended;
        if (i < 3) [firstEvent, firstText, total].forEach((list) => list.splice(0)); // warm-up
      }
      close();
      const med = (list) => round(percentile([...list].sort((a, b) => a - b), 50), 1);
      return { first_event_ms: med(firstEvent), first_text_ms: med(firstText), end_to_end_ms: med(total), p99_end_to_end_ms: round(percentile([...total].sort((a, b) => a - b), 99), 1) };
    }

    // 1 and 2.
    const simple = await timedTurns(SIMPLE);
    console.log(`submit to first event (${SIMPLE}): median ${simple.first_event_ms} ms; to first text ${simple.first_text_ms} ms; end to end ${simple.end_to_end_ms} ms`);
    const three = await timedTurns(THREE_TOOLS);
    console.log(`three-tool-call turn (${THREE_TOOLS}): median ${three.end_to_end_ms} ms end to end (p99 ${three.p99_end_to_end_ms} ms)`);

    // 3. Idle followers.
    const sessions = await Promise.all(Array.from({ length: 10 }, newSession));
    const closers = Array.from({ length: FOLLOWERS }, (_, i) => follow(base, `/v1/agent_events:stream?session_id=${sessions[i % sessions.length]}`, ctx, () => {}));
    await new Promise((r) => setTimeout(r, 2000));
    const idleCpu0 = cpuSeconds(proc.pid);
    const idle0 = performance.now();
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const idlePercent = round(((cpuSeconds(proc.pid) - idleCpu0) / ((performance.now() - idle0) / 1000)) * 100, 2);
    closers.forEach((close) => close());
    console.log(`${FOLLOWERS} idle SSE followers for ${IDLE_S} s: ${idlePercent} % of a core`);

    // 4. GET /v1/installs p99, idle and while 20 turns run.
    async function installsP99(ms) {
      const lat = [];
      const end = performance.now() + ms;
      while (performance.now() < end) {
        const t0 = performance.now();
        await call(base, 'GET', '/v1/installs', TOKEN, undefined, ctx);
        lat.push(performance.now() - t0);
      }
      lat.sort((a, b) => a - b);
      return { n: lat.length, p50: round(percentile(lat, 50), 2), p99: round(percentile(lat, 99), 2) };
    }
    const idleList = await installsP99(5000);
    const busySessions = await Promise.all(Array.from({ length: BUSY_TURNS }, newSession));
    const busyTurns = await Promise.all(busySessions.map(async (s) => (await call(base, 'POST', '/v1/agent_turns', TOKEN, { session_id: s, message: BUSY }, ctx)).body.id));
    await new Promise((r) => setTimeout(r, 300));
    const busyList = await installsP99(5000);
    const stillRunning = (await Promise.all(busyTurns.map(async (id) => (await call(base, 'GET', `/v1/agent_turns/${id}`, TOKEN, undefined, ctx)).body.state))).filter((s) => s === 'RUNNING').length;
    // Those still running are cancelled (one that already ended answers 422, which is fine here).
    await Promise.all(busyTurns.map((id) => call(base, 'POST', `/v1/agent_turns/${id}:cancel`, TOKEN, undefined, ctx).catch(() => undefined)));
    const ratio = round(busyList.p99 / idleList.p99, 2);
    console.log(`GET /v1/installs p99: idle ${idleList.p99} ms (${idleList.n} requests), with ${BUSY_TURNS} turns running ${busyList.p99} ms (${busyList.n}; ${stillRunning} still running at the end): ${ratio}x`);

    const result = {
      date: new Date().toISOString(), node: process.version, model: 'local', turns: TURNS,
      submit_to_first_event: simple, three_tool_call_turn: three,
      idle_followers: { followers: FOLLOWERS, seconds: IDLE_S, server_core_percent: idlePercent },
      installs_while_busy: { idle: idleList, busy: busyList, running_turns: BUSY_TURNS, still_running_at_end: stillRunning, p99_ratio: ratio },
      budgets: BUDGET,
      pass: {
        first_event: simple.first_event_ms < BUDGET.firstEventMedianMs,
        three_tool_turn: three.end_to_end_ms < BUDGET.threeToolTurnMedianMs,
        idle_followers: idlePercent < BUDGET.idleFollowersCorePercent,
        installs_p99: ratio <= BUDGET.busyP99Ratio,
      },
    };
    writeFileSync(join(RESULTS, 'agents.json'), `${JSON.stringify(result, null, 2)}\n`);
    const ok = Object.values(result.pass).every(Boolean);
    console.log(`${ok ? 'PASS' : 'FAIL'} (budgets: first event < ${BUDGET.firstEventMedianMs} ms, three-tool turn < ${BUDGET.threeToolTurnMedianMs} ms, ` +
      `${FOLLOWERS} idle followers < ${BUDGET.idleFollowersCorePercent} % of a core, installs p99 busy <= ${BUDGET.busyP99Ratio}x idle)`);
    process.exitCode = ok ? 0 : 1;
  } finally {
    await stopProcess(proc);
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
