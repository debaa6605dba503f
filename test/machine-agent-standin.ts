// A local stand-in for the service's two machine agent routes (API.md 8.5), over real HTTP, for the
// agent core's tests: `POST /v1/machine_joins` trades a known token once for a credential,
// `POST /v1/machine_heartbeats` answers for a known credential, and both answer errors in the one
// error shape. Tests script it: fail the next heartbeats with 503, hold an answer until released,
// revoke a credential with a reason, fill the quota.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Recorded {
  path: string;
  authorization: string | undefined;
  body: any;
}

interface MachineEntry {
  id: string;
  /** the token it joined with */
  token: string;
  credential: string;
  revokedReason: string | null;
  state: string;
  schedulable: boolean;
}

export class AgentRoutesStandIn {
  readonly requests: Recorded[] = [];
  readonly machines: MachineEntry[] = [];
  /** tokens that join once */
  readonly tokens = new Set<string>();
  readonly usedTokens = new Set<string>();
  heartbeatIntervalSeconds = 1;
  quotaFull = false;
  /** the next this many calls are answered 503 with retry-after */
  failNext = 0;
  /** the next this many calls get no answer at all (the agent's request timeout) */
  silentNext = 0;
  /** set: the next call waits until `release()` */
  private holdNext = false;
  private heldRelease: (() => void) | null = null;
  private heldWaiters: (() => void)[] = [];
  private server: Server | null = null;
  private sockets = new Set<import('node:net').Socket>();

  constructor(readonly port = 0) {}

  newToken(): string {
    const token = `svcb_${randomBytes(24).toString('base64url').replace(/[-_]/g, 'x').slice(0, 43)}`;
    this.tokens.add(token);
    return token;
  }

  count(path: string): number {
    return this.requests.filter((r) => r.path === path).length;
  }

  /** The next call is received but not answered until release(); resolves once it arrived. */
  hold(): Promise<void> {
    this.holdNext = true;
    return new Promise((resolve) => this.heldWaiters.push(resolve));
  }

  release(): void {
    this.heldRelease?.();
    this.heldRelease = null;
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    let body: any = null;
    try {
      body = JSON.parse(raw);
    } catch {
      // recorded as null
    }
    this.requests.push({ path: req.url ?? '', authorization: req.headers.authorization, body });
    if (this.silentNext > 0) {
      this.silentNext--;
      return; // never answered
    }
    if (this.holdNext) {
      this.holdNext = false;
      const released = new Promise<void>((resolve) => (this.heldRelease = resolve));
      for (const w of this.heldWaiters.splice(0)) w();
      await released;
    }
    if (this.failNext > 0) {
      this.failNext--;
      return send(res, 503, errorBody('UNAVAILABLE', 'the service is shutting down', null), { 'retry-after': '1' });
    }
    if (req.method === 'POST' && req.url === '/v1/machine_joins') return this.join(res, body);
    if (req.method === 'POST' && req.url === '/v1/machine_heartbeats') return this.heartbeat(res, req.headers.authorization);
    send(res, 404, errorBody('NOT_FOUND', 'no such route', null));
  }

  private join(res: ServerResponse, body: any): void {
    const token = body?.token;
    if (typeof token !== 'string' || !this.tokens.has(token)) return send(res, 401, errorBody('UNAUTHENTICATED', 'the join token is unknown', 'JOIN_TOKEN_REJECTED'));
    if (this.usedTokens.has(token)) return send(res, 401, errorBody('UNAUTHENTICATED', 'the join token was used already', 'JOIN_TOKEN_REJECTED'));
    if (this.quotaFull) return send(res, 429, errorBody('RESOURCE_EXHAUSTED', 'quota compute/machines is full (2 of 2)', 'QUOTA_EXCEEDED'));
    this.usedTokens.add(token);
    const machine: MachineEntry = {
      id: `mch_${randomBytes(13).toString('hex').slice(0, 26)}`,
      token,
      credential: `svcm_${randomBytes(32).toString('base64url').replace(/[-_]/g, 'y').slice(0, 43)}`,
      revokedReason: null,
      state: 'JOINING',
      schedulable: true,
    };
    this.machines.push(machine);
    send(res, 201, {
      machine_id: machine.id, workspace_id: 'ws_standin', cluster_id: 'clu_standin', node_name: `${body.facts?.hostname ?? 'node'}-x1`,
      credential: machine.credential, heartbeat_interval_seconds: this.heartbeatIntervalSeconds,
    });
  }

  private heartbeat(res: ServerResponse, authorization: string | undefined): void {
    const machine = this.machines.find((m) => `Bearer ${m.credential}` === authorization);
    if (!machine) return send(res, 401, errorBody('UNAUTHENTICATED', 'unknown machine credential', null));
    if (machine.revokedReason === 'MACHINE_DELETED') return send(res, 401, errorBody('UNAUTHENTICATED', `machine ${machine.id} was deleted`, 'MACHINE_DELETED'));
    if (machine.revokedReason) return send(res, 401, errorBody('UNAUTHENTICATED', 'the machine credential was revoked', machine.revokedReason));
    if (machine.state === 'JOINING' || machine.state === 'UNREACHABLE') machine.state = 'ACTIVE';
    send(res, 200, { machine_id: machine.id, state: machine.state, schedulable: machine.schedulable, heartbeat_interval_seconds: this.heartbeatIntervalSeconds });
  }
}

function errorBody(code: string, message: string, reason: string | null) {
  return { error: { code, message, ...(reason ? { reason } : {}), request_id: 'req_standin' } };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}
