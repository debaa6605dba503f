// The client-credentials grant, JWKS, and JWT verification per RFC 8725: every forged,
// mis-addressed, expired or revoked token is 401; a good one acts on its client's workspace.
// Trusted external issuers are checked against a stand-in identity provider's JWKS server.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  createLocalJWKSet, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT,
  type CryptoKey, type JWK, type JWTPayload,
} from 'jose';
import { clock } from '../src/platform/clock.js';
import { keyringOf } from '../src/platform/keyring.js';
import { SIGNING_KEY_SEAL } from '../src/modules/oauth/signing-keys.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('OAuth clients and client-credentials JWTs', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let wsA: string;
  let wsB: string;
  let client: { id: string; client_secret: string };
  let jwt: string;

  async function createClient(body: Record<string, unknown> = { name: 'ci' }, user: TestUser = alice, ws = wsA) {
    return t.request('POST', '/v1/oauth_clients', { token: user.token, headers: { 'svc-context': ws }, body });
  }

  async function tokenFor(id: string, secret: string): Promise<string> {
    const res = await t.request('POST', '/oauth/token', { headers: FORM, payload: form({ grant_type: 'client_credentials', client_id: id, client_secret: secret }) });
    assert.equal(res.status, 200, res.text);
    return res.body.access_token;
  }

  /** Signs with the service's real private key, to prove claim checks hold even with a valid signature. */
  async function signWithOurKey(claims: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
    const row = await t.services.db.selectFrom('signing_keys').selectAll().orderBy('id', 'asc').executeTakeFirstOrThrow();
    const jwk = JSON.parse(keyringOf(t.config).open(row.private_jwk_sealed, SIGNING_KEY_SEAL.context(row.id))) as JWK;
    const key = await importJWK(jwk, 'EdDSA');
    const full: Record<string, unknown> = { alg: 'EdDSA', typ: 'at+jwt', kid: row.id, ...header };
    for (const k of Object.keys(full)) if (full[k] === undefined) delete full[k];
    return new SignJWT(claims).setProtectedHeader(full as { alg: string }).sign(key);
  }

  function goodClaims(overrides: JWTPayload = {}): JWTPayload {
    const now = clock.now();
    return {
      iss: t.config.publicUrl, aud: `${t.config.publicUrl}/v1`, sub: client.id, client_id: client.id,
      svc_workspace: wsA, svc_role: 'member', iat: now, exp: now + 3600, jti: 'j1', ...overrides,
    };
  }

  async function status(token: string, headers: Record<string, string> = {}): Promise<number> {
    const res = await t.request('GET', '/v1/api_tokens', { token, headers });
    if (res.status === 401) {
      assert.equal(res.body.error.code, 'UNAUTHENTICATED');
      assert.match(String(res.headers['www-authenticate']), /^Bearer realm="svc", error="invalid_token"$/);
    }
    return res.status;
  }

  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
    bob = await t.user('bob');
    wsA = (await t.workspace(alice, 'A')).id;
    wsB = (await t.workspace(bob, 'B')).id;
    const res = await createClient({ name: 'deployer' });
    assert.equal(res.status, 201, res.text);
    client = res.body;
    jwt = await tokenFor(client.id, client.client_secret);
  });
  after(() => t.close());

  test('client_credentials: form-encoded issues a 1-hour EdDSA at+jwt with the RFC 9068 claims', async () => {
    const askedAt = clock.now();
    const res = await t.request('POST', '/oauth/token', {
      headers: FORM, payload: form({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.client_secret }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.body.token_type, 'Bearer');
    assert.equal(res.body.expires_in, 3600);
    const header = decodeProtectedHeader(res.body.access_token);
    assert.equal(header.alg, 'EdDSA');
    assert.equal(header.typ, 'at+jwt');
    assert.match(String(header.kid), /^key_/);
    const claims = decodeJwt(res.body.access_token);
    assert.equal(claims.iss, 'http://svc.test');
    assert.equal(claims.aud, 'http://svc.test/v1');
    assert.equal(claims.sub, client.id);
    assert.equal(claims.client_id, client.id);
    assert.equal(claims.svc_workspace, wsA);
    assert.equal(claims.svc_role, 'member');
    assert.equal(claims.exp! - claims.iat!, 3600);
    // Issued between the request and its answer, however long that took.
    assert.ok(claims.iat! >= askedAt && claims.iat! <= clock.now(), String(claims.iat));
    assert.equal(typeof claims.jti, 'string');
  });

  test('client_credentials in a JSON body works like the form; wrong secrets are invalid_client 401', async () => {
    const ok = await t.request('POST', '/oauth/token', { body: { grant_type: 'client_credentials', client_id: client.id, client_secret: client.client_secret } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.token_type, 'Bearer');
    assert.equal(await status(ok.body.access_token), 200);
    const bad = await t.request('POST', '/oauth/token', { body: { grant_type: 'client_credentials', client_id: client.id, client_secret: 'svc_cs_wrong' } });
    assert.equal(bad.status, 401);
    assert.equal(bad.body.error, 'invalid_client');
  });

  test('client_credentials: HTTP Basic works; bad credentials are invalid_client 401', async () => {
    const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    const ok = await t.request('POST', '/oauth/token', {
      headers: { ...FORM, authorization: basic(client.id, client.client_secret) }, payload: form({ grant_type: 'client_credentials' }),
    });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(await status(ok.body.access_token), 200);

    const bad = [
      { headers: { ...FORM, authorization: basic(client.id, client.client_secret + 'x') }, payload: form({ grant_type: 'client_credentials' }) },
      { headers: FORM, payload: form({ grant_type: 'client_credentials', client_id: client.id, client_secret: 'svc_cs_wrong' }) },
      { headers: FORM, payload: form({ grant_type: 'client_credentials', client_id: 'oac_01aaaaaaaaaaaaaaaaaaaaaaaa', client_secret: client.client_secret }) },
      { headers: FORM, payload: form({ grant_type: 'client_credentials', client_id: 'nonsense', client_secret: client.client_secret }) },
      { headers: FORM, payload: form({ grant_type: 'client_credentials', client_id: client.id }) },
      { headers: FORM, payload: form({ grant_type: 'client_credentials' }) },
    ];
    for (const req of bad) {
      const res = await t.request('POST', '/oauth/token', req);
      assert.equal(res.status, 401, req.payload);
      assert.equal(res.body.error, 'invalid_client');
      assert.match(String(res.headers['www-authenticate']), /^Basic/);
    }
    const both = await t.request('POST', '/oauth/token', {
      headers: { ...FORM, authorization: basic(client.id, client.client_secret) },
      payload: form({ grant_type: 'client_credentials', client_secret: client.client_secret }),
    });
    assert.equal(both.status, 400);
    assert.equal(both.body.error, 'invalid_request');
  });

  test('the JWT acts on its workspace without svc-context; another workspace is 403', async () => {
    assert.equal(await status(jwt), 200);
    assert.equal(await status(jwt, { 'svc-context': wsA }), 200);
    const foreign = await t.request('GET', '/v1/api_tokens', { token: jwt, headers: { 'svc-context': wsB } });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.body.error.reason, 'SVC_CONTEXT_MISMATCH');
    assert.equal((await t.request('GET', `/v1/workspaces/${wsA}/members`, { token: jwt })).status, 200);
    assert.equal((await t.request('GET', `/v1/workspaces/${wsB}/members`, { token: jwt })).status, 403);
    assert.equal((await t.request('GET', '/v1/me', { token: jwt })).status, 403);
    const list = await t.request('GET', '/v1/oauth_clients', { token: jwt });
    assert.equal(list.status, 200);
    assert.ok(list.body.data.every((c: { workspace_id: string }) => c.workspace_id === wsA));
    // A member-role client cannot manage clients.
    assert.equal((await t.request('POST', '/v1/oauth_clients', { token: jwt, body: { name: 'x' } })).status, 403);
  });

  test('a token signed with our key but with forged claims is still refused', async () => {
    assert.equal(await status(await signWithOurKey(goodClaims())), 200, 'the forging helper itself makes acceptable tokens');
    const cases: Array<[string, JWTPayload, Record<string, unknown>]> = [
      ['wrong aud', { aud: 'http://svc.test/v2' }, {}],
      ['aud of another service', { aud: 'https://elsewhere.test/v1' }, {}],
      ['wrong iss', { iss: 'http://evil.test' }, {}],
      ['iss with a trailing slash', { iss: 'http://svc.test/' }, {}],
      ['typ JWT', {}, { typ: 'JWT' }],
      ['another workspace than the client', { svc_workspace: wsB }, {}],
      ['sub differs from client_id', { sub: 'oac_01aaaaaaaaaaaaaaaaaaaaaaaa' }, {}],
      ['no exp', { exp: undefined }, {}],
      ['no typ', {}, { typ: undefined }],
      ['unknown kid', {}, { kid: 'key_01aaaaaaaaaaaaaaaaaaaaaaaa' }],
    ];
    for (const [name, claims, header] of cases) {
      const full = goodClaims(claims);
      for (const k of Object.keys(full)) if (full[k] === undefined) delete full[k];
      assert.equal(await status(await signWithOurKey(full, header)), 401, name);
    }
  });

  test('alg none, HS256 keyed with the public key, and another key with our kid are 401', async () => {
    const { kid } = decodeProtectedHeader(jwt);
    const none = `${b64({ alg: 'none', typ: 'at+jwt', kid })}.${b64(goodClaims())}.`;
    assert.equal(await status(none), 401, 'alg none');
    const noneWithSig = `${b64({ alg: 'none', typ: 'at+jwt', kid })}.${b64(goodClaims())}.${jwt.split('.')[2]}`;
    assert.equal(await status(noneWithSig), 401, 'alg none with a signature');

    const jwks = await t.request('GET', '/.well-known/jwks.json');
    const pub = jwks.body.keys[0] as JWK;
    for (const secret of [Buffer.from(pub.x!, 'base64url'), Buffer.from(JSON.stringify(pub)), Buffer.from(pub.x!)]) {
      const hs = await new SignJWT(goodClaims()).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: kid! }).sign(new Uint8Array(secret));
      assert.equal(await status(hs), 401, 'HS256 with the public key');
    }

    const other = await generateKeyPair('EdDSA');
    const wrongKey = await new SignJWT(goodClaims()).setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid: kid! }).sign(other.privateKey);
    assert.equal(await status(wrongKey), 401, 'another Ed25519 key with our kid');
  });

  test('a tampered payload or signature is 401', async () => {
    const [h, p, s] = jwt.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    assert.equal(await status(`${h}.${b64({ ...claims, svc_workspace: wsB })}.${s}`, { 'svc-context': wsB }), 401);
    assert.equal(await status(`${h}.${b64({ ...claims, svc_role: 'admin' })}.${s}`), 401);
    assert.equal(await status(`${h}.${b64({ ...claims, exp: claims.exp + 3600 })}.${s}`), 401);
    const flipped = (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    assert.equal(await status(`${h}.${p}.${flipped}`), 401);
    for (const junk of ['a.b.c', 'a.b.', `${h}.${p}`, `${h}..${s}`, `${b64({ alg: 'EdDSA' })}.${b64('str')}.${s}`, `${b64([1])}.${b64({})}.x`]) {
      assert.equal(await status(junk), 401, junk);
    }
  });

  test('an expired token is 401; one just before expiry is accepted', async () => {
    const fresh = await tokenFor(client.id, client.client_secret);
    try {
      clock.offsetMs = 3590 * 1000;
      assert.equal(await status(fresh), 200);
      clock.offsetMs = 3606 * 1000;
      assert.equal(await status(fresh), 401);
    } finally {
      clock.offsetMs = 0;
    }
    assert.equal(await status(fresh), 200);
  });

  test('deleting a client revokes its outstanding tokens at once', async () => {
    const created = (await createClient({ name: 'short-lived' })).body;
    const token = await tokenFor(created.id, created.client_secret);
    assert.equal(await status(token), 200);
    const del = await t.request('DELETE', `/v1/oauth_clients/${created.id}`, { token: alice.token, headers: { 'svc-context': wsA } });
    assert.equal(del.status, 204);
    assert.equal(await status(token), 401);
    assert.equal((await t.request('GET', `/v1/oauth_clients/${created.id}`, { token: alice.token, headers: { 'svc-context': wsA } })).status, 404);
    assert.equal((await t.request('DELETE', `/v1/oauth_clients/${created.id}`, { token: alice.token, headers: { 'svc-context': wsA } })).status, 404);
    const again = await t.request('POST', '/oauth/token', {
      headers: FORM, payload: form({ grant_type: 'client_credentials', client_id: created.id, client_secret: created.client_secret }),
    });
    assert.equal(again.status, 401);
  });

  test('JWKS publishes the public key only, cacheable, and tokens verify against it', async () => {
    const res = await t.request('GET', '/.well-known/jwks.json');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['cache-control']), /max-age=300/);
    assert.equal(res.body.keys.length, 1);
    const [key] = res.body.keys;
    assert.deepEqual({ kty: key.kty, crv: key.crv, alg: key.alg, use: key.use }, { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    assert.equal(key.d, undefined);
    assert.equal(key.kid, decodeProtectedHeader(jwt).kid);
    const { payload } = await jwtVerify(jwt, createLocalJWKSet(res.body), {
      issuer: 'http://svc.test', audience: 'http://svc.test/v1', typ: 'at+jwt', algorithms: ['EdDSA'],
    });
    assert.equal(payload.sub, client.id);
  });
});

describe('trusted external issuers', () => {
  const ISSUER = 'https://idp.example.test';
  const AUDIENCE = 'svc-api';
  let t: TestApp;
  let server: Server;
  let idpKey: CryptoKey;
  let owner: TestUser;
  let dave: TestUser;
  let ws: string;
  let otherWs: string;

  async function idpToken(claims: JWTPayload, opts: { key?: CryptoKey; kid?: string; alg?: string; typ?: string; exp?: number } = {}): Promise<string> {
    const now = clock.now();
    const jwt = new SignJWT({ iss: ISSUER, aud: AUDIENCE, iat: now, exp: opts.exp ?? now + 300, ...claims })
      .setProtectedHeader({ alg: opts.alg ?? 'RS256', kid: opts.kid ?? 'idp-1', ...(opts.typ ? { typ: opts.typ } : {}) });
    return jwt.sign(opts.key ?? idpKey);
  }

  before(async () => {
    const pair = await generateKeyPair('RS256', { extractable: true });
    idpKey = pair.privateKey;
    const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'idp-1', alg: 'RS256', use: 'sig' }] });
    // A stand-in identity provider: only its key set is needed.
    server = createServer((req, res) => {
      if (req.url === '/jwks') res.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    t = await startTestApp({
      SVC_TRUSTED_ISSUERS: JSON.stringify([{ issuer: ISSUER, jwks_url: `http://127.0.0.1:${port}/jwks`, audience: AUDIENCE }]),
    });
    owner = await t.user('owner');
    dave = await t.user('dave');
    ws = (await t.workspace(owner, 'X')).id;
    otherWs = (await t.workspace(owner, 'Y')).id;
    await t.addMember(owner, ws, dave, 'member');
  });
  after(async () => {
    await t.close();
    await new Promise((resolve) => server.close(resolve));
  });

  test('a trusted token for a member is a broad user credential: svc-context required', async () => {
    const token = await idpToken({ sub: 'idp|123', email: dave.email.toUpperCase() });
    const ok = await t.request('GET', '/v1/api_tokens', { token, headers: { 'svc-context': ws } });
    assert.equal(ok.status, 200, ok.text);
    const missing = await t.request('GET', '/v1/api_tokens', { token });
    assert.equal(missing.status, 403);
    assert.equal(missing.body.error.reason, 'SVC_CONTEXT_REQUIRED');
    assert.equal((await t.request('GET', '/v1/api_tokens', { token, headers: { 'svc-context': otherWs } })).status, 403);
    const me = await t.request('GET', '/v1/me', { token });
    assert.equal(me.status, 200);
    assert.equal(me.body.id, dave.id);
    // Members may not create clients, whatever the credential.
    assert.equal((await t.request('POST', '/v1/oauth_clients', { token, headers: { 'svc-context': ws }, body: { name: 'x' } })).status, 403);
  });

  test('sub holding an e-mail address maps to the user; typ at+jwt is accepted too', async () => {
    const token = await idpToken({ sub: dave.email }, { typ: 'at+jwt' });
    const me = await t.request('GET', '/v1/me', { token });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.id, dave.id);
  });

  test('wrong audience, unknown user, expiry, untrusted issuer and bad signatures are 401', async () => {
    const other = await generateKeyPair('RS256');
    const now = clock.now();
    const cases: Array<[string, Promise<string>]> = [
      ['wrong audience', idpToken({ email: dave.email, aud: 'someone-else' })],
      ['unknown e-mail', idpToken({ email: 'nobody@example.test' })],
      ['no e-mail', idpToken({ sub: 'idp|123' })],
      ['unverified e-mail', idpToken({ email: dave.email, email_verified: false })],
      ['expired', idpToken({ email: dave.email }, { exp: now - 60 })],
      ['no exp', idpToken({ email: dave.email, exp: undefined })],
      ['untrusted issuer', idpToken({ email: dave.email, iss: 'https://evil.example.test' })],
      ['another key with the kid', idpToken({ email: dave.email }, { key: other.privateKey })],
      ['unknown kid', idpToken({ email: dave.email }, { kid: 'idp-9' })],
      ['a logout token', idpToken({ email: dave.email }, { typ: 'logout+jwt' })],
      ['HS256', new SignJWT({ iss: ISSUER, aud: AUDIENCE, email: dave.email, exp: now + 300 })
        .setProtectedHeader({ alg: 'HS256', kid: 'idp-1' }).sign(new TextEncoder().encode('a-shared-secret-of-32-bytes!!!!!'))],
    ];
    for (const [name, pending] of cases) {
      const res = await t.request('GET', '/v1/me', { token: await pending });
      assert.equal(res.status, 401, name);
      assert.equal(res.body.error.code, 'UNAUTHENTICATED', name);
    }
    const none = `${b64({ alg: 'none', kid: 'idp-1' })}.${b64({ iss: ISSUER, aud: AUDIENCE, email: dave.email, exp: now + 300 })}.`;
    assert.equal((await t.request('GET', '/v1/me', { token: none })).status, 401, 'alg none');
  });

  test('our own client JWTs keep working next to trusted issuers', async () => {
    const created = await t.request('POST', '/v1/oauth_clients', { token: owner.token, headers: { 'svc-context': ws }, body: { name: 'ci' } });
    assert.equal(created.status, 201);
    const res = await t.request('POST', '/oauth/token', {
      headers: FORM, payload: form({ grant_type: 'client_credentials', client_id: created.body.id, client_secret: created.body.client_secret }),
    });
    assert.equal(res.status, 200);
    assert.equal((await t.request('GET', '/v1/api_tokens', { token: res.body.access_token })).status, 200);
  });
});
