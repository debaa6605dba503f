// The one interface every compute provider implements (API.md 8.5, section 7): it creates, powers
// and destroys the servers that provisioned machines run on. The machine workflows call it from
// their steps; every method is idempotent, because a step may run again after a crash or a retry
// (createServer first looks for the server it may already have made for the same machine, so one
// request never makes two servers).

export const COMPUTE_PROVIDERS = ['local', 'hcloud'] as const;
export type ComputeProviderName = (typeof COMPUTE_PROVIDERS)[number];

/** A failure of the provider; `retryable: false` fails the step at once (bad request, rejected token). */
export class ComputeProviderError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    /** the provider asked to wait this long before the next call (a 429's retry-after) */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'ComputeProviderError';
  }
}

export interface ComputeCallContext {
  /** aborted when the calling step must stop (its timeout, a lost lease, shutdown) */
  signal: AbortSignal;
}

export interface CreateServerRequest {
  /** the mch_ id the server is for: the provider labels the server with it and finds it again by it */
  machineId: string;
  /** a DNS-safe server name, unique per machine (e.g. `svc-<machine id>`) */
  name: string;
  /** the provider's server type, e.g. `cx22` (hcloud) or `local-small` */
  instanceType: string;
  /** cloud-init user data that starts the machine agent with its one-time join token */
  userData: string;
}

/** What the provider says a server is doing. `gone`: it does not exist (deleted, or never made). */
export type ServerStatus = 'starting' | 'running' | 'stopping' | 'off' | 'gone';

export interface ServerInfo {
  /** the provider's id of the server */
  serverId: string;
  status: ServerStatus;
}

export interface ComputeProvider {
  readonly name: ComputeProviderName;
  /** the instance types it offers, for validation and the OpenAPI description */
  readonly instanceTypes: readonly string[];
  /**
   * Creates the server for `machineId`, or returns the one already made for it (found by its
   * label), so a repeated call after a crash makes no second server.
   */
  createServer(req: CreateServerRequest, ctx: ComputeCallContext): Promise<ServerInfo>;
  /**
   * The server made for `machineId` (found by its label), or null: how a deletion finds a server
   * whose creation was interrupted before its id was recorded.
   */
  findServer(machineId: string, ctx: ComputeCallContext): Promise<ServerInfo | null>;
  /** The server's status; `gone` when it does not exist. */
  getServer(serverId: string, ctx: ComputeCallContext): Promise<ServerInfo>;
  /** Powers the server off (hard); nothing when it is off already. */
  powerOff(serverId: string, ctx: ComputeCallContext): Promise<void>;
  /** Powers the server on; nothing when it is on already. */
  powerOn(serverId: string, ctx: ComputeCallContext): Promise<void>;
  /** Destroys the server; nothing when it is gone already. */
  deleteServer(serverId: string, ctx: ComputeCallContext): Promise<void>;
}
