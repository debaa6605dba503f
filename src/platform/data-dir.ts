// The data directory holds the SQLite database (with its -wal and -shm files) and, when
// SVC_SECRET_KEY is not set, the generated secret key: owner only (directory 0700, files 0600),
// whatever the umask. A directory or file found more open than that (created by an older version,
// or by hand) is tightened at start, and the caller logs what was changed.
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the service keeps in the data directory. SQLite gives -wal and -shm the database's mode.
 * Every other file under it (git repositories, say) is the service's too: `svc admin backup`
 * archives the whole directory but the live database (it takes a snapshot instead) and the key.
 */
export const DATA_FILES = ['svc.db', 'svc.db-wal', 'svc.db-shm', 'secret.key'] as const;

function tighten(path: string, mode: number, notes: string[]): void {
  let current: number;
  try {
    current = statSync(path).mode & 0o777;
  } catch {
    return; // not there (yet)
  }
  if ((current & ~mode) === 0) return;
  try {
    chmodSync(path, mode);
    notes.push(`${path}: mode ${current.toString(8)} tightened to ${mode.toString(8)}`);
  } catch (err) {
    notes.push(`${path}: mode ${current.toString(8)} is readable by others and could not be tightened (${(err as Error).message})`);
  }
}

/**
 * Creates `dir` (0700) if missing, tightens it and the service's files in it; returns one line per
 * mode it changed or could not change (empty when all was already owner only).
 */
export function preparePrivateDir(dir: string): string[] {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const notes: string[] = [];
  tighten(dir, 0o700, notes);
  for (const name of DATA_FILES) tighten(join(dir, name), 0o600, notes);
  return notes;
}

/** Creates `path` empty with mode 0600 unless it exists, so whoever opens it next keeps that mode. */
export function touchPrivateFile(path: string): void {
  closeSync(openSync(path, 'a', 0o600));
}
