// README.md's quick start works as written: the server block's environment starts a real
// `svc serve` (from source, on this test's database), and the `<!-- quickstart -->` shell blocks
// run in order in one bash, as a newcomer pastes them, with only SVC_API_URL pointing at that
// server. Every command must succeed (errexit, nounset, pipefail: an unset variable or an error
// answer stops it), and the outcomes the README promises are checked.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from './harness.js';
import { dbEnv, ROOT, startSvc, type RunningSvc } from './processes.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The fenced blocks that follow a marker comment, in order. */
function blocksAfter(marker: string): string[] {
  const re = new RegExp(`<!-- ${marker} -->\\s*\\n\`\`\`(?:sh|bash)\\n([\\s\\S]*?)\\n\`\`\``, 'g');
  return [...README.matchAll(re)].map((m) => m[1]!);
}

/** The variables the server block sets on its `npm start` line. */
function serverEnv(): Record<string, string> {
  const [block] = blocksAfter('quickstart:server');
  assert.ok(block, 'README has a <!-- quickstart:server --> block');
  const start = block.split('\n').find((line) => /\bnpm start\b/.test(line));
  assert.ok(start, 'the server block runs npm start');
  const env: Record<string, string> = {};
  for (const m of start.slice(0, start.indexOf('npm start')).matchAll(/([A-Z_][A-Z0-9_]*)=('[^']*'|"[^"]*"|\S+)/g)) {
    env[m[1]!] = m[2]!.replace(/^['"]|['"]$/g, '');
  }
  return env;
}

async function bash(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('bash', ['--noprofile', '--norc', '-c', `set -euo pipefail\n${script}`], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr };
}

describe('README quick start', () => {
  let db: TestDatabase;
  let svc: RunningSvc;

  before(async () => {
    db = await createTestDatabase();
    svc = await startSvc(dbEnv(db, serverEnv()));
  });
  after(async () => {
    await svc?.stop();
    await db.drop();
  });

  test('the blocks are there, use no jq or uuidgen, and set every variable before use (nounset)', () => {
    const blocks = blocksAfter('quickstart');
    assert.ok(blocks.length >= 4, `only ${blocks.length} quickstart blocks`);
    const all = blocks.join('\n');
    assert.doesNotMatch(all, /\|\s*jq\b|\buuidgen\b/);
    assert.match(all, /\$API\/v1\/clusters/);
    assert.match(all, /preview_hostnames:bindFloating/);
    assert.match(all, /-X DELETE \$API\/v1\/workspaces\/\$WS/);
  });

  test('pasted in order against svc serve, every step succeeds to the end', async () => {
    const script = blocksAfter('quickstart').join('\n');
    const res = await bash(script, { SVC_API_URL: svc.url });
    assert.equal(res.code, 0, `the quick start stopped (exit ${res.code}).\nstdout:\n${res.stdout}\nstderr:\n${res.stderr}`);
    const lines = res.stdout.trim().split('\n');
    assert.doesNotMatch(res.stdout, /"error":\{/, res.stdout);
    // Each operation it waits for printed its state: all SUCCEEDED (cluster, install, bind, deletion).
    const states = lines.filter((l) => /^(RUNNING|SUCCEEDED|FAILED|CANCELLED)$/.test(l));
    assert.deepEqual(states, ['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED'], res.stdout);
    // The install URL and the preview hostname answered through the preview router.
    assert.equal(lines.filter((l) => /"install_id":"inst_/.test(l)).length, 2, res.stdout);
    // The deletion revoked the API token; logging out answered 204.
    assert.deepEqual(lines.slice(-2), ['401', '204']);

    // The server logged the bootstrap owner, not the "no user" hint.
    assert.ok(svc.logs.some((l) => l.msg === 'bootstrap owner ready'));
    assert.ok(!svc.logs.some((l) => String(l.msg).startsWith('no user exists yet')));
  });
});

describe('README walkthroughs after the quick start (secrets, audit log, snippets, plans and quotas)', () => {
  let db: TestDatabase;
  let svc: RunningSvc;

  before(async () => {
    db = await createTestDatabase();
    svc = await startSvc(dbEnv(db, serverEnv()));
  });
  after(async () => {
    await svc?.stop();
    await db.drop();
  });

  test('the sections marked <!-- walkthrough --> run to the end after the quick start, as written', async () => {
    const walkthroughs = blocksAfter('walkthrough');
    assert.ok(walkthroughs.length >= 4, `only ${walkthroughs.length} walkthrough blocks`);
    assert.doesNotMatch(walkthroughs.join('\n'), /\|\s*jq\b|\buuidgen\b/);
    const res = await bash([...blocksAfter('quickstart'), ...walkthroughs].join('\n'), { SVC_API_URL: svc.url });
    assert.equal(res.code, 0, `a walkthrough stopped (exit ${res.code}).\nstdout:\n${res.stdout}\nstderr:\n${res.stderr}`);
    // Secrets: the values read back as the README says; the audit log lists the reads.
    assert.match(res.stdout, /"value":"second-password"/, res.stdout);
    assert.match(res.stdout, /"value":"first-password"/, res.stdout);
    assert.match(res.stdout, /"action":"secret\.version\.access"/, res.stdout);
    // Snippets: the run succeeded and the runaway ended with a timeout.
    assert.match(res.stdout, /"state":"succeeded"/, res.stdout);
    assert.match(res.stdout, /TIMEOUT/, res.stdout);
    // Plans: three clusters accepted, the fourth refused with 429 naming the metric.
    for (const line of ['one 202', 'two 202', 'three 202', 'four 429']) assert.ok(res.stdout.split('\n').includes(line), `${line}\n${res.stdout}`);
    assert.match(res.stdout, /"metric":"compute\/clusters"/);
  });
});

describe('first start without a user', () => {
  let db: TestDatabase;
  let svc: RunningSvc;
  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await svc?.stop();
    await db.drop();
  });

  test('logs one line saying how to create one', async () => {
    svc = await startSvc(dbEnv(db));
    const hints = svc.logs.filter((l) => String(l.msg).startsWith('no user exists yet'));
    assert.equal(hints.length, 1);
    assert.match(String(hints[0]!.msg), /svc admin create-user --email .* --password/);
    assert.match(String(hints[0]!.msg), /SVC_BOOTSTRAP_EMAIL and SVC_BOOTSTRAP_PASSWORD/);
  });
});
