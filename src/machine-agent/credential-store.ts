// Where a machine agent keeps the credential it was given for its one-time token: a real server
// keeps it in `<state dir>/credential` (directory 0700, file 0600, written atomically: a temporary
// file in the same directory, flushed, then renamed, so a crash or a power cut never leaves half a
// credential). A restarted agent (systemd, a reboot) finds it there and never needs the used token.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';

export interface SavedCredential {
  /** the service it was given by (for messages; the --server of the command wins) */
  server: string;
  /** the machine it authenticates (mch_ id), or null when unknown */
  machine_id: string | null;
  /** `svcm_...` */
  credential: string;
}

export interface CredentialStore {
  /** where the credential is kept, for messages (a path, "the service's database") */
  readonly where: string;
  load(): Promise<SavedCredential | null>;
  /** throws when a credential could not be saved (checked before the token is spent) */
  prepare?(): Promise<void>;
  save(saved: SavedCredential): Promise<void>;
  /** forgets it (its machine was deleted or it was revoked); nothing when there is none */
  remove(): Promise<void>;
}

export const CREDENTIAL_FILE = 'credential';

export function fileCredentialStore(stateDir: string): CredentialStore {
  const path = join(stateDir, CREDENTIAL_FILE);
  return {
    where: path,
    async load() {
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
      return parseSaved(text, path);
    },
    async prepare() {
      await rm(await writeTemporary(stateDir, ''), { force: true });
    },
    async save(saved) {
      const tmp = await writeTemporary(stateDir, `${JSON.stringify(saved)}\n`);
      try {
        await rename(tmp, path);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
    },
    async remove() {
      await rm(path, { force: true });
    },
  };
}

/** A new file (0600) in the state dir (made 0700 if missing), flushed to disk; its path. */
async function writeTemporary(stateDir: string, text: string): Promise<string> {
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const tmp = join(stateDir, `.${CREDENTIAL_FILE}.${randomBytes(6).toString('hex')}.tmp`);
  const file = await open(tmp, 'wx', 0o600);
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
  return tmp;
}

/** The file's JSON; a bare `svcm_...` line (written by hand) is accepted too. */
function parseSaved(text: string, path: string): SavedCredential {
  const trimmed = text.trim();
  if (trimmed.startsWith('svcm_') && !/\s/.test(trimmed)) return { server: '', machine_id: null, credential: trimmed };
  try {
    const value = JSON.parse(trimmed) as Partial<SavedCredential>;
    if (typeof value.credential === 'string' && value.credential.length > 0) {
      return { server: typeof value.server === 'string' ? value.server : '', machine_id: typeof value.machine_id === 'string' ? value.machine_id : null, credential: value.credential };
    }
  } catch {
    // said below, without quoting the file (it may hold a credential)
  }
  throw new Error(`${path} holds no machine credential: remove it to join again with a new token`);
}
