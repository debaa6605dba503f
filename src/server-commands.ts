// The server side of the `svc` executable: serve | migrate | admin create-user | admin rotate-keys. Loaded only for
// those commands (see main.ts), so the command-line client never imports Fastify, Kysely or drivers.
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import { openDatabase } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { ApiError } from './platform/errors.js';
import { startServer } from './server.js';
import { createServices } from './services.js';
import { keyringOf } from './platform/keyring.js';
import { rotateKeys } from './modules/secrets/rotate-keys.js';

const SERVER_USAGE = `server commands:
  serve [--role all|api|worker]           run the API and the job workers (HTTP on HOST:PORT; migrations
                                          run first); --role api serves HTTP only, --role worker runs
                                          operations only (HTTP serves just /healthz, /readyz, /metrics)
  migrate                                 apply pending database migrations and exit
  admin create-user --email E --password P [--name N]
                                          create a user and print its id
  admin rotate-keys [--batch-size N]      re-wrap every secret's data key and re-seal every sealed value
                                          (kubeconfigs, signing keys) under SVC_SECRET_KEY, opening old ones
                                          with SVC_PREVIOUS_SECRET_KEYS; prints what it re-wrapped. Resumable,
                                          safe while the service runs

configuration comes from the environment; see README.md.`;
const USAGE = `usage: svc <command>\n\n${SERVER_USAGE}`;

export async function serverMain(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve': {
        const { values } = parseArgs({ args: rest, options: { role: { type: 'string' } }, strict: true });
        const env = values.role !== undefined ? { ...process.env, SVC_ROLE: values.role } : process.env;
        await startServer(loadConfig(env), { handleSignals: true });
        return 0;
      }
      case 'migrate': {
        const config = loadConfig();
        const handle = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
        try {
          const applied = await migrateToLatest(handle.db);
          console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
        } finally {
          await handle.close();
        }
        return 0;
      }
      case 'admin':
        return await admin(rest);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        console.log(USAGE);
        return command === undefined ? 2 : 0;
      default:
        console.error(`unknown command "${command}"\n\n${USAGE}`);
        return 2;
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`configuration error: ${err.message}`);
      return 2;
    }
    if (typeof (err as { code?: unknown }).code === 'string' && (err as { code: string }).code.startsWith('ERR_PARSE_ARGS')) {
      console.error(`${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    throw err;
  }
}

async function admin(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'rotate-keys') return adminRotateKeys(rest);
  if (sub !== 'create-user') {
    console.error(`unknown admin command "${sub ?? ''}"\n\n${USAGE}`);
    return 2;
  }
  const { values } = parseArgs({
    args: rest,
    options: { email: { type: 'string' }, password: { type: 'string' }, name: { type: 'string' } },
    strict: true,
  });
  if (!values.email || !values.password) {
    console.error('admin create-user needs --email and --password');
    return 2;
  }
  const config = loadConfig();
  const handle = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
  try {
    await migrateToLatest(handle.db);
    const services = createServices({ db: handle.db, dialect: handle.dialect, config });
    const user = await services.users.createUser({ email: values.email, password: values.password, name: values.name ?? null });
    console.log(user.id);
    return 0;
  } catch (err) {
    if (err instanceof ApiError) {
      console.error(`error: ${err.message}`);
      return 1;
    }
    throw err;
  } finally {
    await handle.close();
  }
}

async function adminRotateKeys(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'batch-size': { type: 'string' } }, strict: true });
  const batchSize = values['batch-size'] === undefined ? 500 : Number(values['batch-size']);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    console.error('--batch-size must be an integer from 1 to 10000');
    return 2;
  }
  const config = loadConfig();
  const keyring = keyringOf(config);
  const handle = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
  try {
    await migrateToLatest(handle.db);
    console.log(`rotating to key ${keyring.currentKeyId} (previous keys: ${keyring.keyIds().slice(1).join(', ') || 'none'})`);
    const report = await rotateKeys(handle.db, keyring, { batchSize });
    let failed = 0;
    for (const [what, count] of Object.entries(report)) {
      console.log(`${what}: ${count.rewrapped} re-wrapped${count.failed ? `, ${count.failed} could not be opened with any configured key` : ''}`);
      failed += count.failed;
    }
    if (failed) {
      console.error('error: some values open under none of SVC_SECRET_KEY and SVC_PREVIOUS_SECRET_KEYS; add the key they were sealed with and run again');
      return 1;
    }
    console.log('done: everything is sealed under the current key; the previous keys may be removed');
    return 0;
  } finally {
    await handle.close();
  }
}
