// What the secrets tests share: calls of the secrets API as one caller, and error assertions.
import assert from 'node:assert/strict';
import type { Response, TestApp } from './harness.js';

export interface SecretsCaller {
  token: string;
  /** svc-context; omitted for a workspace API token */
  ws?: string;
}

export function assertError(res: Response, status: number, code: string, reason?: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.error.code, code, res.text);
  if (reason) assert.equal(res.body.error.reason, reason, res.text);
  assert.equal(res.body.error.request_id, res.headers['x-request-id']);
}

/** A write without if-match: 400 naming the header. */
export function assertIfMatchRequired(res: Response): void {
  assertError(res, 400, 'INVALID_ARGUMENT');
  assert.ok(res.body.error.field_violations.some((v: { field: string }) => v.field === 'header.if-match'), res.text);
}

export class SecretsApi {
  constructor(readonly t: TestApp, readonly caller: SecretsCaller) {}

  as(caller: SecretsCaller): SecretsApi {
    return new SecretsApi(this.t, caller);
  }

  call(method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}): Promise<Response> {
    const headers = { ...(this.caller.ws ? { 'svc-context': this.caller.ws } : {}), ...opts.headers };
    return this.t.request(method, url, { token: this.caller.token, headers, ...(opts.body !== undefined ? { body: opts.body } : {}) });
  }

  async create(body: Record<string, unknown>): Promise<any> {
    const res = await this.call('POST', '/v1/secrets', { body });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  async addVersion(secretId: string, value: string, comment?: string): Promise<any> {
    const res = await this.call('POST', `/v1/secrets/${secretId}/versions`, { body: { value, ...(comment ? { comment } : {}) } });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  get(secretId: string): Promise<Response> {
    return this.call('GET', `/v1/secrets/${secretId}`);
  }

  version(secretId: string, vid: string): Promise<Response> {
    return this.call('GET', `/v1/secrets/${secretId}/versions/${vid}`);
  }

  access(secretId: string, which: string): Promise<Response> {
    return this.call('POST', `/v1/secrets/${secretId}/versions/${which}:access`);
  }

  /** :enable, :disable or :destroy with the given if-match (undefined: no header). */
  transition(secretId: string, vid: string, verb: string, ifMatch: string | undefined): Promise<Response> {
    return this.call('POST', `/v1/secrets/${secretId}/versions/${vid}:${verb}`, { headers: ifMatch === undefined ? {} : { 'if-match': ifMatch } });
  }

  /** The transition with the version's current etag; asserts 200. */
  async move(secretId: string, vid: string, verb: string): Promise<any> {
    const etag = (await this.version(secretId, vid)).body.etag;
    const res = await this.transition(secretId, vid, verb, etag);
    assert.equal(res.status, 200, res.text);
    return res.body;
  }

  async value(secretId: string, which: string): Promise<string> {
    const res = await this.access(secretId, which);
    assert.equal(res.status, 200, res.text);
    return res.body.value;
  }
}
