// The `svc` command. `serve`, `migrate` and `admin` run the server side; everything else is the
// command-line client. Both are loaded lazily so the client starts without importing Fastify,
// Kysely or the database drivers (bench/cli.js measures it).
import { svcVersion } from './platform/version.js';

const SERVER_COMMANDS = new Set(['serve', 'migrate', 'admin']);

export async function main(argv: string[]): Promise<number> {
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    process.stdout.write(`svc ${svcVersion()}\n`);
    return 0;
  }
  // `svc help admin [rotate-keys]` is `svc admin [rotate-keys] --help`, as `svc help installs` is `svc installs --help`.
  const serverArgv = argv[0] === 'help' && SERVER_COMMANDS.has(argv[1] ?? '') ? [...argv.slice(1), '--help'] : SERVER_COMMANDS.has(argv[0] ?? '') ? argv : null;
  if (serverArgv) {
    const { serverMain } = await import('./server-commands.js');
    return serverMain(serverArgv);
  }
  const { runCli } = await import('./cli/program.js');
  return runCli(argv);
}
