// Etags (API.md section 3): a versioned resource keeps an integer `revision`; its etag is that
// number as a string. The check and the write are one statement: `where id = ? and revision = ?`.
import { Type } from 'typebox';
import { ApiError, invalidArgument } from './errors.js';

export const IfMatchHeader = Type.String({
  minLength: 1,
  maxLength: 256,
  description: 'the etag last read (quoted or bare; a W/ prefix is ignored; `*` matches any version)',
});

export function etagOf(revision: number): string {
  return String(revision);
}

/** Parses an if-match header; returns null for `*` (any version). Missing is 400. */
export function parseIfMatch(header: string | undefined): number | null {
  if (header === undefined) {
    throw invalidArgument('if-match header is required on this write', 'IF_MATCH_REQUIRED', [
      { field: 'header.if-match', description: 'send the etag last read' },
    ]);
  }
  let value = header.trim();
  if (value === '*') return null;
  if (value.startsWith('W/')) value = value.slice(2);
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
  // A value that is not one of our revision numbers can never match: report it as a mismatch.
  return /^[0-9]{1,15}$/.test(value) ? Number(value) : -1;
}

export function etagMismatch(resource: string, currentRevision: number): ApiError {
  return new ApiError('ABORTED', `etag mismatch for ${resource}`, {
    reason: 'ETAG_MISMATCH',
    metadata: { etag: etagOf(currentRevision) },
  });
}
