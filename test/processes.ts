// Runs `svc` as a child process for the CLI, multi-instance and shutdown tests: one-shot commands,
// and servers whose pino JSON log is read from stdout.
//
// The process runs the build (test/svc-dist.js over dist/, as bin/svc.js runs it): it starts in a
// third of the CPU time the source through tsx takes. test/run.js builds dist/ first when src/ is
// newer; a file run on its own with a stale dist/ (or SVC_TEST_SVC=source) runs the source
// instead (test/svc.ts through tsx), so a test never exercises an old build.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { ROOT } from './paths.js';
import { freePort, type TestDatabase } from './harness.js';

export { ROOT };

function newestMtime(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((n) => newestMtime(join(path, n))));
}

function distIsFresh(): boolean {
  const main = join(ROOT, 'dist', 'main.js');
  return existsSync(main) && statSync(main).mtimeMs >= newestMtime(join(ROOT, 'src'));
}

/** The command line starting `svc` (before its arguments): the build when fresh, else the source. */
export const SVC_COMMAND: readonly [string, ...string[]] = process.env.SVC_TEST_SVC !== 'source' && distIsFresh()
  ? [process.execPath, join(ROOT, 'test/svc-dist.js')]
  : [process.execPath, '--import', import.meta.resolve('tsx'), join(ROOT, 'test/svc.ts')];
const ENTRY = SVC_COMMAND;

/** SVC_COMMAND as a shell command line (for the tests that run `svc` from a shell script). */
export const SVC_SHELL_COMMAND = SVC_COMMAND.map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(' ');

const SECRET_KEY = randomBytes(32).toString('hex');

/** Environment selecting the test database: SQLite in the data dir, or the test's PostgreSQL database; one service key. */
export function dbEnv(db: TestDatabase, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SVC_DATA_DIR: db.dataDir,
    SVC_SECRET_KEY: SECRET_KEY,
    // fault injection and the local model's bracketed triggers (the suite's spawned servers use them)
    SVC_TEST_HOOKS: '1',
    // cheap password hashes (a test hook, see config.ts)
    SVC_TEST_PASSWORD_HASH: 'fast',
    ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}),
    ...extra,
  };
}

/** A minimal environment: nothing of the test runner's (DATABASE_URL, PORT...) leaks in. */
function envFor(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR, NODE_ENV: 'test' };
  return { ...base, ...env };
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `svc <args>` to completion; `input` is written to its stdin. */
export async function runSvc(args: string[], env: Record<string, string>, timeoutMs = 180_000, input?: string): Promise<Finished> {
  const child = spawn(ENTRY[0], [...ENTRY.slice(1), ...args], { cwd: ROOT, env: envFor(env), stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  if (input !== undefined) child.stdin!.end(input);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  return { code, signal, stdout, stderr };
}

/** Starts `svc <args>` without waiting (for commands a test talks to while they run, like `svc login`). */
export function spawnSvc(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(ENTRY[0], [...ENTRY.slice(1), ...args], { cwd: ROOT, env: envFor(env), stdio: ['pipe', 'pipe', 'pipe'] });
}

export interface LogLine {
  msg?: string;
  level?: number;
  reqId?: string;
  [key: string]: unknown;
}

export interface RunningSvc {
  child: ChildProcess;
  /** the listening base URL, from the "svc listening" log line */
  url: string;
  logs: LogLine[];
  stderr(): string;
  /** resolves with the first log line matching, also one already logged */
  waitForLog(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM and wait for the exit */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `svc serve` on a free port and resolves once it logs "svc listening". The preview router
 * gets a free port of its own too, so several processes on one machine never collide on 8081.
 */
export async function startSvc(env: Record<string, string>, timeoutMs = 180_000): Promise<RunningSvc> {
  const previewPort = String(await freePort());
  const child = spawn(ENTRY[0], [...ENTRY.slice(1), 'serve'], {
    cwd: ROOT,
    env: envFor({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', SVC_PREVIEW_PORT: previewPort, ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: LogLine[] = [];
  const waiters: { match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  let stderr = '';
  let partial = '';
  child.stderr!.on('data', (d) => (stderr += d));
  child.stdout!.on('data', (d: Buffer) => {
    partial += d.toString();
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const raw = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      let line: LogLine;
      try {
        line = JSON.parse(raw) as LogLine;
      } catch {
        line = { msg: raw };
      }
      logs.push(line);
      for (const w of [...waiters]) {
        if (w.match(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  });
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }));

  const waitForLog = (match: (l: LogLine) => boolean, ms = timeoutMs) => {
    const seen = logs.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise<LogLine>((resolveLine, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching log line within ${ms} ms; stderr:\n${stderr}`)), ms);
      const waiter = { match, resolve: (l: LogLine) => { clearTimeout(timer); resolveLine(l); } };
      waiters.push(waiter);
      exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`svc exited (${code ?? signal}) before the expected log line; stderr:\n${stderr}`));
      });
    });
  };

  const listening = await waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('svc listening on '));
  return {
    child,
    url: String(listening.url),
    logs,
    stderr: () => stderr,
    waitForLog,
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** A JSON caller of spawned `svc serve` processes with one bearer token: `call(base, method, path, {body, headers})`. */
export function svcCaller(token: string) {
  return async function call(base: string, method: string, path: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
}
