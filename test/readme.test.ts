// README.md and the walkthrough guides in docs/ followed as a reader follows them: every ```sh
// block, file after file in the order WALK declares, in the order each file gives them, pasted
// into two terminals. Blocks marked <!-- server --> go to the server terminal: each stops
// the server running there (SIGINT to its process group, as Ctrl-C does) and runs the block, which
// ends with a long-running `npm start`. Every other block goes to ONE client bash process, in
// order, so variables, functions, files and the login carry over from block to block exactly as
// they do for a reader, and the first failing command stops the walk (errexit, nounset, pipefail).
// The few blocks that are not steps of the walk are marked <!-- not run: reason --> and listed
// below.
//
// The only differences from a reader's machine: a fresh working directory (with its own `data/`)
// and HOME (the CLI's login), free ports (PORT, SVC_PREVIEW_PORT, and SVC_API_URL naming the
// API), DATABASE_URL when the suite runs on PostgreSQL, and `svc`, `npx svc` and `npm start` as
// shell functions running this checkout's `svc` as the other process tests do (SVC_COMMAND: the
// build, fresh, see test/processes.ts; `npm ci` has been done). `svc
// login` is approved the way the reader does it, by signing in on the /device page (over HTTP).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { FormBrowser } from './device-form.js';
import { createTestDatabase, DIALECT, freePort, type TestDatabase } from './harness.js';
import { dbEnv, ROOT, startSvc, SVC_SHELL_COMMAND, type RunningSvc } from './processes.js';

/**
 * The files the walk follows, in the order a reader does: the README (whose quick start starts the
 * server and sets up the shell every guide goes on from), then each guide in docs/ that has shell
 * blocks. A guide's blocks may use what an earlier file left in the shell ($API, field, $S, $WS,
 * `svc` on the PATH), never what a later one does. Every docs/ file with a shell block must be
 * listed (a static check below says which is not). `operator: true` marks the operator guides,
 * whose blocks mostly need what the walk lacks (docker, kubectl, systemd, another machine): their
 * `not run` blocks do not count toward the limit on skipped blocks. `sqlite` names why a guide is
 * walked in the SQLite pass only (its steps are the local, SQLite ones; test/backup.test.ts covers
 * PostgreSQL).
 */
const WALK: { file: string; operator?: true; sqlite?: string }[] = [
  { file: 'README.md' },
  { file: 'docs/cli.md' },
  { file: 'docs/secrets.md' },
  { file: 'docs/snippets.md' },
  { file: 'docs/agents.md' },
  { file: 'docs/selling.md' },
  { file: 'docs/plans.md' },
  { file: 'docs/authentication.md' },
  { file: 'docs/machines.md' },
  { file: 'docs/testing.md' },
  { file: 'docs/scaling.md', operator: true },
  { file: 'docs/production.md', operator: true },
  { file: 'docs/observability.md', operator: true },
  // last: they stop the server and start it on a restored, then an upgraded, data dir
  { file: 'docs/backups.md', operator: true, sqlite: 'restores into a new SQLite data dir; with DATABASE_URL the target database is the walk\'s own, not empty' },
  { file: 'docs/upgrading.md', operator: true, sqlite: 'backs up and migrates the local SQLite data dir' },
];
const SOURCE = process.env.README_CHECKOUT ?? ROOT;
const TEXTS = new Map(WALK.map(({ file }) => [file, readFileSync(join(SOURCE, file), 'utf8')]));
// a fresh checkout's server block runs `npm ci` first
const BLOCK_TIMEOUT_MS = process.env.README_CHECKOUT ? 900_000 : 240_000;

interface Block {
  /** 1-based position among the shell blocks of the whole walk */
  n: number;
  /** the file it is in (README.md, docs/...) */
  file: string;
  /** line of the opening fence in that file */
  line: number;
  kind: 'client' | 'server' | 'skip';
  reason?: string;
  code: string;
}

/** Every ```sh / ```bash block of one markdown text, in order, with the marker comment before it. */
function shellBlocks(file: string, text: string, first: number): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, lang] = open;
    let j = i + 1;
    while (j < lines.length && lines[j]!.trimEnd() !== `${indent}\`\`\``) j++;
    if (lang === 'sh' || lang === 'bash') {
      let k = i - 1;
      while (k >= 0 && lines[k]!.trim() === '') k--;
      const marker = /^<!-- (server|not run: (.+?)) -->$/.exec(lines[k]?.trim() ?? '');
      blocks.push({
        n: first + blocks.length,
        file,
        line: i + 1,
        kind: marker?.[1] === 'server' ? 'server' : marker ? 'skip' : 'client',
        ...(marker?.[2] ? { reason: marker[2] } : {}),
        code: lines.slice(i + 1, j).map((l) => l.slice(indent!.length)).join('\n'),
      });
    }
    i = j;
  }
  return blocks;
}

/** The blocks of every file of WALK, in the walk's order, numbered through. */
function readmeBlocks(): Block[] {
  const blocks: Block[] = [];
  for (const { file } of WALK) blocks.push(...shellBlocks(file, TEXTS.get(file)!, blocks.length + 1));
  return blocks;
}

/** Where a block is, for messages: `docs/secrets.md:42`. */
const at = (b: Block) => `${b.file}:${b.line}`;

/** The variables set on the `npm start` line of a server block. */
function startEnv(code: string): Record<string, string> {
  const start = code.split('\n').find((line) => /\bnpm start\b/.test(line)) ?? '';
  const env: Record<string, string> = {};
  for (const m of start.slice(0, start.indexOf('npm start')).matchAll(/([A-Z_][A-Z0-9_]*)=('[^']*'|"[^"]*"|\S+)/g)) {
    env[m[1]!] = m[2]!.replace(/^['"]|['"]$/g, '');
  }
  return env;
}

/** A block's commands: lines joined where a quote is still open or a line ends with a backslash. */
function logicalLines(code: string): string[] {
  const out: string[] = [];
  let current = '';
  let quote: string | null = null;
  let heredoc: string | null = null;
  for (const line of code.split('\n')) {
    if (heredoc !== null) {
      if (line.trim() === heredoc) heredoc = null;
      continue;
    }
    current += (current ? '\n' : '') + line;
    for (let i = 0; i < line.length; i++) {
      const c = line[i]!;
      if (quote === null && c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) break;
      if (quote !== "'" && c === '\\') i++;
      else if (quote === null && (c === "'" || c === '"')) quote = c;
      else if (c === quote) quote = null;
    }
    if (quote === null && !line.endsWith('\\')) {
      heredoc = /<<-?\s*['"]?(\w+)['"]?/.exec(current)?.[1] ?? null;
      out.push(current);
      current = '';
    }
  }
  if (current) out.push(current);
  return out;
}

/** What both terminals define before the first block: the checkout's `svc`, `npx svc` and `npm`. */
/**
 * README_CHECKOUT=/path/to/a/fresh/clone walks that clone instead, exactly as a newcomer does: the
 * real `npm ci`, `npm start` and `bin/svc`, the default ports (8080 and 8081 must be free) and its
 * own `data/` (a developer's check before a release; the suite itself never sets it).
 */
const CHECKOUT = process.env.README_CHECKOUT;
const PRELUDE = CHECKOUT ? 'set -euo pipefail\n' : `set -euo pipefail
svc() { ${SVC_SHELL_COMMAND} "$@"; }
npx() { if [ "\${1-}" = svc ]; then shift; svc "$@"; else command npx "$@"; fi; }
npm() {
  case "\${1-}" in
    ci) echo "npm ci: done (the test runs this checkout)";;
    start) shift; svc serve "$@";;
    *) echo "the README test runs npm ci and npm start only, not: npm $*" >&2; return 2;;
  esac
}
`;

/** Collects a child's output and lets a caller wait for a marker in it. */
function collect(child: ChildProcess) {
  const state = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d) => (state.stdout += d));
  child.stderr!.on('data', (d) => (state.stderr += d));
  return state;
}

/** The client terminal: one bash process that runs the blocks it is given, one after the other. */
class ClientShell {
  private readonly child: ChildProcess;
  readonly out: { stdout: string; stderr: string };
  private readonly exited: Promise<number | null>;
  private readonly approved = new Set<string>();

  constructor(private readonly dir: string, env: NodeJS.ProcessEnv, approve: (userCode: string) => Promise<void>) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd: dir, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.out = collect(this.child);
    this.exited = once(this.child, 'exit').then(([code]) => code as number | null);
    // `svc login` prints the verification URL with the user code; the reader opens it and approves.
    this.child.stderr!.on('data', () => {
      for (const m of this.out.stderr.matchAll(/\/device\?user_code=([A-Z0-9-]+)/g)) {
        if (this.approved.has(m[1]!)) continue;
        this.approved.add(m[1]!);
        approve(m[1]!).catch((err) => { this.out.stderr += `\n[test] approving ${m[1]} failed: ${err}\n`; });
      }
    });
    this.child.stdin!.write(PRELUDE);
  }

  /** Runs one block in the shell; resolves with what it printed, rejects if the shell stopped. */
  async run(block: Block): Promise<{ stdout: string; stderr: string }> {
    const file = join(this.dir, `.readme-block-${block.n}.sh`);
    writeFileSync(file, `${block.code}\n`);
    const done = `__readme_block_${block.n}_done__`;
    const from = { stdout: this.out.stdout.length, stderr: this.out.stderr.length };
    this.child.stdin!.write(`source ${file} </dev/null\necho ${done}\n`);
    const finished = new Promise<void>((resolve) => {
      const check = () => {
        if (this.out.stdout.includes(`${done}\n`, from.stdout)) {
          this.child.stdout!.off('data', check);
          resolve();
        }
      };
      this.child.stdout!.on('data', check);
      check();
    });
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      finished.then(() => 'done' as const),
      this.exited.then((code) => `exited with ${code}` as const),
      new Promise<string>((resolve) => { timer = setTimeout(() => resolve(`still running after ${BLOCK_TIMEOUT_MS} ms`), BLOCK_TIMEOUT_MS); }),
    ]);
    clearTimeout(timer);
    const printed = {
      stdout: this.out.stdout.slice(from.stdout).replace(`${done}\n`, ''),
      stderr: this.out.stderr.slice(from.stderr),
    };
    if (outcome !== 'done') {
      throw new Error(`block ${block.n} (${at(block)}) stopped the walk: the client shell ${outcome}.\n--- block ---\n${block.code}\n--- stdout ---\n${printed.stdout}\n--- stderr ---\n${printed.stderr}`);
    }
    return printed;
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    this.child.stdin!.end();
    await Promise.race([this.exited, new Promise((r) => setTimeout(r, 5_000))]);
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

/** The server terminal: runs a server block (ending in `npm start`) until the next one replaces it. */
class ServerTerminal {
  private child: ChildProcess | undefined;
  private exited: Promise<unknown> | undefined;
  out = { stdout: '', stderr: '' };
  readonly starts: { block: number; stdout: () => string }[] = [];

  constructor(private readonly dir: string, private readonly env: NodeJS.ProcessEnv, private readonly api: string) {}

  async start(block: Block): Promise<void> {
    await this.stop();
    const child = spawn('bash', ['--noprofile', '--norc', '-c', `${PRELUDE}\n${block.code}`], { cwd: this.dir, env: this.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.child = child;
    const out = collect(child);
    this.out = out;
    this.exited = once(child, 'exit');
    this.starts.push({ block: block.n, stdout: () => out.stdout });
    let ended = false;
    void this.exited.then(() => { ended = true; });
    const deadline = Date.now() + BLOCK_TIMEOUT_MS;
    for (;;) {
      if (ended) throw new Error(`block ${block.n} (${at(block)}): the server exited before it was ready.\n--- block ---\n${block.code}\n--- stdout ---\n${out.stdout}\n--- stderr ---\n${out.stderr}`);
      if (await fetch(`${this.api}/readyz`).then((r) => r.status === 200, () => false)) return;
      if (Date.now() > deadline) throw new Error(`block ${block.n} (${at(block)}): the server was not ready in time.\n${out.stdout}\n${out.stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Ctrl-C: SIGINT to the foreground process group, then wait for it to end. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    process.kill(-child.pid!, 'SIGINT');
    const killed = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }, 30_000);
    await this.exited;
    clearTimeout(killed);
  }
}

describe('README.md and the guides, every shell block in order (static checks)', () => {
  const blocks = readmeBlocks();
  const client = blocks.filter((b) => b.kind === 'client');

  test('every docs/ file with a shell block is in the walk', () => {
    const docs = readdirSync(join(SOURCE, 'docs'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
    for (const file of docs) {
      if (shellBlocks(file, readFileSync(join(SOURCE, file), 'utf8'), 1).length === 0) continue;
      assert.ok(WALK.some((w) => w.file === file), `${file} has shell blocks: add it to WALK in test/readme.test.ts, where a reader would follow it`);
    }
    for (const { file } of WALK) assert.ok(existsSync(join(SOURCE, file)), file);
    assert.equal(WALK[0]!.file, 'README.md', 'the walk starts with the README');
  });

  test('every block is a step of the walk, except the few that say why not', () => {
    assert.ok(client.length >= 15, `only ${client.length} client blocks`);
    assert.ok(client.filter((b) => b.file === 'README.md').length >= 4, 'the quick start is in the README');
    assert.equal(blocks.filter((b) => b.kind === 'server')[0]?.n, blocks.find((b) => b.kind !== 'skip')?.n, 'the first block of the walk starts the server');
    const operator = new Set(WALK.filter((w) => w.operator).map((w) => w.file));
    const skipped = blocks.filter((b) => b.kind === 'skip');
    const counted = skipped.filter((b) => !operator.has(b.file));
    assert.ok(counted.length <= 5, `too many blocks are not run: ${counted.map(at).join(', ')}`);
    for (const b of skipped) assert.ok((b.reason ?? '').length >= 10, `block at ${at(b)} says why it is not run`);
  });

  test('no jq, no uuidgen, no slow `npx svc`, no etag arithmetic; servers only start in the server terminal', () => {
    const all = blocks.filter((b) => b.kind !== 'skip').map((b) => b.code).join('\n');
    assert.doesNotMatch(all, /\|\s*jq\b|\buuidgen\b/);
    for (const [file, text] of TEXTS) {
      assert.doesNotMatch(text, /\bnpx svc\b/, `${file}: the README gets \`svc\` on the PATH once and the guides use it everywhere`);
      assert.doesNotMatch(text, /\$\(\(\s*\$?\w*ETAG/i, `${file}: an etag is opaque: never computed`);
    }
    for (const b of client) assert.doesNotMatch(b.code, /\bnpm start\b|\bsvc serve\b/, `block at ${at(b)} starts a server in the client shell`);
  });

  test('every curl whose body reaches the terminal ends it with a newline', () => {
    for (const b of client) {
      const commands = logicalLines(b.code).filter((l) => /(^|[;&|(]\s*)curl\s/.test(l) && !l.trim().startsWith('#'));
      for (const cmd of commands) {
        // captured by $(...), piped, redirected, or with its own -w / -o
        const quiet = /\$\(\s*curl\s/.test(cmd) || /\bcurl\s[^|]*\|/.test(cmd) || /\s-w\s|--write-out|\s-o\s|\s>\s*\S/.test(cmd);
        assert.ok(quiet, `${at(b)}: curl prints no trailing newline: ${cmd.trim()}`);
      }
    }
  });
});

describe('README.md and the guides followed top to bottom in two terminals', () => {
  let db: TestDatabase;
  let shell: ClientShell | undefined;
  let server: ServerTerminal | undefined;
  const printed = new Map<number, { stdout: string; stderr: string }>();
  const blocks = readmeBlocks();

  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await shell?.close();
    await server?.stop();
    await db.drop();
  });

  test('every block runs as written, with one server and one client shell', async (t) => {
    const [port, previewPort] = CHECKOUT ? [8080, 8081] : [await freePort(), await freePort()];
    const api = `http://127.0.0.1:${port}`;
    const dir = CHECKOUT ?? db.dataDir;
    const home = join(db.dataDir, 'home');
    mkdirSync(home, { mode: 0o700 });
    // The sandbox example imports the built engine from ./dist, as a reader's checkout has it.
    if (!CHECKOUT) symlinkSync(join(ROOT, 'dist'), join(db.dataDir, 'dist'));
    const env: NodeJS.ProcessEnv = CHECKOUT
      // the user's own HOME, for npm's configuration; the CLI's login goes to a fresh config dir
      ? { PATH: process.env.PATH, HOME: process.env.HOME, XDG_CONFIG_HOME: join(home, '.config'), TMPDIR: process.env.TMPDIR, LANG: 'C.UTF-8' }
      : {
          PATH: process.env.PATH, HOME: home, TMPDIR: process.env.TMPDIR, LANG: 'C.UTF-8',
          PORT: String(port), SVC_PREVIEW_PORT: String(previewPort), SVC_API_URL: api,
          ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}),
          README_ROOT: ROOT,
        };
    const owner = startEnv(blocks.find((b) => b.kind === 'server')!.code);
    assert.ok(owner.SVC_BOOTSTRAP_EMAIL && owner.SVC_BOOTSTRAP_PASSWORD, 'the first server block creates the owner');
    server = new ServerTerminal(dir, env, api);
    shell = new ClientShell(dir, env, async (code) => {
      const answer = await new FormBrowser(api, owner.SVC_BOOTSTRAP_EMAIL!, owner.SVC_BOOTSTRAP_PASSWORD!).decide(code, 'approve');
      assert.equal(answer.status, 200, answer.html);
    });
    const took: { block: Block; ms: number }[] = [];
    const sqliteOnly = new Set(WALK.filter((w) => w.sqlite).map((w) => w.file));
    for (const block of blocks) {
      if (db.databaseUrl && sqliteOnly.has(block.file)) continue;
      const started = Date.now();
      if (block.kind === 'server') await server.start(block);
      else if (block.kind === 'client') printed.set(block.n, await shell.run(block));
      took.push({ block, ms: Date.now() - started });
    }
    // where the walk's time goes (reported, never asserted): the longest blocks
    for (const { block, ms } of took.sort((a, b) => b.ms - a.ms).slice(0, 8)) t.diagnostic(`block ${block.n} (${at(block)}, ${block.kind}): ${(ms / 1000).toFixed(1)} s`);
  });

  /** What the client block containing `needle` (in any file of the walk) printed on stdout. */
  const outputOf = (needle: string | RegExp) => {
    const block = blocks.find((b) => b.kind === 'client' && (typeof needle === 'string' ? b.code.includes(needle) : needle.test(b.code)));
    assert.ok(block, `a block of the walk contains ${needle}`);
    const out = printed.get(block.n);
    assert.ok(out, `block ${block.n} (${at(block)}) ran`);
    return out.stdout;
  };

  test('the quick start: every operation SUCCEEDED, the install and its preview answered, the token was revoked', () => {
    const quick = blocks.filter((b) => b.kind === 'client' && b.file === 'README.md' && printed.has(b.n)).map((b) => printed.get(b.n)!.stdout).join('');
    assert.deepEqual(quick.split('\n').filter((l) => /^(RUNNING|SUCCEEDED|FAILED|CANCELLED)$/.test(l)), ['SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED', 'SUCCEEDED'], quick);
    assert.equal(quick.split('\n').filter((l) => /"install_id":"inst_/.test(l)).length, 2, quick);
    assert.match(outputOf('-X DELETE $API/v1/auth/sessions/current'), /^401\n204\n$/m);
    assert.ok(server!.starts[0]!.stdout().includes('"msg":"bootstrap owner ready"'));
  });

  test('the command-line client: logged in by the device grant, installed, read a secret, ran snippets', () => {
    assert.match(outputOf(/^svc whoami/m), /owner@example\.com/);
    assert.match(outputOf('svc installs get'), /"install_id":"inst_/);
    assert.match(outputOf('svc snippets run'), /^exit 1$/m);
    // the secret's id lists its versions' events too, the reads among them
    assert.match(outputOf('svc audit-events list --resource-id'), /secret\.version\.access/);
  });

  test('bring your own server: the agent joined, the machine was ACTIVE and a node, and the agent stopped by itself when it was deleted', () => {
    assert.match(outputOf('$JOIN --state-dir'), /ACTIVE/);
    const end = outputOf('wait $AGENT');
    assert.match(end, /\S+-[0-9a-z]{5}\n/, 'the machine\'s node among the cluster\'s');
    assert.match(end, /the agent stopped with exit status 3/);
    assert.doesNotMatch(end, /svcb_|svcm_/, 'the agent logs no token or credential');
  });

  test('the walkthroughs: secrets, audit log, snippets, plans and quotas', () => {
    const secrets = outputOf('"value": "first-password"');
    assert.match(secrets, /"value":"second-password"/);
    assert.match(secrets, /"value":"first-password"/);
    assert.match(outputOf('/v1/audit_events'), /"action":"secret\.version\.access"/);
    const snippets = outputOf('$API/v1/snippets:execute');
    assert.match(snippets, /"state":"succeeded"/);
    assert.match(snippets, /TIMEOUT/);
    const planOutput = outputOf('subscription:changeTier');
    const plans = planOutput.split('\n');
    for (const line of ['one 202', 'two 202', 'three 202', 'four 429', 'four 202']) assert.ok(plans.includes(line), `${line}\n${planOutput}`);
    assert.match(planOutput, /"reason":"PLAN_SET_BY_OPERATOR"/);
    assert.match(planOutput, /^\S+ \(ws_\w+\): free -> pro \(change request scr_\w+\)$/m);
  });

  test('inviting people: the invitation was pending, accepting made the account, which joined as a member; the link worked once', () => {
    const out = outputOf('$API/v1/invitations:accept').split('\n');
    for (const line of ['pending', 'member', 'again: 404']) assert.ok(out.includes(line), `${line}\n${out.join('\n')}`);
    assert.ok(out.some((l) => /"account_created":true/.test(l)), out.join('\n'));
  });

  test('two factors: set up with a code; sign-in asks for it, takes each code once and a recovery code; the CLI reads it from a pipe; a workspace requires it; it turns off', () => {
    const out = outputOf('$API/v1/me/two_factor:enroll').split('\n');
    for (const line of ['no code: 401', 'the code: 201', 'the same code: 401', 'a recovery code: 201', 'true', 'TWO_FACTOR_REQUIRED', 'false']) {
      assert.ok(out.includes(line), `${line}\n${out.join('\n')}`);
    }
    assert.ok(out.some((l) => /^usr_\w+$/.test(l)), `the CLI signed in\n${out.join('\n')}`);
  });

  test('your password: changed with the current one through the API and the CLI; the other session stopped', () => {
    const out = outputOf('$API/v1/me/password').split('\n');
    for (const line of ['{"revoked_sessions":1}', 'other session: 401', 'Password changed.']) assert.ok(out.includes(line), `${line}\n${out.join('\n')}`);
  });

  test('agents: svc chat answers and creates a secret after approval; the curl walk streams, waits for approval and completes', () => {
    const chat = outputOf("svc chat ops 'How many installs are there?'");
    assert.match(chat, /There (is|are) \S+ installs?\./);
    assert.match(chat, /Created secret deploy-token \(sec_/);
    const walk = outputOf('/v1/agent_events:stream?turn_id=$TURN').split('\n');
    for (const line of ['event: turn.queued', 'event: turn.completed', 'COMPLETED', 'WAITING_FOR_PERMISSION', 'APPROVED']) {
      assert.ok(walk.includes(line), `${line}\n${walk.join('\n')}`);
    }
    assert.ok(walk.some((l) => /^Created secret greeting \(sec_/.test(l)), walk.join('\n'));
  });

  test('selling: a second user orders the offer, pays on the local checkout page and reaches the delivered URL; the seller sees the order', () => {
    const order = outputOf('$API/v1/offers/$OFR/order_drafts');
    assert.match(order, /\/i\/[0-9A-Za-z]{8}\n/, 'the offer\'s link');
    assert.match(order, /^compute\n(clu_[0-9a-z]{26})\n/m, 'the draft went to compute, then configure with its cluster');
    assert.match(order, /"greeting":"Hello from Examples"/, 'the locked value won');
    assert.match(order, /\/checkout\/chk_[0-9a-z]{26}\n/, 'the hosted checkout page');
    const paid = outputOf('wait_status done');
    assert.match(paid, /^303 \S+\/checkout\/return\/local\?session_id=chk_/m);
    const orderId = /^(ord_[0-9a-z]{26})$/m.exec(paid)?.[1];
    assert.ok(orderId, paid);
    assert.match(paid, /"kind":"install_url"/, 'the delivered URL answered');
    assert.match(paid, /^delivered$/m);
    assert.ok(paid.split('\n').filter((l) => l === orderId).length >= 2, 'the audit log names the order');
  });

  test('rotating the key leaves a service that reads old values with a plain npm start', () => {
    assert.match(outputOf('svc admin rotate-keys'), /done: everything is sealed under the current key/);
    assert.match(outputOf('rm data/new.key'), /^still readable$/m);
  });

  test('backups and upgrades (SQLite pass): the backup names key ids, never a key; the restored service reads the secret back', { skip: DIALECT !== 'sqlite' && 'the guides walk a local SQLite svc' }, () => {
    assert.match(outputOf('svc admin backup --to svc-backup.tar.gz'), /"key_id"|key/i);
    assert.match(outputOf(/latest:access .*json value/), /^kept safe$/m);
    assert.match(outputOf('svc admin backup --to before-upgrade.tar.gz'), /\S/);
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
