// `svc identity change-password` without its password flags (the flags would leave the passwords in
// shell history and in `ps`): on a terminal it asks for the current password and for the new one
// twice, without echoing them; from a pipe it reads the current password from the first line of
// stdin and the new one from the second (`printf '%s\n%s\n' "$OLD" "$NEW" | svc identity
// change-password`). A flag that was given is used as it is.
// `svc identity create-session` likewise: the password asked without echo, and when the account
// asks for a second factor (401 TWO_FACTOR_CODE_REQUIRED) the code, then the sign-in is made again;
// from a pipe, the password is the first line and the code (if any) the second.
// `svc identity complete-password-reset --token T` asks for the new password the same way (there is no
// current one).
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { CliError, EXIT } from './errors.js';
import type { Invocation } from './execute.js';
import type { RenderContext } from './presenters.js';

/** Asks on stderr and reads one line from the terminal, showing nothing of what is typed. */
async function askHidden(question: string): Promise<string> {
  process.stderr.write(question);
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  const rl = createInterface({ input: process.stdin, output: silent, terminal: true });
  try {
    return await new Promise<string>((resolve, reject) => {
      rl.once('SIGINT', () => reject(new CliError('interrupted', EXIT.INTERRUPTED)));
      rl.once('close', () => reject(new CliError('the input ended before the password', EXIT.USAGE)));
      rl.question('', resolve);
    });
  } finally {
    rl.removeAllListeners('close');
    rl.close();
    process.stderr.write('\n');
  }
}

/** Every line of stdin (a pipe), without their line ends. */
async function stdinLines(): Promise<string[]> {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text.split(/\r?\n/);
}

/** The presenter's prepare: fills --current-password and --new-password when they were left out. */
export async function promptPasswords({ inv }: { inv: Invocation }): Promise<void> {
  const flag = (name: string) => inv.spec.flags.find((f) => f.flag === name);
  const current = flag('current-password');
  const next = flag('new-password');
  if (!next) return;
  const missing = [current, next].filter((f): f is NonNullable<typeof f> => f !== undefined && inv.values.get(f) === undefined);
  if (missing.length === 0) return;
  if (process.stdin.isTTY) {
    if (current && missing.includes(current)) inv.values.set(current, await askHidden('Current password: '));
    if (missing.includes(next)) {
      const first = await askHidden('New password (8-256 characters): ');
      if ((await askHidden('The new password again: ')) !== first) throw new CliError('the two new passwords differ: nothing was changed', EXIT.USAGE);
      inv.values.set(next, first);
    }
    return;
  }
  const lines = await stdinLines();
  missing.forEach((f, i) => {
    const line = lines[i];
    if (line === undefined || line === '') {
      throw new CliError(`--${f.flag} was not given and line ${i + 1} of stdin is empty: give ${current ? 'the current password on the first line and the new one on the next' : 'the new password on the first line'}`, EXIT.USAGE);
    }
    inv.values.set(f, line);
  });
}

/** A reset link used: every session was signed out. */
export function renderPasswordReset({ body, o }: RenderContext): void {
  const n = (body as { revoked_sessions: number }).revoked_sessions;
  o.out.write(`Password set${n ? `; ${n} session${n === 1 ? ' was' : 's were'} signed out` : ''}. Sign in with it.\n`);
}

/** What the change did, in a line. */
export function renderPasswordChanged({ body, o }: RenderContext): void {
  const n = (body as { revoked_sessions: number }).revoked_sessions;
  o.out.write(`Password changed${n ? `; ${n} other session${n === 1 ? ' was' : 's were'} signed out` : ''}.\n`);
}

/** The presenter's prepare of `svc identity create-session`: --password (and --code from a pipe) when left out. */
export async function promptSignIn({ inv }: { inv: Invocation }): Promise<void> {
  const password = inv.spec.flags.find((f) => f.flag === 'password');
  const code = inv.spec.flags.find((f) => f.flag === 'code');
  if (!password || inv.values.get(password) !== undefined) return;
  if (process.stdin.isTTY) {
    inv.values.set(password, await askHidden('Password: '));
    return;
  }
  const [first, second] = await stdinLines();
  if (!first) throw new CliError('--password was not given and line 1 of stdin is empty: give the password on the first line (and a two-factor code on the second)', EXIT.USAGE);
  inv.values.set(password, first);
  if (code && second && inv.values.get(code) === undefined) inv.values.set(code, second.trim());
}

/** The presenter's retry of `svc identity create-session`: on a terminal, the two-factor code the account asks for. */
export async function askCodeAfterRefusal({ err, inv }: { err: CliError; inv: Invocation }): Promise<boolean> {
  const code = inv.spec.flags.find((f) => f.flag === 'code');
  if (err.reason !== 'TWO_FACTOR_CODE_REQUIRED' || !code || inv.values.get(code) !== undefined || !process.stdin.isTTY) return false;
  const answer = (await askHidden('Two-factor code (from your authenticator app, or a recovery code): ')).trim();
  if (!answer) return false;
  inv.values.set(code, answer);
  return true;
}
