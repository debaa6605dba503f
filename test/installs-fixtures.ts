// What the install tests share: packages, versions, clusters and installs made through HTTP, and
// operation reads that check the invariants of spec 2.1 on every state they see.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestApp, TestUser } from './harness.js';
import { assertOperationInvariants } from './operation-invariants.js';

export const PUBLIC_URL = 'http://svc.test';

export const SCHEMA = {
  type: 'object',
  properties: {
    replicas: { type: 'integer', minimum: 1, maximum: 10, default: 1 },
    greeting: { type: 'string', maxLength: 50, default: 'hello' },
  },
  additionalProperties: false,
};

export const MANIFEST = {
  routes: [{ route_key: 'web' }, { route_key: 'api', protocol: 'grpc' }],
  resources: [
    {
      apiVersion: 'apps/v1', kind: 'Deployment',
      metadata: { name: 'app', labels: { 'svc.dev/render': '{{ render.id }}' } },
      spec: { replicas: '{{ values.replicas }}' },
    },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { greeting: 'say {{ values.greeting }}', ns: '{{ install.namespace }}' } },
  ],
};

/** A caller: a user's token and the workspace it acts in. */
export interface Caller {
  user: TestUser;
  ws: string;
}

export class InstallFixtures {
  private names = 0;
  constructor(readonly t: TestApp) {}

  opts(c: Caller, extra: { body?: unknown; headers?: Record<string, string> } = {}) {
    return { token: c.user.token, headers: { 'svc-context': c.ws, ...extra.headers }, ...(extra.body !== undefined ? { body: extra.body } : {}) };
  }

  async pkg(c: Caller, name = `pkg-${++this.names}`): Promise<string> {
    const res = await this.t.request('POST', '/v1/packages', this.opts(c, { body: { name } }));
    assert.equal(res.status, 201, res.text);
    return res.body.id;
  }

  async version(c: Caller, pkgId: string, semver: string, manifest: unknown = MANIFEST, inputSchema: unknown = SCHEMA): Promise<{ id: string; semver: string }> {
    const res = await this.t.request('POST', `/v1/packages/${pkgId}/versions`, this.opts(c, { body: { semver, input_schema: inputSchema, manifest } }));
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  /** A package with version 1.0.0 of MANIFEST and SCHEMA. */
  async packageWithVersion(c: Caller): Promise<{ pkgId: string; versionId: string }> {
    const pkgId = await this.pkg(c);
    const v = await this.version(c, pkgId, '1.0.0');
    return { pkgId, versionId: v.id };
  }

  /** A cluster that reached `active` (faults as `local.faults`). */
  /** Joins a server to the cluster through a worker bootstrap (as the machine agent does): the join's answer, or its refusal's. */
  async joinMachine(c: Caller, clusterId: string): Promise<{ status: number; body: any; text: string }> {
    const b = await this.t.request('POST', `/v1/clusters/${clusterId}/worker_bootstraps`, this.opts(c, { body: {} }));
    assert.equal(b.status, 201, b.text);
    const facts = { hostname: `host-${++this.names}`, os: 'linux', arch: 'x64', cpu_count: 2, memory_bytes: 4 * 1024 ** 3, kernel: '6.1.0', agent_version: '0.1.0' };
    return this.t.request('POST', '/v1/machine_joins', { body: { token: b.body.token, facts } });
  }

  async cluster(c: Caller, faults: unknown[] = []): Promise<string> {
    const res = await this.t.request('POST', '/v1/clusters', this.opts(c, { body: { name: `c${++this.names}`, ...(faults.length ? { local: { faults } } : {}) } }));
    assert.equal(res.status, 202, res.text);
    const op = await this.waitOp(c, res.body.id);
    assert.equal(op.state, 'SUCCEEDED', JSON.stringify(op));
    return res.body.owner_id;
  }

  createInstall(c: Caller, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    return this.t.request('POST', '/v1/installs', this.opts(c, { body, headers }));
  }

  /** An install that reached `healthy`; returns its create operation, done. */
  async healthyInstall(c: Caller, pkgId: string, clusterId: string, values?: Record<string, unknown>): Promise<any> {
    const res = await this.createInstall(c, {
      package_id: pkgId, package_version_pin: { kind: 'latest' }, cluster_id: clusterId, ...(values ? { initial_values: values } : {}),
    });
    assert.equal(res.status, 202, res.text);
    const op = await this.waitOp(c, res.body.id);
    assert.equal(op.state, 'SUCCEEDED', JSON.stringify(op));
    return op;
  }

  async waitOp(c: Caller, id: string): Promise<any> {
    const res = await this.t.request('POST', `/v1/operations/${id}:wait?timeout=30`, this.opts(c));
    assert.equal(res.status, 200, res.text);
    assertOperationInvariants(res.body, { publicUrl: PUBLIC_URL });
    assert.equal(res.body.done, true, `operation ${id} did not end in time: ${res.text}`);
    return res.body;
  }

  async getOp(c: Caller, id: string): Promise<any> {
    const res = await this.t.request('GET', `/v1/operations/${id}`, this.opts(c));
    assert.equal(res.status, 200, res.text);
    assertOperationInvariants(res.body, { publicUrl: PUBLIC_URL });
    return res.body;
  }

  /** Polls the operation until it shows a last_error while RUNNING; null if it ended first. */
  async lastErrorWhileRunning(c: Caller, id: string): Promise<any> {
    for (let i = 0; i < 500; i++) {
      const op = await this.getOp(c, id);
      if (op.done) return null;
      if (op.last_error) return op;
      await sleep(5);
    }
    return null;
  }

  getInstall(c: Caller, id: string) {
    return this.t.request('GET', `/v1/installs/${id}`, this.opts(c));
  }

  async listAll(c: Caller): Promise<any[]> {
    const res = await this.t.request('GET', '/v1/installs?limit=100', this.opts(c));
    assert.equal(res.status, 200, res.text);
    return res.body.data;
  }

  async operationIds(c: Caller): Promise<string[]> {
    const res = await this.t.request('GET', '/v1/operations?limit=100', this.opts(c));
    assert.equal(res.status, 200, res.text);
    for (const op of res.body.data) assertOperationInvariants(op, { publicUrl: PUBLIC_URL, listItem: true });
    return res.body.data.map((o: { id: string }) => o.id);
  }

  async deleteInstall(c: Caller, id: string): Promise<any> {
    const etag = (await this.getInstall(c, id)).body.etag;
    const res = await this.t.request('DELETE', `/v1/installs/${id}`, this.opts(c, { headers: { 'if-match': etag } }));
    assert.equal(res.status, 202, res.text);
    return this.waitOp(c, res.body.id);
  }
}
