// The `hcloud` compute provider: provisioned machines' servers on Hetzner Cloud, through its public
// server API (POST /v1/servers, GET /v1/servers?label_selector=, GET /v1/servers/{id}, the
// poweroff and poweron actions, DELETE /v1/servers/{id}). Every server it makes carries the label
// `svc-machine=<machine id>`, and createServer looks for that label before it creates anything,
// so a step repeated after a crash (or two workers racing) never makes a second server for one
// machine. Power actions and deletion are asked for, not waited on: the workflow polls getServer.
import { ComputeProviderError, type ComputeCallContext, type ComputeProvider, type CreateServerRequest, type ServerInfo, type ServerStatus } from './driver.js';
import { HcloudApi } from './hcloud-api.js';

export interface HcloudOptions {
  /** a Hetzner Cloud API token of the project, with Read & Write permission */
  token: string;
  /** the API's base URL (no trailing slash); default https://api.hetzner.cloud/v1 */
  endpoint?: string;
  /** where servers are created, e.g. fsn1, nbg1, hel1, ash, hil, sin */
  location: string;
  /** the image servers boot, by name or id (e.g. debian-12) */
  image: string;
  /** SSH keys of the project (names or ids) put on every server; none: Hetzner makes a root password, which is discarded */
  sshKeys?: readonly string[];
  /** one request's deadline, body included (default 30 s) */
  requestTimeoutMs?: number;
}

export const HCLOUD_DEFAULT_ENDPOINT = 'https://api.hetzner.cloud/v1';
/** The label that ties a server to its machine (its value is the mch_ id). */
export const HCLOUD_MACHINE_LABEL = 'svc-machine';

/**
 * The server types offered, as Hetzner sells them since its October 2025 line-up
 * (docs.hetzner.cloud/changelog#2025-10-16-server-types-deprecated: cx22-cx52 and cpx11-cpx51 are
 * no longer sold). Shared x86 cost-optimised (cx), shared AMD regular performance (cpx), shared
 * Ampere arm64 (cax) and dedicated vCPU (ccx). Not every type is sold in every location: Hetzner
 * answers an unavailable one with its own error, which fails the step with its message.
 */
export const HCLOUD_SERVER_TYPES = [
  'cx23', 'cx33', 'cx43', 'cx53',
  'cpx12', 'cpx22', 'cpx32', 'cpx42', 'cpx52', 'cpx62',
  'cax11', 'cax21', 'cax31', 'cax41',
  'ccx13', 'ccx23', 'ccx33', 'ccx43', 'ccx53', 'ccx63',
] as const;

/** Hetzner's limit on user_data. */
const MAX_USER_DATA_BYTES = 32 * 1024;
/** A label value as Hetzner accepts it: at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends. */
const LABEL_VALUE = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;
/** Hetzner's server ids are positive integers. */
const SERVER_ID = /^[1-9][0-9]{0,18}$/;

/**
 * Hetzner's server status on ServerStatus. Transitional states it comes back from (migrating,
 * rebuilding, unknown, and any status added later) read as `starting`: not ready, ask again.
 * `deleting` is `stopping`: the server still exists, and is on its way out.
 */
export function serverStatusOf(status: unknown): ServerStatus {
  switch (status) {
    case 'running':
      return 'running';
    case 'off':
      return 'off';
    case 'stopping':
    case 'deleting':
      return 'stopping';
    default:
      return 'starting';
  }
}

/**
 * A valid hostname (RFC 1123) from the requested name, as Hetzner requires of server names: lower
 * case, `_` and other characters become `-` (`svc-mch_01j...` is `svc-mch-01j...`). The same name
 * always gives the same result, so a repeated create asks for the same name.
 */
export function hcloudServerName(name: string): string {
  const labels = name.toLowerCase().split('.').map((l) => l.replace(/[^a-z0-9-]/g, '-').replace(/^-+|-+$/g, '').slice(0, 63).replace(/-+$/, ''));
  const host = labels.filter(Boolean).join('.').slice(0, 253).replace(/[.-]+$/, '');
  if (!host) throw new ComputeProviderError(`server name "${name.slice(0, 80)}" has no letter or digit to make a hostname of`, false);
  return host;
}

interface HcloudServer {
  id: number;
  name: string;
  status: string;
  labels?: Record<string, string>;
}

const info = (s: HcloudServer): ServerInfo => ({ serverId: String(s.id), status: serverStatusOf(s.status) });

export function createHcloudProvider(options: HcloudOptions): ComputeProvider {
  if (!options.token) throw new ComputeProviderError('the hcloud compute provider needs an API token (SVC_HCLOUD_TOKEN)', false);
  const endpoint = (options.endpoint || HCLOUD_DEFAULT_ENDPOINT).replace(/\/+$/, '');
  const api = new HcloudApi(endpoint, options.token, options.requestTimeoutMs ?? 30_000);
  const sshKeys = options.sshKeys?.length ? [...options.sshKeys] : undefined;

  function serverPath(serverId: string): string {
    if (!SERVER_ID.test(serverId)) throw new ComputeProviderError(`"${serverId.slice(0, 40)}" is not a Hetzner Cloud server id`, false);
    return `/servers/${serverId}`;
  }

  /** The servers labelled for `machineId`, oldest first (normally one, or none). */
  async function serversOf(machineId: string, ctx: ComputeCallContext): Promise<HcloudServer[]> {
    const what = `hcloud: look for the server of machine ${machineId}`;
    const selector = encodeURIComponent(`${HCLOUD_MACHINE_LABEL}==${machineId}`);
    const res = await api.request('GET', `/servers?label_selector=${selector}&sort=id:asc&per_page=50`, undefined, what, ctx);
    if (res.status !== 200) throw api.failure(what, res);
    const servers: unknown = res.body?.servers;
    if (!Array.isArray(servers)) throw new ComputeProviderError(`${what}: Hetzner Cloud's answer has no server list`, true);
    // The label is checked here too: an answer that ignored the selector must not hand us another machine's server.
    return (servers as HcloudServer[]).filter((s) => typeof s?.id === 'number' && s.labels?.[HCLOUD_MACHINE_LABEL] === machineId).sort((a, b) => a.id - b.id);
  }

  async function serverAnswer(serverId: string, what: string, ctx: ComputeCallContext): Promise<ServerInfo> {
    const res = await api.request('GET', serverPath(serverId), undefined, what, ctx);
    if (res.status === 404) return { serverId, status: 'gone' };
    if (res.status !== 200) throw api.failure(what, res);
    if (typeof res.body?.server?.id !== 'number') throw new ComputeProviderError(`${what}: Hetzner Cloud's answer has no server`, true);
    return info(res.body.server as HcloudServer);
  }

  /** Asks for a power action; a 404 is `onGone` (the caller decides whether a vanished server is fine). */
  async function action(serverId: string, name: 'poweroff' | 'poweron', what: string, ctx: ComputeCallContext, onGone: () => void): Promise<void> {
    const res = await api.request('POST', `${serverPath(serverId)}/actions/${name}`, undefined, what, ctx);
    if (res.status === 404) return onGone();
    if (res.status !== 201 && res.status !== 200) throw api.failure(what, res);
  }

  return {
    name: 'hcloud',
    instanceTypes: HCLOUD_SERVER_TYPES,

    async createServer(req: CreateServerRequest, ctx: ComputeCallContext): Promise<ServerInfo> {
      const what = `hcloud: create the server of machine ${req.machineId}`;
      if (!LABEL_VALUE.test(req.machineId)) throw new ComputeProviderError(`${what}: the machine id cannot be a Hetzner label value`, false);
      if (Buffer.byteLength(req.userData) > MAX_USER_DATA_BYTES) {
        throw new ComputeProviderError(`${what}: the cloud-init user data is ${Buffer.byteLength(req.userData)} bytes; Hetzner accepts at most ${MAX_USER_DATA_BYTES}`, false);
      }
      const name = hcloudServerName(req.name);
      // A deleting server is the remains of an earlier attempt, not this machine's server.
      const existing = (await serversOf(req.machineId, ctx)).find((s) => s.status !== 'deleting');
      if (existing) return info(existing);

      const res = await api.request('POST', '/servers', {
        name,
        server_type: req.instanceType,
        image: options.image,
        location: options.location,
        start_after_create: true,
        labels: { [HCLOUD_MACHINE_LABEL]: req.machineId },
        user_data: req.userData,
        ...(sshKeys ? { ssh_keys: sshKeys } : {}),
      }, what, ctx);
      // The answer also holds a root password when no SSH key was given: it is dropped here, never kept.
      if (res.status === 201 || res.status === 200) {
        if (typeof res.body?.server?.id !== 'number') throw new ComputeProviderError(`${what}: Hetzner Cloud's answer has no server`, true);
        return info(res.body.server as HcloudServer);
      }
      if (res.status === 409 && res.body?.error?.code === 'uniqueness_error') {
        // The name is taken: by this machine's server made meanwhile (a racing worker), by its
        // previous server still being deleted (wait), or by a server that is not ours.
        const mine = await serversOf(req.machineId, ctx);
        const live = mine.find((s) => s.status !== 'deleting');
        if (live) return info(live);
        if (mine.length) throw new ComputeProviderError(`${what}: the previous server named ${name} is still being deleted`, true);
        throw new ComputeProviderError(
          `${what}: a server named ${name} already exists in the Hetzner Cloud project without the label ${HCLOUD_MACHINE_LABEL}=${req.machineId}; rename or delete it`,
          false,
        );
      }
      throw api.failure(what, res);
    },

    async findServer(machineId: string, ctx: ComputeCallContext): Promise<ServerInfo | null> {
      if (!LABEL_VALUE.test(machineId)) return null;
      const live = (await serversOf(machineId, ctx)).find((s) => s.status !== 'deleting');
      return live ? info(live) : null;
    },

    getServer(serverId: string, ctx: ComputeCallContext): Promise<ServerInfo> {
      return serverAnswer(serverId, `hcloud: get server ${serverId}`, ctx);
    },

    async powerOff(serverId: string, ctx: ComputeCallContext): Promise<void> {
      const what = `hcloud: power off server ${serverId}`;
      // Asked first, so powering off what is off (or gone) sends no action at all.
      const now = await serverAnswer(serverId, what, ctx);
      if (now.status === 'off' || now.status === 'gone') return;
      await action(serverId, 'poweroff', what, ctx, () => undefined);
    },

    async powerOn(serverId: string, ctx: ComputeCallContext): Promise<void> {
      const what = `hcloud: power on server ${serverId}`;
      const gone = () => {
        throw new ComputeProviderError(`${what}: the server does not exist (deleted outside the service?)`, false);
      };
      const now = await serverAnswer(serverId, what, ctx);
      if (now.status === 'gone') return gone();
      if (now.status === 'running' || now.status === 'starting') return;
      await action(serverId, 'poweron', what, ctx, gone);
    },

    async deleteServer(serverId: string, ctx: ComputeCallContext): Promise<void> {
      const what = `hcloud: delete server ${serverId}`;
      const res = await api.request('DELETE', serverPath(serverId), undefined, what, ctx);
      if (res.status === 404) return;
      if (res.status !== 200 && res.status !== 204) throw api.failure(what, res);
    },
  };
}
