// The bytes of GET /v1/openapi.json. The document is about a megabyte and anyone may ask for it:
// writing it anew per request (serializing, then sending it uncompressed) let a few clients stall
// the API. Its JSON is made once, on the first request (not at start: most processes never serve
// it), each compressed form once on the first request that accepts it (zlib's thread pool, not the
// event loop), and every answer carries a strong ETag so a client that has it gets 304.
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';

export type Coding = 'br' | 'gzip' | 'identity';

export interface DocumentVariant {
  bytes: Buffer;
  /** strong: one per coding, as each is another sequence of bytes (RFC 9110 section 8.8.3) */
  etag: string;
  coding: Coding;
}

const compress: Record<Exclude<Coding, 'identity'>, (bytes: Buffer) => Promise<Buffer>> = {
  gzip: (bytes) => promisify(gzip)(bytes, { level: 9 }),
  br: (bytes) => promisify(brotliCompress)(bytes, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT },
  }),
};

/**
 * The coding to send for an Accept-Encoding header: the acceptable one with the highest q (br
 * before gzip on a tie), identity when neither is acceptable or nothing is asked (RFC 9110 section
 * 12.5.3; `*` stands for codings not listed, q=0 refuses).
 */
export function codingFor(acceptEncoding: string | undefined): Coding {
  if (!acceptEncoding) return 'identity';
  const q = new Map<string, number>();
  for (const part of acceptEncoding.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const value = qParam === undefined ? 1 : Number(qParam.slice(2));
    q.set(name === 'x-gzip' ? 'gzip' : name, Number.isFinite(value) ? value : 0);
  }
  const qOf = (coding: string) => q.get(coding) ?? q.get('*') ?? 0;
  const br = qOf('br');
  const gz = qOf('gzip');
  if (br > 0 && br >= gz) return 'br';
  return gz > 0 ? 'gzip' : 'identity';
}

/** Whether an If-None-Match header names `etag` (weak comparison, as RFC 9110 section 13.1.2 asks). */
export function noneMatchHas(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/** The document's variants, each made once on first use; `document` is called once, at the first request. */
export function documentBytes(document: () => unknown): (coding: Coding) => Promise<DocumentVariant> {
  let identity: DocumentVariant | undefined;
  const compressed = new Map<Coding, Promise<DocumentVariant>>();
  const plain = (): DocumentVariant => {
    if (!identity) {
      const bytes = Buffer.from(JSON.stringify(document()), 'utf8');
      const hash = createHash('sha256').update(bytes).digest('base64url').slice(0, 27);
      identity = { bytes, etag: `"${hash}"`, coding: 'identity' };
    }
    return identity;
  };
  return async (coding) => {
    const base = plain();
    if (coding === 'identity') return base;
    let variant = compressed.get(coding);
    if (!variant) {
      variant = compress[coding](base.bytes).then((bytes) => ({ bytes, etag: `${base.etag.slice(0, -1)}-${coding}"`, coding }));
      // A failure is not kept: the next request tries again (this one gets the plain bytes).
      variant.catch(() => compressed.delete(coding));
      compressed.set(coding, variant);
    }
    return variant.catch(() => base);
  };
}
