// Keyset pagination with signed opaque cursors (API.md section 3). A cursor binds the last id
// seen, the scope it was issued for (workspace or user) and a digest of the filters, and is
// HMAC-signed, so tampering, cross-workspace reuse and reuse with other filters are all 400.
import { Type, type Static, type TSchema } from 'typebox';
import { hmacBase64Url, safeEqual, sha256Hex } from './crypto.js';
import { invalidArgument } from './errors.js';
import { named } from './http.js';

export const PageQuery = {
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'next_cursor of a previous page' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'items per page, 1-100' })),
};

/** A list envelope; items of a named schema are references to it. */
export function pageOf<T extends TSchema>(item: T, description: string) {
  return Type.Object(
    {
      data: Type.Array(named(item), { description: 'the items of this page, newest first' }),
      has_more: Type.Boolean({ description: 'true iff next_cursor is not null' }),
      next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'opaque; null on the last page' }),
    },
    { description },
  );
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface PageRequest {
  /** exclusive upper bound for `id desc` ordering; null for the first page */
  afterId: string | null;
  limit: number;
}

export class CursorCodec {
  constructor(private readonly key: Buffer) {}

  private digest(scope: string, filters: Record<string, unknown>): string {
    const canonical = JSON.stringify(Object.keys(filters).sort().map((k) => [k, filters[k] ?? null]));
    return sha256Hex(`${scope}\n${canonical}`).slice(0, 16);
  }

  encode(lastId: string, scope: string, filters: Record<string, unknown>): string {
    const payload = Buffer.from(JSON.stringify({ k: lastId, d: this.digest(scope, filters) })).toString('base64url');
    return `${payload}.${hmacBase64Url(this.key, payload)}`;
  }

  /** Parses `cursor`/`limit` query values into a keyset request; bad cursors are 400. */
  request(query: { cursor?: string; limit?: number }, scope: string, filters: Record<string, unknown> = {}): PageRequest {
    const limit = query.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw invalidArgument('limit must be an integer from 1 to 100', 'INVALID_LIMIT', [
        { field: 'query.limit', description: 'must be from 1 to 100' },
      ]);
    }
    if (query.cursor === undefined) return { afterId: null, limit };
    const bad = () =>
      invalidArgument('cursor is invalid, or was issued for another workspace or other filters', 'INVALID_CURSOR', [
        { field: 'query.cursor', description: 'use next_cursor exactly as returned, with the same filters' },
      ]);
    const [payload, mac] = query.cursor.split('.');
    if (!payload || !mac || !safeEqual(mac, hmacBase64Url(this.key, payload))) throw bad();
    let parsed: { k?: unknown; d?: unknown };
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw bad();
    }
    if (typeof parsed.k !== 'string' || parsed.d !== this.digest(scope, filters)) throw bad();
    return { afterId: parsed.k, limit };
  }

  /** Builds the page from `limit + 1` rows fetched in `id desc` order. */
  page<R extends { id: string }, T>(rows: R[], req: PageRequest, scope: string, filters: Record<string, unknown>, map: (row: R) => T): Page<T> {
    const hasMore = rows.length > req.limit;
    const kept = hasMore ? rows.slice(0, req.limit) : rows;
    const last = kept[kept.length - 1];
    return {
      data: kept.map(map),
      has_more: hasMore,
      next_cursor: hasMore && last ? this.encode(last.id, scope, filters) : null,
    };
  }
}

export type PageQueryT = { cursor?: string; limit?: number };
export type PageT<T extends TSchema> = Static<ReturnType<typeof pageOf<T>>>;
