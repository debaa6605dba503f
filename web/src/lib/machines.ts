// How machines and worker bootstraps read on a page (API.md 8.5): names, providers and origins in
// words, the agent's facts under human labels, which actions a state allows, and the choices of
// the forms. Kept free of the DOM for unit tests (test/web/machines-lib.test.ts).
import type { Schemas } from './api.ts';

export type Machine = Schemas['Machine'];
export type MachineFacts = Schemas['MachineFacts'];
export type MachineState = Machine['state'];
export type WorkerBootstrap = Schemas['WorkerBootstrap'];

/** What a person calls a machine: its name, else its node's, else its host's, else its id. */
export function machineName(m: Pick<Machine, 'id' | 'name' | 'node_name' | 'facts'>): string {
  return m.name ?? m.node_name ?? m.facts?.hostname ?? m.id;
}

export const PROVIDER_WORDS: Record<Machine['provider'], string> = {
  byo: 'Your own server',
  local: 'Local (simulated by the service)',
  hcloud: 'Hetzner Cloud',
};

export const ORIGIN_WORDS: Record<Machine['origin'], string> = {
  joined: 'Joined with a one-time token',
  provisioned: 'Provisioned by the service',
};

export const MACHINE_STATES: [MachineState, string][] = [
  ['PROVISIONING', 'Provisioning'],
  ['JOINING', 'Joining'],
  ['ACTIVE', 'Active'],
  ['UNREACHABLE', 'Unreachable'],
  ['SUSPENDED', 'Suspended'],
  ['DELETING', 'Deleting'],
];

const OS_WORDS: Record<string, string> = { linux: 'Linux', darwin: 'macOS', win32: 'Windows', freebsd: 'FreeBSD', openbsd: 'OpenBSD' };

/** Bytes as GiB with one decimal ("7.7 GiB"), as a server's memory is usually quoted. */
export function formatGiB(bytes: number): string {
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

/** The agent's facts as labelled rows, in the order a person checks a server. */
export function factRows(f: MachineFacts): [label: string, value: string][] {
  return [
    ['Host name', f.hostname],
    ['CPUs', String(f.cpu_count)],
    ['Memory', formatGiB(f.memory_bytes)],
    ['OS', OS_WORDS[f.os] ?? f.os],
    ['Kernel', f.kernel],
    ['Architecture', f.arch],
    ['Agent version', f.agent_version],
  ];
}

/** The lifecycle actions a state allows (the API answers 422 MACHINE_STATE otherwise). */
export function machineActions(state: MachineState): { suspend: boolean; resume: boolean; remove: boolean } {
  return {
    suspend: state === 'ACTIVE' || state === 'UNREACHABLE',
    resume: state === 'SUSPENDED',
    remove: state !== 'DELETING',
  };
}

/** How long a join token can be used (ttl_seconds: the API takes 60 s to 24 h). */
export const TTL_CHOICES: [seconds: string, label: string][] = [
  ['900', '15 minutes'],
  ['3600', '1 hour'],
  ['21600', '6 hours'],
  ['86400', '24 hours'],
];

/** When the service deletes a machine: lib/expiry.ts reads these (days, never, a date). */
export const MACHINE_EXPIRY_CHOICES: [value: string, label: string][] = [
  ['never', 'Never (clear the expiry)'],
  ['1', 'In a day'],
  ['7', 'In 7 days'],
  ['30', 'In 30 days'],
  ['date', 'On a date…'],
];

/** What a state means for the person looking at it. */
export const STATE_NOTES: Record<MachineState, string> = {
  PROVISIONING: 'Its server is being created.',
  JOINING: 'Waiting for its agent to join and send its first heartbeat.',
  ACTIVE: 'A ready node of its cluster.',
  UNREACHABLE: 'Its agent missed 3 heartbeats: check that the server runs and reaches the service. It becomes active again with its next heartbeat.',
  SUSPENDED: 'Cordoned: no new work lands on it until it is resumed.',
  DELETING: 'Being drained and removed from its cluster.',
};

/** The operations on a machine by their type, as titles of their live view. */
export const MACHINE_OPERATION_TITLES: Record<string, string> = {
  'machine.create': 'Provisioning',
  'machine.suspend': 'Suspension',
  'machine.resume': 'Resumption',
  'machine.delete': 'Deletion',
};
