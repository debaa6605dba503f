// A local stand-in for Hetzner Cloud's API (https://docs.hetzner.cloud/), the parts the hcloud
// compute provider uses: POST/GET /v1/servers (labels, label_selector, name, sort, pagination),
// GET/DELETE /v1/servers/{id} and the poweroff/poweron actions, with Hetzner's JSON shapes, its
// error body `{error: {code, message, details}}`, bearer-token checking (401 unauthorized) and the
// RateLimit-* headers on every answer. Servers boot one status per read (initializing, starting,
// running), power actions pass through stopping/starting the same way. Faults are programmable:
// the next N answers 429 (with or without Retry-After), the next N answers 500, servers that never
// boot, answers never sent (a hang, or a lost answer after the work was done), list requests held
// until several have arrived (a deterministic race). Every call is recorded for assertions.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const HCLOUD_STANDIN_TOKEN = 'Tq7hcloudStandinTokenX0123456789abcdefghijklmnopqrstuvwxyzABCDEF';

export interface HcloudCall {
  method: string;
  /** the path without the query, e.g. /v1/servers/42/actions/poweroff */
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  /** the parsed JSON body, or null */
  body: any;
}

export interface StandinServer {
  id: number;
  name: string;
  status: 'initializing' | 'starting' | 'running' | 'stopping' | 'off' | 'deleting' | 'migrating' | 'rebuilding' | 'unknown';
  serverType: string;
  image: string;
  location: string;
  labels: Record<string, string>;
  userData: string | null;
  sshKeys: string[];
  created: string;
}

export interface HcloudStandin {
  /** the API base, as SVC_HCLOUD_ENDPOINT takes it (`http://127.0.0.1:<port>/v1`) */
  endpoint: string;
  calls: HcloudCall[];
  servers: Map<number, StandinServer>;
  /** the one bearer token accepted; tests may change it (a revoked token) */
  token: string;
  faults: {
    /** the next N requests answer 429 rate_limit_exceeded */
    rateLimited: number;
    /** the Retry-After of those 429s in seconds; null sends none (only RateLimit-Reset) */
    retryAfterSeconds: number | null;
    /** the next N requests answer 500 server_error */
    serverErrors: number;
    /** servers created from now on stay `starting` (cloud-init never gets the machine up) */
    neverBoots: boolean;
    /** the next N requests are carried out but never answered (a hang; for a POST, a lost answer) */
    dropAnswers: number;
    /** only requests of this `METHOD /path` count for dropAnswers (null: any) */
    dropAnswersOf: string | null;
  };
  /** holds the next `n` list requests until `n` have arrived, then answers them all (racing creates) */
  holdLists(n: number): void;
  /** a server made outside the service (or left over), for conflicts and lookups */
  addServer(s: Partial<StandinServer> & { name: string }): StandinServer;
  close(): Promise<void>;
}

const SERVER_TYPES: Record<string, { cores: number; memory: number; disk: number; architecture: string; cpu_type: string }> = {
  cx23: { cores: 2, memory: 4, disk: 40, architecture: 'x86', cpu_type: 'shared' },
  cpx22: { cores: 2, memory: 4, disk: 80, architecture: 'x86', cpu_type: 'shared' },
  cax11: { cores: 2, memory: 4, disk: 40, architecture: 'arm', cpu_type: 'shared' },
  ccx13: { cores: 2, memory: 8, disk: 80, architecture: 'x86', cpu_type: 'dedicated' },
};
const LOCATIONS: Record<string, { city: string; country: string; network_zone: string }> = {
  fsn1: { city: 'Falkenstein', country: 'DE', network_zone: 'eu-central' },
  nbg1: { city: 'Nuremberg', country: 'DE', network_zone: 'eu-central' },
  hel1: { city: 'Helsinki', country: 'FI', network_zone: 'eu-central' },
};
/** Boot and power transitions, one step per read of the server. */
const NEXT: Partial<Record<StandinServer['status'], StandinServer['status']>> = { initializing: 'starting', starting: 'running', stopping: 'off' };

type Json = Record<string, unknown>;
const errorBody = (code: string, message: string, details: Json = {}): Json => ({ error: { code, message, details } });

function serverJson(s: StandinServer): Json {
  const type = SERVER_TYPES[s.serverType] ?? SERVER_TYPES.cx23!;
  const loc = LOCATIONS[s.location] ?? LOCATIONS.fsn1!;
  const octet = (s.id % 250) + 1;
  return {
    id: s.id, name: s.name, status: s.status, created: s.created, labels: s.labels, locked: false,
    public_net: {
      ipv4: { id: 9000 + s.id, ip: `203.0.113.${octet}`, blocked: false, dns_ptr: `static.${octet}.113.0.203.clients.your-server.de` },
      ipv6: { id: 9500 + s.id, ip: `2001:db8:${s.id.toString(16)}::/64`, blocked: false, dns_ptr: [] },
      floating_ips: [], firewalls: [],
    },
    private_net: [],
    server_type: { id: 100, name: s.serverType, description: s.serverType.toUpperCase(), cores: type.cores, memory: type.memory, disk: type.disk, storage_type: 'local', cpu_type: type.cpu_type, architecture: type.architecture, deprecation: null },
    location: { id: 1, name: s.location, description: `${loc.city} DC Park 1`, country: loc.country, city: loc.city, latitude: 50.47612, longitude: 12.370071, network_zone: loc.network_zone },
    image: { id: 114690387, type: 'system', status: 'available', name: s.image, description: 'Debian 12', os_flavor: 'debian', os_version: '12', architecture: type.architecture },
    iso: null, rescue_enabled: false, backup_window: null, outgoing_traffic: 0, ingoing_traffic: 0, included_traffic: 21990232555520,
    protection: { delete: false, rebuild: false }, volumes: [], load_balancers: [], primary_disk_size: type.disk, placement_group: null,
  };
}

let actionIds = 13_000_000;
function actionJson(command: string, serverId: number): Json {
  return {
    id: ++actionIds, command, status: 'running', progress: 0, started: new Date().toISOString(), finished: null,
    resources: [{ id: serverId, type: 'server' }], error: null,
  };
}

/** Hetzner's label selector: comma-separated `k==v`, `k=v`, `k!=v`, `k`, `!k`, all of which must hold. */
function matchesSelector(labels: Record<string, string>, selector: string): boolean {
  return selector.split(',').map((t) => t.trim()).filter(Boolean).every((term) => {
    let m: RegExpExecArray | null;
    if ((m = /^([^!=]+)!=(.*)$/.exec(term))) return labels[m[1]!] !== m[2];
    if ((m = /^([^!=]+)==?(.*)$/.exec(term))) return labels[m[1]!] === m[2];
    if (term.startsWith('!')) return !(term.slice(1) in labels);
    return term in labels;
  });
}

export async function startHcloudStandin(): Promise<HcloudStandin> {
  const servers = new Map<number, StandinServer>();
  let nextId = 42_000_001;
  let heldLists: { n: number; waiting: (() => void)[] } | null = null;

  const add = (s: Partial<StandinServer> & { name: string }): StandinServer => {
    const server: StandinServer = {
      id: nextId++, status: 'running', serverType: 'cx23', image: 'debian-12', location: 'fsn1', labels: {}, userData: null, sshKeys: [],
      created: new Date().toISOString(), ...s,
    };
    servers.set(server.id, server);
    return server;
  };

  const standin: HcloudStandin = {
    endpoint: '',
    calls: [],
    servers,
    token: HCLOUD_STANDIN_TOKEN,
    faults: { rateLimited: 0, retryAfterSeconds: 7, serverErrors: 0, neverBoots: false, dropAnswers: 0, dropAnswersOf: null },
    holdLists(n) {
      heldLists = { n, waiting: [] };
    },
    addServer: add,
    close: async () => {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };

  function send(res: ServerResponse, status: number, body: Json | null, extra: Record<string, string> = {}): void {
    if (res.destroyed) return;
    const reset = Math.floor(Date.now() / 1000) + 30;
    res.writeHead(status, {
      'content-type': 'application/json', 'ratelimit-limit': '3600', 'ratelimit-remaining': status === 429 ? '0' : '3599', 'ratelimit-reset': String(reset),
      'x-correlation-id': 'c0ffee00c0ffee00', ...extra,
    });
    res.end(body === null ? '' : JSON.stringify(body));
  }

  /** The answer to one authenticated request: [status, body]. */
  async function handle(method: string, path: string, query: Record<string, string>, body: any): Promise<[number, Json]> {
    if (path === '/v1/servers' && method === 'GET') {
      if (heldLists) {
        const held = heldLists;
        await new Promise<void>((resolveHeld) => {
          held.waiting.push(resolveHeld);
          if (held.waiting.length >= held.n) {
            heldLists = null;
            for (const w of held.waiting) w();
          }
        });
      }
      let list = [...servers.values()];
      if (query.label_selector) list = list.filter((s) => matchesSelector(s.labels, query.label_selector!));
      if (query.name) list = list.filter((s) => s.name === query.name);
      list.sort((a, b) => a.id - b.id);
      const perPage = Math.min(50, Number(query.per_page) || 25);
      const page = Math.max(1, Number(query.page) || 1);
      const last = Math.max(1, Math.ceil(list.length / perPage));
      return [200, {
        servers: list.slice((page - 1) * perPage, page * perPage).map(serverJson),
        meta: { pagination: { page, per_page: perPage, previous_page: page > 1 ? page - 1 : null, next_page: page < last ? page + 1 : null, last_page: last, total_entries: list.length } },
      }];
    }
    if (path === '/v1/servers' && method === 'POST') {
      const fields: { name: string; messages: string[] }[] = [];
      if (typeof body?.name !== 'string' || !/^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/i.test(body.name)) fields.push({ name: 'name', messages: ['invalid hostname'] });
      if (typeof body?.server_type !== 'string' || !SERVER_TYPES[body.server_type]) fields.push({ name: 'server_type', messages: ['server type not found'] });
      if (typeof body?.image !== 'string') fields.push({ name: 'image', messages: ['Missing data for required field.'] });
      if (body?.location !== undefined && !LOCATIONS[body.location]) fields.push({ name: 'location', messages: ['location not found'] });
      if (fields.length) return [400, errorBody('invalid_input', `invalid input in field '${fields[0]!.name}'`, { fields })];
      if ([...servers.values()].some((s) => s.name === body.name)) {
        return [409, errorBody('uniqueness_error', 'SSH key or server name is already used', { fields: [{ name: 'name' }] })];
      }
      const server = add({
        name: body.name, status: 'initializing', serverType: body.server_type, image: body.image, location: body.location ?? 'fsn1',
        labels: body.labels ?? {}, userData: body.user_data ?? null, sshKeys: body.ssh_keys ?? [],
      });
      if (standin.faults.neverBoots) server.status = 'starting';
      return [201, { server: serverJson(server), action: actionJson('create_server', server.id), next_actions: [actionJson('start_server', server.id)], root_password: server.sshKeys.length ? null : 'YvrKqV3nHxT9' }];
    }
    const m = /^\/v1\/servers\/(\d+)(\/actions\/(poweroff|poweron))?$/.exec(path);
    const server = m ? servers.get(Number(m[1])) : undefined;
    if (!m) return [404, errorBody('not_found', 'not found')];
    if (!server) return [404, errorBody('not_found', `server with ID '${m[1]}' not found`)];
    if (m[3]) {
      if (method !== 'POST') return [405, errorBody('method_not_allowed', 'method not allowed')];
      // The create, start and power actions hold the server's lock while they run.
      if (['initializing', 'starting', 'stopping'].includes(server.status)) return [423, errorBody('locked', 'server is locked by another action')];
      if (m[3] === 'poweroff' && server.status !== 'off') server.status = 'stopping';
      if (m[3] === 'poweron' && server.status === 'off') server.status = 'starting';
      return [201, { action: actionJson(m[3], server.id) }];
    }
    if (method === 'GET') {
      const answer = serverJson(server);
      const next = NEXT[server.status];
      if (next && !(standin.faults.neverBoots && next === 'running')) server.status = next;
      return [200, { server: answer }];
    }
    if (method === 'DELETE') {
      servers.delete(server.id);
      return [200, { action: actionJson('delete_server', server.id) }];
    }
    return [405, errorBody('method_not_allowed', 'method not allowed')];
  }

  const http = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://standin');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any = null;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      return send(res, 400, errorBody('json_error', 'invalid JSON'));
    }
    standin.calls.push({ method: req.method ?? '', path: url.pathname, query: Object.fromEntries(url.searchParams), authorization: req.headers.authorization, body });
    if (req.headers.authorization !== `Bearer ${standin.token}`) return send(res, 401, errorBody('unauthorized', 'unable to authenticate'));
    if (standin.faults.rateLimited > 0) {
      standin.faults.rateLimited--;
      const retry: Record<string, string> = standin.faults.retryAfterSeconds === null ? {} : { 'retry-after': String(standin.faults.retryAfterSeconds) };
      return send(res, 429, errorBody('rate_limit_exceeded', 'limit of 3600 requests per hour reached'), retry);
    }
    if (standin.faults.serverErrors > 0) {
      standin.faults.serverErrors--;
      return send(res, 500, errorBody('server_error', 'an internal error occurred, please try again later'));
    }
    const { dropAnswers, dropAnswersOf } = standin.faults;
    const drop = dropAnswers > 0 && (dropAnswersOf === null || dropAnswersOf === `${req.method} ${url.pathname}`);
    if (drop) standin.faults.dropAnswers--;
    const [status, answer] = await handle(req.method ?? 'GET', url.pathname, Object.fromEntries(url.searchParams), body);
    if (!drop) send(res, status, answer);
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  standin.endpoint = `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1`;
  return standin;
}
