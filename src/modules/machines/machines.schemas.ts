// Machines and worker bootstraps (API.md 8.5): the records, the bodies of their routes, and the
// two calls of the machine agent (join, heartbeat).
import { Type, type Static } from 'typebox';
import { refTo, StringEnum } from '../../platform/http.js';
import { MAX_EXACT_INTEGER, UnixSecondsInput } from '../../platform/integer-bounds.js';

export const MACHINE_STATES = ['PROVISIONING', 'JOINING', 'ACTIVE', 'UNREACHABLE', 'SUSPENDED', 'DELETING'] as const;
export type MachineState = (typeof MACHINE_STATES)[number];
export const MACHINE_ORIGINS = ['joined', 'provisioned'] as const;
export const MACHINE_PROVIDERS = ['byo', 'local', 'hcloud'] as const;
export type MachineProvider = (typeof MACHINE_PROVIDERS)[number];
export const BOOTSTRAP_STATUSES = ['active', 'used', 'revoked', 'expired'] as const;
export type BootstrapStatus = (typeof BOOTSTRAP_STATUSES)[number];

/** The machine token a heartbeat (and every agent route) authenticates with: `svcm_` + 43 base62 characters. */
export const MACHINE_CREDENTIAL_PREFIX = 'svcm_';
/** A worker bootstrap's one-time join token: `svcb_` + 43 URL-safe base64 characters (an HMAC of its id, see join-tokens.ts). */
export const BOOTSTRAP_TOKEN_PREFIX = 'svcb_';
export const TOKEN_RANDOM_LENGTH = 43;

export const MachineId = Type.String({ minLength: 1, maxLength: 54, description: 'machine id (mch_...)' });
export const BootstrapId = Type.String({ minLength: 1, maxLength: 54, description: 'worker bootstrap id (wbs_...)' });

const unix = (description: string) => Type.Integer({ minimum: 0, description: `${description} (Unix seconds)` });
const unixOrNull = (description: string) => Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: `${description} (Unix seconds), or null` });

export const WorkerBootstrap = Type.Object(
  {
    id: Type.String({ description: 'wbs_ id' }),
    cluster_id: Type.String({ description: 'the cluster the machine joins (clu_ id)' }),
    status: StringEnum(BOOTSTRAP_STATUSES, {
      description: 'active (its token can be used once), used (a machine joined with it), revoked, expired (past expires_at, never used)',
    }),
    expires_at: unix('the token joins nothing after this'),
    used_by_machine_id: Type.Union([Type.String(), Type.Null()], { description: 'the machine that joined with it (mch_ id), or null' }),
    created_by: Type.String({ description: 'who created it: usr_, tok_ or oac_ id' }),
    created_at: unix('created'),
    etag: Type.String({ description: 'changes on every write; send it back in if-match to revoke' }),
  },
  {
    $id: 'WorkerBootstrap',
    description: 'A one-time permission for one server to join a cluster as a machine. Its token is shown only when it is created.',
    examples: [{
      id: 'wbs_01kaxq3m7y0c9v8t6r5p4n3m2k', cluster_id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k', status: 'active', expires_at: 1767229200,
      used_by_machine_id: null, created_by: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', created_at: 1767225600, etag: '1',
    }],
  },
);
export type WorkerBootstrapT = Static<typeof WorkerBootstrap>;

export const CreatedWorkerBootstrap = Type.Object(
  {
    ...WorkerBootstrap.properties,
    token: Type.String({ description: 'the one-time join token (`svcb_...`); shown in this response only, stored hashed' }),
    command: Type.String({ description: 'a shell line that starts the machine agent with the token: run it on the server' }),
    cloud_init: Type.String({ description: 'the same as cloud-init user data (#cloud-config), for a server created with it' }),
  },
  {
    $id: 'CreatedWorkerBootstrap',
    description: 'A new worker bootstrap with its token, its command and its cloud-init, which are never shown again.',
    examples: [{
      id: 'wbs_01kaxq3m7y0c9v8t6r5p4n3m2k', cluster_id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k', status: 'active', expires_at: 1767229200,
      used_by_machine_id: null, created_by: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', created_at: 1767225600, etag: '1',
      token: 'svcb_4Zq0YvT1nJb8mW2xKc6Lr9Ps3Df7Gh5Aa1Bb2Cc3Dd4',
      command: 'npx -y svc machine join --server https://svc.example.com --token svcb_4Zq0YvT1nJb8mW2xKc6Lr9Ps3Df7Gh5Aa1Bb2Cc3Dd4',
      cloud_init: '#cloud-config\nruncmd:\n  - [sh, -c, "..."]\n',
    }],
  },
);
export type CreatedWorkerBootstrapT = Static<typeof CreatedWorkerBootstrap>;

export const CreateWorkerBootstrapBody = Type.Object(
  {
    ttl_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 86_400, default: 3600, description: 'how long the token can be used: 60 s to 24 h, default 1 h' })),
  },
  { additionalProperties: false, examples: [{ ttl_seconds: 3600 }] },
);

export const MachineFacts = Type.Object(
  {
    hostname: Type.String({ minLength: 1, maxLength: 253, description: 'the server\'s host name' }),
    os: Type.String({ maxLength: 100, description: 'operating system (node:os platform(), e.g. linux)' }),
    arch: Type.String({ maxLength: 40, description: 'CPU architecture (e.g. x64, arm64)' }),
    cpu_count: Type.Integer({ minimum: 0, maximum: 100_000, description: 'logical CPUs' }),
    memory_bytes: Type.Integer({ minimum: 0, maximum: MAX_EXACT_INTEGER, description: 'total memory in bytes' }),
    kernel: Type.String({ maxLength: 200, description: 'kernel release (node:os release())' }),
    agent_version: Type.String({ maxLength: 40, description: 'the version of the svc machine agent' }),
  },
  {
    $id: 'MachineFacts',
    additionalProperties: false,
    description: 'What the machine agent reports about its server when it joins and in its heartbeats.',
    examples: [{ hostname: 'build-01', os: 'linux', arch: 'x64', cpu_count: 4, memory_bytes: 8_254_390_272, kernel: '6.1.0-28-amd64', agent_version: '0.1.0' }],
  },
);
export type MachineFactsT = Static<typeof MachineFacts>;

export const Machine = Type.Object(
  {
    id: Type.String({ description: 'mch_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    cluster_id: Type.String({ description: 'the cluster it is a node of (clu_ id)' }),
    name: Type.Union([Type.String(), Type.Null()], { description: 'a name people give it, or null' }),
    origin: StringEnum(MACHINE_ORIGINS, { description: 'joined (a server someone brought, through a worker bootstrap) or provisioned (POST /v1/machines)' }),
    provider: StringEnum(MACHINE_PROVIDERS, { description: 'byo (brought by its owner), local (a server simulated by the service) or hcloud (Hetzner Cloud)' }),
    instance_type: Type.Union([Type.String(), Type.Null()], { description: 'the provider\'s server type of a provisioned machine, or null' }),
    state: StringEnum(MACHINE_STATES, {
      description:
        'PROVISIONING (its server is being created), JOINING (waiting for its agent\'s first heartbeat), ACTIVE (a ready node), ' +
        'UNREACHABLE (no heartbeat for 3 intervals; ACTIVE again when they resume), SUSPENDED (cordoned: no new work lands on it), ' +
        'DELETING (its machine.delete operation runs; it disappears when that ends)',
    }),
    node_name: Type.Union([Type.String(), Type.Null()], { description: 'its node\'s name in the cluster, once it joined' }),
    facts: Type.Union([refTo(MachineFacts), Type.Null()], { description: 'what its agent last reported, or null before it joined' }),
    last_heartbeat_at: unixOrNull('the last heartbeat of its agent'),
    expires_at: unixOrNull('when the service deletes it (machine_expiry notifications go out 72 h and 24 h before)'),
    reconciling: Type.Boolean({ description: 'true while an operation acts on the machine' }),
    html_url: Type.String({ format: 'uri', description: 'the dashboard view of the machine' }),
    created_at: unix('created'),
    updated_at: unix('last changed'),
    etag: Type.String({ description: 'changes on every write, also on state changes; heartbeats alone do not change it' }),
  },
  {
    $id: 'Machine',
    description: 'A server that works as a node of one of the workspace\'s clusters, and the agent running on it.',
    examples: [{
      id: 'mch_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', cluster_id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k',
      name: 'build-01', origin: 'joined', provider: 'byo', instance_type: null, state: 'ACTIVE', node_name: 'build-01-n3m2k',
      facts: { hostname: 'build-01', os: 'linux', arch: 'x64', cpu_count: 4, memory_bytes: 8_254_390_272, kernel: '6.1.0-28-amd64', agent_version: '0.1.0' },
      last_heartbeat_at: 1767225900, expires_at: null, reconciling: false,
      html_url: 'https://svc.example.com/machines/mch_01kaxq3m7y0c9v8t6r5p4n3m2k', created_at: 1767225600, updated_at: 1767225615, etag: '2',
    }],
  },
);
export type MachineT = Static<typeof Machine>;

const MachineName = Type.String({ minLength: 1, maxLength: 120, description: 'a name for people, up to 120 characters' });
const ExpiresAt = UnixSecondsInput('in the future: the service deletes the machine then');

export const CreateMachineBody = Type.Object(
  {
    cluster_id: Type.String({ minLength: 1, maxLength: 54, description: 'the cluster the new machine joins (clu_ id)' }),
    instance_type: Type.String({ minLength: 1, maxLength: 40, description: 'the compute provider\'s server type (see the description of this route)' }),
    name: Type.Optional(MachineName),
    expires_at: Type.Optional(ExpiresAt),
  },
  { additionalProperties: false, examples: [{ cluster_id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k', instance_type: 'local-small', name: 'ci-runner' }] },
);
export type CreateMachineBodyT = Static<typeof CreateMachineBody>;

export const PatchMachineBody = Type.Object(
  {
    name: Type.Optional(Type.Union([MachineName, Type.Null()], { description: 'a new name, or null to clear it' })),
    expires_at: Type.Optional(Type.Union([ExpiresAt, Type.Null()], { description: 'a new expiry in the future, or null to keep the machine' })),
  },
  { additionalProperties: false, examples: [{ name: 'build-01', expires_at: null }] },
);
export type PatchMachineBodyT = Static<typeof PatchMachineBody>;

export const ListMachinesQuery = Type.Object(
  {
    cluster_id: Type.Optional(Type.String({ minLength: 1, maxLength: 54, description: 'only the machines of this cluster' })),
    state: Type.Optional(StringEnum(MACHINE_STATES, { description: 'only machines in this state' })),
  },
  { additionalProperties: false },
);

// ---- the machine agent's calls ----

export const MachineJoinBody = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 100, description: 'the worker bootstrap\'s one-time token (`svcb_...`)' }),
    facts: refTo(MachineFacts),
  },
  {
    additionalProperties: false,
    examples: [{
      token: 'svcb_4Zq0YvT1nJb8mW2xKc6Lr9Ps3Df7Gh5Aa1Bb2Cc3Dd4',
      facts: { hostname: 'build-01', os: 'linux', arch: 'x64', cpu_count: 4, memory_bytes: 8_254_390_272, kernel: '6.1.0-28-amd64', agent_version: '0.1.0' },
    }],
  },
);
export type MachineJoinBodyT = Static<typeof MachineJoinBody>;

export const MachineJoin = Type.Object(
  {
    machine_id: Type.String({ description: 'the machine this server now is (mch_ id)' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    cluster_id: Type.String({ description: 'clu_ id' }),
    node_name: Type.String({ description: 'its node name in the cluster' }),
    credential: Type.String({ description: 'the machine credential (`svcm_...`), shown once: it authenticates the agent\'s heartbeats and nothing else' }),
    heartbeat_interval_seconds: Type.Integer({ minimum: 1, description: 'send a heartbeat this often; 3 missed make the machine UNREACHABLE' }),
  },
  {
    $id: 'MachineJoin', description: 'What a server receives for its one-time token: its machine and the credential its agent keeps.',
    examples: [{
      machine_id: 'mch_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', cluster_id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k',
      node_name: 'build-01-n3m2k', credential: 'svcm_3fQk9ZrT2mW8xLc5Np7Hs1Dv4Gb6Jy0Ka2Pe9Ru3Tw', heartbeat_interval_seconds: 15,
    }],
  },
);
export type MachineJoinT = Static<typeof MachineJoin>;

export const MachineHeartbeatBody = Type.Object(
  {
    facts: Type.Optional(refTo(MachineFacts)),
  },
  { additionalProperties: false, examples: [{}] },
);

export const MachineHeartbeat = Type.Object(
  {
    machine_id: Type.String({ description: 'mch_ id' }),
    state: StringEnum(MACHINE_STATES, { description: 'the machine\'s state after this heartbeat' }),
    schedulable: Type.Boolean({ description: 'false while the machine is cordoned (SUSPENDED or DELETING): no new work lands on it' }),
    heartbeat_interval_seconds: Type.Integer({ minimum: 1, description: 'send the next heartbeat after this many seconds' }),
  },
  {
    $id: 'MachineHeartbeat', description: 'The service\'s answer to a heartbeat.',
    examples: [{ machine_id: 'mch_01kaxq3m7y0c9v8t6r5p4n3m2k', state: 'ACTIVE', schedulable: true, heartbeat_interval_seconds: 15 }],
  },
);
export type MachineHeartbeatT = Static<typeof MachineHeartbeat>;

/** Registered once on the app (src/schemas.ts). */
export const MACHINE_SCHEMAS = [MachineFacts, WorkerBootstrap, CreatedWorkerBootstrap, Machine, MachineJoin, MachineHeartbeat];
