// Test harness: a fresh database per test file (SQLite in a temp dir, or a new PostgreSQL
// database when SVC_TEST_DATABASE_URL is set), the real app over it, and small factories that go
// through the same services the HTTP routes use.
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { loadConfig, type Config } from '../src/config.js';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import type { App } from '../src/platform/http.js';
import type { Services } from '../src/services.js';
import type { Runtime } from '../src/jobs/runtime.js';
import { createSystem, type SystemOptions } from '../src/system.js';
import { clock } from '../src/platform/clock.js';
import type { PreviewRouter } from '../src/modules/preview-hostnames/preview-router.js';
import { previewRouterOf } from '../src/server.js';

export const DIALECT = process.env.SVC_TEST_DATABASE_URL ? 'postgres' : 'sqlite';

export interface TestDatabase {
  databaseUrl: string | null;
  dataDir: string;
  drop(): Promise<void>;
}

/**
 * Creates a database for one test file: empty, or with `migrated` a copy of the migrated template
 * that test/run.js made for this run (see test/templates.js), which saves each file its
 * migrations. Without a template (a file run on its own, not through test/run.js) it is empty and
 * the caller's migrateToLatest does the work, as the service does at start.
 */
export async function createTestDatabase(opts: { migrated?: boolean } = {}): Promise<TestDatabase> {
  if (process.env.SVC_TEST_NO_DATABASE === '1') {
    throw new Error('test/run.js runs this file once, without a database (it names none of the ways a test makes one, see usesDatabase in test/run.js), yet it made one: name the helper that does in USES_DATABASE there');
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-test-'));
  const admin = process.env.SVC_TEST_DATABASE_URL;
  if (!admin) {
    const template = opts.migrated ? process.env.SVC_TEST_SQLITE_TEMPLATE : undefined;
    if (template) {
      copyFileSync(template, join(dataDir, 'svc.db'));
      chmodSync(join(dataDir, 'svc.db'), 0o600);
    }
    return { databaseUrl: null, dataDir, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = `svc_t_${randomBytes(6).toString('hex')}`;
  const template = opts.migrated ? process.env.SVC_TEST_PG_TEMPLATE : undefined;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(template ? `create database ${name} template ${template}` : `create database ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    databaseUrl: url.toString(),
    dataDir,
    drop: async () => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Empty databases made on demand within a describe block and all dropped after it (for tests that
 * start several `svc` processes, each on a database of its own).
 */
export function databasesDroppedAfter(): () => Promise<TestDatabase> {
  const databases: TestDatabase[] = [];
  after(async () => {
    for (const db of databases) await db.drop();
  });
  return async () => {
    const db = await createTestDatabase();
    databases.push(db);
    return db;
  };
}

export function testConfig(db: TestDatabase, env: NodeJS.ProcessEnv = {}): Config {
  const hooks = (env.SVC_TEST_HOOKS ?? '1') === '1';
  return loadConfig({
    SVC_DATA_DIR: db.dataDir,
    SVC_SECRET_KEY: randomBytes(32).toString('hex'),
    SVC_PUBLIC_URL: 'http://svc.test',
    LOG_LEVEL: 'silent',
    // Retries wait 1% of their production backoff, so retry tests take milliseconds.
    SVC_RETRY_BACKOFF_SCALE: '0.01',
    SVC_TEST_HOOKS: '1',
    // cheap password hashes (a test hook, refused without the hooks): users are made by the thousand
    ...(hooks ? { SVC_TEST_PASSWORD_HASH: 'fast' } : {}),
    ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}),
    ...env,
  });
}

export interface Response<T = any> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | number | undefined>;
  text: string;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** raw payload, sent as-is (for malformed JSON tests) */
  payload?: string;
  /** the client address the request comes from (default 127.0.0.1) */
  remoteAddress?: string;
}

export interface TestUser {
  id: string;
  email: string;
  password: string;
  token: string;
}

/** A TCP port free right now on 127.0.0.1 (for SVC_PREVIEW_PORT: URLs carry the port, so it must be known up front). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export class TestApp {
  private users = 0;
  private previewRouter: PreviewRouter | null = null;
  constructor(
    readonly app: App,
    readonly services: Services,
    readonly config: Config,
    private readonly handle: DatabaseHandle,
    private readonly database: TestDatabase,
    readonly runtime: Runtime,
    /** false when the caller passed the database in: it outlives this app (see startTestApp) */
    private readonly ownsDatabase = true,
  ) {}

  async request<T = any>(method: string, url: string, opts: RequestOptions = {}): Promise<Response<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let payload: string | undefined = opts.payload;
    if (opts.body !== undefined) {
      payload = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    } else if (payload !== undefined) {
      headers['content-type'] ??= 'application/json';
    }
    const res = await this.app.inject({ method: method as 'GET', url, headers, ...(payload !== undefined ? { payload } : {}), ...(opts.remoteAddress ? { remoteAddress: opts.remoteAddress } : {}) });
    let body: any = undefined;
    if (res.body.length) {
      try {
        body = JSON.parse(res.body);
      } catch {
        body = res.body;
      }
    }
    if (res.statusCode >= 500 && !this.allowedServerStatuses.has(res.statusCode)) {
      this.serverErrors.push(`${method} ${url} -> ${res.statusCode} ${res.body.slice(0, 300)}`);
    }
    return { status: res.statusCode, body, headers: res.headers, text: res.body };
  }

  /**
   * Starts the preview router on config.preview.port (opt in: start the app with
   * `{ SVC_PREVIEW_PORT: String(await freePort()) }`); returns its base URL. Closed with the app.
   * `logger`: where its log lines go (none by default).
   */
  async startPreviewRouter(logger?: Logger): Promise<string> {
    if (this.previewRouter) throw new Error('the preview router is already started');
    this.previewRouter = previewRouterOf(this.services, logger);
    return this.previewRouter.listen(this.config.preview.port, '127.0.0.1');
  }

  /** A user with a fresh session token. */
  async user(prefix = 'user'): Promise<TestUser> {
    const email = `${prefix}${++this.users}-${randomBytes(3).toString('hex')}@example.test`;
    const password = 'correct horse battery';
    const user = await this.services.users.createUser({ email, password });
    const session = await this.services.sessions.createSession(user.id);
    return { id: user.id, email, password, token: session.token };
  }

  /** A workspace owned by `owner`, created through the API. */
  async workspace(owner: TestUser, name = 'Acme'): Promise<{ id: string; etag: string }> {
    const res = await this.request('POST', '/v1/workspaces', { token: owner.token, body: { name } });
    if (res.status !== 201) throw new Error(`workspace create failed: ${res.status} ${res.text}`);
    return res.body;
  }

  /** Adds `user` to the workspace with `role`, through the API, as `owner`. */
  async addMember(owner: TestUser, workspaceId: string, user: TestUser, role: 'owner' | 'admin' | 'member'): Promise<void> {
    const res = await this.request('POST', `/v1/workspaces/${workspaceId}/members`, { token: owner.token, body: { user_id: user.id, role } });
    if (res.status !== 201) throw new Error(`add member failed: ${res.status} ${res.text}`);
  }

  /** An API token of the workspace, created through the API by `admin` with the svc-context header. */
  async apiToken(admin: TestUser, workspaceId: string, body: Record<string, unknown> = {}): Promise<{ id: string; token: string; prefix: string }> {
    const res = await this.request('POST', '/v1/api_tokens', {
      token: admin.token,
      headers: { 'svc-context': workspaceId },
      body: { name: 'ci', ...body },
    });
    if (res.status !== 201) throw new Error(`api token create failed: ${res.status} ${res.text}`);
    return res.body;
  }

  /**
   * Global guard: no test may pass while a request produced a 5xx. Statuses listed here are
   * tolerated (503 is the documented answer while shutting down or with the database down).
   */
  readonly allowedServerStatuses = new Set<number>([503]);
  /** 5xx responses seen through `request()`, with their bodies, for the failure message */
  readonly serverErrors: string[] = [];

  /** 5xx responses counted by the app's own metrics: covers app.inject and listening servers too. */
  private async countedServerErrors(): Promise<string[]> {
    const metric = await this.app.metricsRegistry.getSingleMetric('svc_http_requests_total')?.get();
    return (metric?.values ?? [])
      .filter((v) => Number(v.labels.status_code) >= 500 && !this.allowedServerStatuses.has(Number(v.labels.status_code)))
      .map((v) => `${v.labels.method} ${v.labels.route} -> ${v.labels.status_code} (x${v.value})`);
  }

  async close(): Promise<void> {
    const counted = await this.countedServerErrors();
    this.services.operations.releaseWaiters();
    await this.app.close();
    await this.previewRouter?.close();
    await this.runtime.stop(2000);
    await this.handle.close();
    if (this.ownsDatabase) await this.database.drop();
    if (counted.length || this.serverErrors.length) {
      throw new Error(`server errors (5xx) during this test file:\n${[...this.serverErrors, ...counted].join('\n')}`);
    }
  }
}

/**
 * The app over a fresh database, or over `opts.database` (created with createTestDatabase), which
 * then survives close(), so a test can run the service again over the same data with another
 * configuration (a new secret key, say); the test drops it.
 */
export async function startTestApp(env: NodeJS.ProcessEnv = {}, opts: { logger?: Logger; database?: TestDatabase } & Pick<SystemOptions, 'paymentDelivery'> = {}): Promise<TestApp> {
  const database = opts.database ?? (await createTestDatabase({ migrated: true }));
  const config = testConfig(database, env);
  const handle = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 5 });
  await migrateToLatest(handle.db);
  const { app, services, runtime } = await createSystem(config, { database: handle, logger: opts.logger, paymentDelivery: opts.paymentDelivery });
  return new TestApp(app, services, config, handle, database, runtime, opts.database === undefined);
}

/** GET /healthz on a fresh connection: its status. */
export function healthz(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ port, host: '127.0.0.1', path: '/healthz', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Runs `fn` with the service's clock standing still (moved only by `clock.offsetMs`). Throttle
 * delays are whole seconds of that clock: attempts that straddled a second's boundary saw the first
 * one-second delay already over, and a test of "the sixth attempt waits" failed now and then.
 */
export async function withClockStill<T>(fn: () => Promise<T>): Promise<T> {
  const running = clock.nowMs;
  const still = Date.now();
  clock.nowMs = function () {
    return still + this.offsetMs;
  };
  try {
    return await fn();
  } finally {
    clock.nowMs = running;
  }
}
