// Whether the ports `svc serve` will listen on are free, checked before any slow work (opening and
// migrating the database, starting workers), so a taken port is said at once with the setting to
// change, not after a start that then fails.
import { createServer } from 'node:net';

export interface PortToCheck {
  /** the setting that names the port, said in the error (PORT, SVC_PREVIEW_PORT) */
  setting: string;
  port: number;
}

/** Binds each port for a moment and lets it go; resolves to what is wrong in words, or null. `hostSetting` names the setting of `host`. */
export async function portsProblem(host: string, ports: PortToCheck[], hostSetting = 'HOST'): Promise<string | null> {
  const fixed = ports.filter((p) => p.port !== 0);
  for (let i = 0; i < fixed.length; i++) {
    for (let j = i + 1; j < fixed.length; j++) {
      if (fixed[i]!.port === fixed[j]!.port) {
        return `${fixed[i]!.setting} and ${fixed[j]!.setting} are both ${fixed[i]!.port}: set one of them to another port`;
      }
    }
  }
  for (const { setting, port } of fixed) {
    const error = await tryBind(host, port);
    if (error === 'EADDRINUSE') return `port ${port} on ${host} is taken by another program: set ${setting} to a free port, or stop that program`;
    if (error === 'EACCES') return `port ${port} on ${host} needs privileges this process does not have: set ${setting} to a port above 1023`;
    if (error === 'EADDRNOTAVAIL') return `${host} is not an address of this machine: set ${hostSetting} to one of its addresses (127.0.0.1 or 0.0.0.0)`;
    if (error) return `cannot listen on ${host}:${port} (${error}): set ${setting} to another port`;
  }
  return null;
}

function tryBind(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}
