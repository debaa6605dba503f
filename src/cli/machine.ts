// `svc machine join`: the machine agent (src/machine-agent/agent.ts) as a foreground process for a
// server that joins a cluster, e.g. under systemd (docs/machines-agent.md). Its log is one plain
// line per event on stderr (the journal adds its own fields); the token and the credential never
// appear. SIGTERM or SIGINT lets the request in flight finish and exits 0; a second one exits at once.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CliError, EXIT } from './errors.js';
import type { Output, Stream } from './output.js';

export interface MachineJoinFlags {
  server: string;
  token?: string;
  stateDir?: string;
}

export const MACHINE_JOIN_HELP = `
Environment:
  SVC_JOIN_TOKEN  the join token, instead of --token (so it does not show in ps)

The agent trades the token once for a machine credential, kept in
<state-dir>/credential (mode 0600): a restarted agent uses it, without a token.
Default state dir: $XDG_STATE_HOME/svc/machine, else ~/.local/state/svc/machine;
as a system service, --state-dir /var/lib/svc-machine.

Exit codes:
  0   stopped by SIGTERM or SIGINT
  1   could not run (e.g. the state dir is not writable)
  2   usage (no --server; no token and no kept credential)
  3   the machine was deleted or its credential revoked (the kept credential is
      removed)
  4   the join was refused: the token is unknown, used, revoked or expired, the
      quota is full, or the cluster is being deleted
Do not restart the agent on 3 or 4 (systemd: RestartPreventExitStatus=3 4).

Example:
  SVC_JOIN_TOKEN=svcb_... svc machine join --server https://svc.example.com`;

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME && env.XDG_STATE_HOME.startsWith('/') ? env.XDG_STATE_HOME : join(env.HOME ?? homedir(), '.local', 'state');
  return join(base, 'svc', 'machine');
}

/** The agent's log: `<time> <level> <message>`, one line each. */
function textLogger(err: Stream) {
  const line = (level: string) => (_fields: Record<string, unknown>, msg: string) => {
    err.write(`${new Date().toISOString()} ${level} ${msg}\n`);
  };
  return { info: line('info'), warn: line('warn'), error: line('error') };
}

export async function machineJoin(o: Output, flags: MachineJoinFlags, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let server: URL;
  try {
    server = new URL(flags.server);
  } catch {
    throw new CliError(`--server ${flags.server}: not a URL (e.g. https://svc.example.com)`, EXIT.USAGE);
  }
  if (server.protocol !== 'https:' && server.protocol !== 'http:') throw new CliError(`--server ${flags.server}: an http or https URL`, EXIT.USAGE);
  const token = flags.token?.trim() || env.SVC_JOIN_TOKEN?.trim() || undefined;
  const stateDir = flags.stateDir ?? defaultStateDir(env);
  const { runMachineAgent, AgentSetupError } = await import('../machine-agent/agent.js');
  const logger = textLogger(o.err);
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      logger.warn({}, `${signal} again: exiting now`);
      process.exit(EXIT.INTERRUPTED);
    }
    logger.info({}, `${signal} received: finishing the request in flight, then stopping`);
    controller.abort();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    const outcome = await runMachineAgent({ server: server.toString().replace(/\/+$/, ''), token, stateDir, fetch, logger, signal: controller.signal });
    // The client's codes for "not authenticated" and "permission denied" (API.md 8.4), which is
    // what these are; a supervisor must not restart the agent on either (there is nothing to retry).
    if (outcome.kind === 'credential_refused') return EXIT.UNAUTHENTICATED;
    if (outcome.kind === 'join_refused') return EXIT.PERMISSION_DENIED;
    return EXIT.OK;
  } catch (err) {
    if (err instanceof AgentSetupError) {
      throw new CliError(err.message, err.missingToken ? EXIT.USAGE : EXIT.ERROR);
    }
    throw err;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}
