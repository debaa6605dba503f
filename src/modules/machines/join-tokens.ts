// The secrets of machines: worker bootstrap tokens (one use, to join) and machine credentials
// (what the agent authenticates its heartbeats with), and the shell line and cloud-init that
// start an agent with a token. Only SHA-256 hashes of either are stored.
//
// A bootstrap token is derived from the service key and the bootstrap's id (HMAC), so an
// idempotent replay of its creation, or a machine.create step run again after a crash, can give
// the same token again without storing it.
import { deriveKey, hmacBase64Url, randomString, sha256Hex } from '../../platform/crypto.js';
import { BOOTSTRAP_TOKEN_PREFIX, MACHINE_CREDENTIAL_PREFIX, TOKEN_RANDOM_LENGTH } from './machines.schemas.js';

export const hashToken = sha256Hex;

export function bootstrapTokenKey(secretKey: Buffer): Buffer {
  return deriveKey(secretKey, 'worker-bootstrap-token');
}

/** `svcb_` + 43 URL-safe characters, the same for the same bootstrap id and service key. */
export function bootstrapToken(key: Buffer, bootstrapId: string): string {
  return `${BOOTSTRAP_TOKEN_PREFIX}${hmacBase64Url(key, bootstrapId)}`;
}

/** `svcm_` + 43 base62 characters, random. */
export function newMachineCredential(): string {
  return `${MACHINE_CREDENTIAL_PREFIX}${randomString(TOKEN_RANDOM_LENGTH)}`;
}

/** Quotes a word for a POSIX shell when it holds anything but safe characters. */
function shellWord(value: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

export interface AgentLaunch {
  /** the agent's executable (SVC_MACHINE_AGENT_COMMAND), e.g. `svc` */
  agentCommand: string;
  /** the service's public URL the agent reaches */
  server: string;
}

/** The shell line that starts the agent with the token, in the foreground. */
export function joinCommand(launch: AgentLaunch, token: string): string {
  return `${launch.agentCommand} machine join --server ${shellWord(launch.server)} --token ${token}`;
}

/**
 * cloud-init user data that installs the agent as a systemd service: the token goes in a file
 * only root reads (not in the unit, not in `ps`), the agent keeps its credential in
 * /var/lib/svc-machine, so a restart of the service never needs the used token again.
 */
export function cloudInit(launch: AgentLaunch, token: string): string {
  return [
    '#cloud-config',
    'write_files:',
    '  - path: /etc/svc-machine/join.env',
    "    permissions: '0600'",
    '    content: |',
    `      SVC_JOIN_TOKEN=${token}`,
    '  - path: /etc/systemd/system/svc-machine.service',
    "    permissions: '0644'",
    '    content: |',
    '      [Unit]',
    '      Description=svc machine agent',
    '      Wants=network-online.target',
    '      After=network-online.target',
    '      [Service]',
    // "-": the unit still starts once the token file is gone (the kept credential is used then)
    '      EnvironmentFile=-/etc/svc-machine/join.env',
    `      ExecStart=${launch.agentCommand} machine join --server ${shellWord(launch.server)} --state-dir /var/lib/svc-machine`,
    '      Restart=on-failure',
    '      RestartSec=5',
    '      RestartPreventExitStatus=3 4',
    '      [Install]',
    '      WantedBy=multi-user.target',
    'runcmd:',
    '  - [systemctl, daemon-reload]',
    '  - [systemctl, enable, --now, svc-machine.service]',
    '',
  ].join('\n');
}
