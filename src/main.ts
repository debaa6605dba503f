// The `svc` command. `serve`, `migrate` and `admin` run the server side; everything else is the
// command-line client. Both are loaded lazily so the client starts without importing Fastify,
// Kysely or the database drivers (bench/cli.js measures it).
const SERVER_COMMANDS = new Set(['serve', 'migrate', 'admin']);

export async function main(argv: string[]): Promise<number> {
  if (argv[0] !== undefined && SERVER_COMMANDS.has(argv[0])) {
    const { serverMain } = await import('./server-commands.js');
    return serverMain(argv);
  }
  const { runCli } = await import('./cli/program.js');
  return runCli(argv);
}
