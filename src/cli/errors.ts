// The client's failures: one line on stderr (plus detail lines) and an exit code (API.md 8.4).

/** Exit codes (API.md 8.4). */
export const EXIT = { OK: 0, ERROR: 1, USAGE: 2, UNAUTHENTICATED: 3, PERMISSION_DENIED: 4, CONFLICT: 5, RETRYABLE: 6, INTERRUPTED: 130 } as const;

/** A failure the CLI reports as one line on stderr (plus detail lines) and an exit code. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode: number, readonly details: string[] = [], readonly reason?: string) {
    super(message);
  }
}

export function exitCodeForStatus(status: number): number {
  if (status === 401) return EXIT.UNAUTHENTICATED;
  if (status === 403) return EXIT.PERMISSION_DENIED;
  if (status === 409) return EXIT.CONFLICT;
  if (status === 429 || status >= 500) return EXIT.RETRYABLE;
  return EXIT.ERROR;
}
