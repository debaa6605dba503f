// Hashing, token generation, key derivation and authenticated encryption, in one place.
import {
  createCipheriv, createDecipheriv, createHmac, hash, hkdfSync, randomBytes, randomInt,
  scrypt as scryptCb, timingSafeEqual,
} from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCb) as (pw: string, salt: Buffer, keylen: number, opts: object) => Promise<Buffer>;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * One-shot hashing (crypto.hash, Node >= 20.12): every request with a token hashes it to look it
 * up, and a Hash object built, updated and digested for that cost about 4 µs where this costs 0.5.
 */
export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}

export function randomString(length: number, alphabet = BASE62): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

export function base62(n: number, width: number): string {
  let out = '';
  let v = n;
  for (let i = 0; i < width; i++) {
    out = BASE62[v % 62] + out;
    v = Math.floor(v / 62);
  }
  return out;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(value: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(value)) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** Derives a purpose-bound 32-byte sub-key from the master key (HKDF-SHA256). */
export function deriveKey(master: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `svc:${purpose}`, 32));
}

export function hmacBase64Url(key: Buffer, value: string): string {
  return createHmac('sha256', key).update(value).digest('base64url');
}

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** AES-256-GCM; output is `v1.<iv>.<tag>.<ciphertext>` in base64url. */
export function encrypt(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
}

export function decrypt(key: Buffer, sealed: string): string {
  const [version, iv, tag, ct] = sealed.split('.');
  if (version !== 'v1' || !iv || !tag || ct === undefined) throw new Error('unrecognised ciphertext');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
}

// scrypt parameters: N=2^15, r=8, p=1 (OWASP's minimum recommendation), 64-byte key.
const SCRYPT = { N: 32768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

/**
 * The cost of new password hashes. `standard` always, but for the test hook
 * SVC_TEST_PASSWORD_HASH=fast (N=2^10; only with SVC_TEST_HOOKS=1, see config.ts): the suite
 * creates and signs in thousands of users, and at N=2^15 each hash costs about a quarter of a
 * second of CPU. A hash records its parameters, so either kind verifies.
 */
export type PasswordHashCost = 'standard' | 'fast';

export async function hashPassword(password: string, cost: PasswordHashCost = 'standard'): Promise<string> {
  const salt = randomBytes(16);
  const params = cost === 'fast' ? { ...SCRYPT, N: 1024 } : SCRYPT;
  const key = await scrypt(password, salt, 64, params);
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, expected] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !expected) return false;
  const want = Buffer.from(expected, 'base64');
  const got = await scrypt(password, Buffer.from(salt, 'base64'), want.length, {
    N: Number(n), r: Number(r), p: Number(p), maxmem: SCRYPT.maxmem,
  });
  return timingSafeEqual(got, want);
}

/** A password hash of nothing, checked against when the user is unknown so timing does not tell. */
export const DUMMY_PASSWORD_HASH = 'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA==$' + Buffer.alloc(64).toString('base64');
