// The server side of the `svc` executable: serve | migrate | admin create-user | workspaces | users | mail | rotate-keys | backup | restore. Loaded only for
// those commands (see main.ts), so the command-line client never imports Fastify, Kysely or drivers. Arguments are
// parsed with node:util's parseArgs, and each command has its usage text here (`--help` prints it and exits 0).
import { parseArgs } from 'node:util';
import { ConfigError, keyFilePath, loadConfig, loadStorageConfig, readKeyFile, replaceKeyFile, type Config } from './config.js';
import { ApiError } from './platform/errors.js';
import { keyIdOf, keyringOf, type Keyring } from './platform/keyring.js';
import { svcVersion } from './platform/version.js';

/**
 * The database, opened and migrated, for the commands that use one. Loaded on use: the drivers,
 * Kysely and the migrations are most of what these commands import, and their --help (and every
 * usage error) needs none of it.
 */
async function openMigrated(config: { databaseUrl: string | null; dataDir: string }) {
  const [{ openDatabase }, { migrateToLatest }] = await Promise.all([import('./db/database.js'), import('./db/migrate.js')]);
  const handle = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
  try {
    return { handle, applied: await migrateToLatest(handle.db) };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

const CONFIG_NOTE = 'Configuration comes from the environment (SVC_DATA_DIR or DATABASE_URL, SVC_SECRET_KEY, ...); every setting is in docs/configuration.md.';

const SERVE_USAGE = `Usage: svc serve [--role all|api|worker]

Run the API and the job workers until SIGTERM or SIGINT (HTTP on HOST:PORT; migrations run first).
Refuses to start (exit 2) when the database holds values sealed under a key it was not given.

Options:
  --role all|api|worker  all (default): both; api: HTTP only; worker: operations only (HTTP serves
                         just /healthz, /readyz and /metrics)
  -h, --help             display help for command

${CONFIG_NOTE}`;

const MIGRATE_USAGE = `Usage: svc migrate

Apply pending database migrations and exit. It does not check the key: it neither reads nor writes
sealed values.

Options:
  -h, --help  display help for command

${CONFIG_NOTE}`;

/** The usage of each admin command. */
const ADMIN_COMMANDS: Record<string, string> = {
  'create-user': `Usage: svc admin create-user --email E --password P [--name N]

Create a user (for example the first one, to log in with) and print its usr_ id.

Options:
  --email E     the user's e-mail address (required; one taken already exits 1)
  --password P  at least 8 characters (required)
  --name N      display name
  -h, --help    display help for command

Example:
  svc admin create-user --email you@example.com --password 'at least 8 characters'

${CONFIG_NOTE}`,
  'rotate-keys': `Usage: svc admin rotate-keys [--batch-size N]

Re-seal every stored value (secret versions, kubeconfigs, signing keys) under SVC_SECRET_KEY,
opening old ones with SVC_PREVIOUS_SECRET_KEYS; print the counts. Resumable, and safe while the
service runs. When everything is under SVC_SECRET_KEY and SVC_DATA_DIR/secret.key holds another
key, the file is rewritten with SVC_SECRET_KEY, so a later start without SVC_SECRET_KEY uses it.
Exits 1 when some value opens under none of the keys, or is still sealed under another key.

Options:
  --batch-size N  rows per committed batch, 1-10000 (default 500)
  -h, --help      display help for command

Example:
  SVC_SECRET_KEY=$NEW SVC_PREVIOUS_SECRET_KEYS=$OLD svc admin rotate-keys

${CONFIG_NOTE}`,
};

ADMIN_COMMANDS.workspaces = `Usage: svc admin workspaces set-plan <workspace> <tier>

Set a workspace's plan now, up or down (with SVC_BILLING=operator, the default, only the operator
raises a plan). <workspace> is its ws_ id or its slug; <tier> one of the plan catalog's (GET
/v1/plans). A change waiting for the period end is superseded. Lowering below the workspace's
usage is refused, naming the metric. The workspace's owners and admins are notified, and the
audit log records it (subscription.set_plan, actor system "operator").

Options:
  -h, --help  display help for command

Example:
  svc admin workspaces set-plan acme pro

${CONFIG_NOTE}`;

ADMIN_COMMANDS.users = `Usage: svc admin users <command> [<user>]

Administer accounts. <user> is a usr_ id or an e-mail address.

Commands:
  list                     every account: e-mail, name, state, admin role, owned workspaces
  disable <user>           sign it out everywhere and stop its credentials (its sessions, the API
                           tokens it created) until enabled again
  enable <user>            let it sign in again
  delete <user>            delete it with its sessions, memberships and the API tokens it created;
                           refused while it owns a workspace
  reset-password <user>    print a one-time link (30 minutes) to choose a new password; nothing is
                           e-mailed, the current password works until the link is used
  grant-admin <user>       make it an instance admin (the web app's Users page, /v1/admin routes)
  revoke-admin <user>      take that role back (SVC_ADMIN_EMAILS makes admins too)

Options:
  -h, --help  display help for command

Examples:
  svc admin users list
  svc admin users reset-password ada@example.com

${CONFIG_NOTE}`;

ADMIN_COMMANDS.mail = `Usage: svc admin mail list [--to EMAIL] [--limit N]

Print the newest messages of the mail outbox (all drivers; with SVC_MAIL=local, the default, this
is where they are read): when, to whom, the subject, its state, and the text while it is kept.

Options:
  --to EMAIL  only messages to this address
  --limit N   how many, 1-100 (default 10)
  -h, --help  display help for command

Example:
  svc admin mail list --to ada@example.com --limit 1

${CONFIG_NOTE}`;

ADMIN_COMMANDS.backup = `Usage: svc admin backup --to FILE [--force]

Write a backup of the service to FILE while it runs: a tar archive (gzipped when FILE ends in .gz
or .tgz) of a consistent snapshot of the database (SQLite: its online backup; PostgreSQL: pg_dump,
which must be on PATH), every file the service keeps under SVC_DATA_DIR, and a manifest (svc
version, schema, dialect, the key ids its values are sealed under). Progress goes to stderr.

THE ARCHIVE HOLDS NO KEY: secret values stay sealed under SVC_SECRET_KEY (or SVC_DATA_DIR/secret.key),
which you keep apart from the archive. Without it a restore reads no secret. See docs/backups.md.

Options:
  --to FILE   where to write the archive (owner only, 0600); outside SVC_DATA_DIR
  --force     replace FILE if it exists
  -h, --help  display help for command

Example:
  svc admin backup --to svc-backup.tar.gz

${CONFIG_NOTE}`;

ADMIN_COMMANDS.restore = `Usage: svc admin restore --from FILE [--force]

Restore an archive of \`svc admin backup\` into SVC_DATA_DIR and, with DATABASE_URL, into that
PostgreSQL database (pg_restore, which must be on PATH). The target must be empty: a data dir with
nothing but maybe the key file, a database without tables. Refuses an archive whose schema is newer
than this build's migrations, and one of the other database kind. Run it with the service stopped,
then start \`svc serve\` with the key the archive names (it applies newer migrations first).

Options:
  --from FILE  the archive
  --force      delete what the target holds first (every file of SVC_DATA_DIR but secret.key, and
               every table of the database), once the archive is unpacked and checked
  -h, --help   display help for command

Example:
  SVC_DATA_DIR=./restored svc admin restore --from svc-backup.tar.gz

${CONFIG_NOTE}`;

const ADMIN_USAGE = `Usage: svc admin <command> [options]

Administer the service on its host: works on the database directly (same configuration as svc serve),
not through the API.

Commands:
  create-user --email E --password P [--name N]
      create a user and print its id
  workspaces set-plan <workspace> <tier>
      set a workspace's plan now (only the operator raises plans)
  users list | disable | enable | delete | reset-password | grant-admin | revoke-admin
      administer accounts (svc admin users --help)
  mail list [--to EMAIL] [--limit N]
      read the mail outbox
  rotate-keys [--batch-size N]
      re-seal every stored value under SVC_SECRET_KEY; then write that key to
      SVC_DATA_DIR/secret.key if the file held the old one
  backup --to FILE [--force]
      write a backup (database, data dir files, manifest; never the keys) while the service runs
  restore --from FILE [--force]
      restore a backup into an empty data dir (and database)
  help [command]
      display help for command

Run \`svc admin <command> --help\` for a command's options and an example.`;

const SERVER_USAGE = `Usage: svc serve | migrate | admin <command>

Commands:
  serve [--role all|api|worker]  run the API and the job workers
  migrate                        apply pending database migrations and exit
  admin <command>                create-user, workspaces, users, mail, rotate-keys, backup, restore
                                 (svc admin --help)`;

const HELP = { help: { type: 'boolean', short: 'h' } } as const;

/** Prints `usage` as the answer to --help (stdout, exit 0) or after a usage error (stderr, exit 2). */
function usage(text: string, error?: string): number {
  if (error === undefined) {
    console.log(text);
    return 0;
  }
  console.error(`error: ${error}\n\n${text}`);
  return 2;
}

const isParseError = (err: unknown) =>
  typeof (err as { code?: unknown }).code === 'string' && (err as { code: string }).code.startsWith('ERR_PARSE_ARGS');

export async function serverMain(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // The usage a parse error of this command is answered with.
  let shown: string = SERVER_USAGE;
  try {
    switch (command) {
      case 'serve': {
        shown = SERVE_USAGE;
        const { values } = parseArgs({ args: rest, options: { role: { type: 'string' }, ...HELP }, strict: true });
        if (values.help) return usage(shown);
        const env = values.role !== undefined ? { ...process.env, SVC_ROLE: values.role } : process.env;
        // Loaded here: the server (Fastify, every module and driver) costs about 2 s of CPU to
        // import, which `migrate` and the admin commands do not need.
        const { startServer } = await import('./server.js');
        await startServer(loadConfig(env), { handleSignals: true });
        return 0;
      }
      case 'migrate': {
        shown = MIGRATE_USAGE;
        if (parseArgs({ args: rest, options: HELP, strict: true }).values.help) return usage(shown);
        const config = loadConfig();
        const { handle, applied } = await openMigrated(config);
        try {
          console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
        } finally {
          await handle.close();
        }
        return 0;
      }
      case 'admin': {
        const [sub, ...args] = rest;
        if (sub === undefined || sub === 'help' || sub === '--help' || sub === '-h') {
          const topic = sub === 'help' ? args[0] : undefined;
          if (topic === undefined) return usage(ADMIN_USAGE);
          return Object.hasOwn(ADMIN_COMMANDS, topic) ? usage(ADMIN_COMMANDS[topic]!) : usage(ADMIN_USAGE, `unknown admin command "${topic}"`);
        }
        if (!Object.hasOwn(ADMIN_COMMANDS, sub)) return usage(ADMIN_USAGE, `unknown admin command "${sub}"`);
        shown = ADMIN_COMMANDS[sub]!;
        const run = { 'create-user': adminCreateUser, workspaces: adminWorkspaces, users: adminUsers, mail: adminMail, 'rotate-keys': adminRotateKeys, backup: adminBackup, restore: adminRestore }[sub];
        return await (run ?? adminRotateKeys)(args);
      }
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        return command === undefined ? usage(SERVER_USAGE, 'a command is required') : usage(SERVER_USAGE);
      default:
        return usage(SERVER_USAGE, `unknown command "${command}"`);
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`configuration error: ${err.message}`);
      return 2;
    }
    if (isParseError(err)) return usage(shown, (err as Error).message);
    throw err;
  }
}

/** An ApiError is the service refusing what the command asked: its message on stderr, exit 1. Anything else propagates. */
function refusal(err: unknown): number {
  if (!(err instanceof ApiError)) throw err;
  console.error(`error: ${err.message}`);
  return 1;
}

async function adminCreateUser(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { email: { type: 'string' }, password: { type: 'string' }, name: { type: 'string' }, ...HELP },
    strict: true,
  });
  if (values.help) return usage(ADMIN_COMMANDS['create-user']!);
  if (!values.email || !values.password) return usage(ADMIN_COMMANDS['create-user']!, 'admin create-user needs --email and --password');
  const config = loadConfig();
  const { createUserService } = await import('./modules/users/users.service.js');
  const { handle } = await openMigrated(config);
  try {
    // Only the users service: the command serves no request and runs no job.
    const user = await createUserService({ db: handle.db, passwordHashCost: config.passwordHashCost, signup: config.signup, adminEmails: config.people.adminEmails, offerAdmitsSignUp: async () => false }).createUser({ email: values.email, password: values.password, name: values.name ?? null });
    console.log(user.id);
    return 0;
  } catch (err) {
    return refusal(err);
  } finally {
    await handle.close();
  }
}

/** `svc admin workspaces set-plan <workspace> <tier>`: the services over the database, without workers or HTTP. */
async function adminWorkspaces(argv: string[]): Promise<number> {
  const usageText = ADMIN_COMMANDS.workspaces!;
  const { values, positionals } = parseArgs({ args: argv, options: HELP, strict: true, allowPositionals: true });
  if (values.help) return usage(usageText);
  const [verb, ref, tier, ...extra] = positionals;
  if (verb !== 'set-plan') return usage(usageText, verb === undefined ? 'a command is required: set-plan' : `unknown command "${verb}"`);
  if (!ref || !tier || extra.length) return usage(usageText, 'set-plan needs a workspace (ws_ id or slug) and a tier');
  return withServices(async (services) => {
    const ws = await services.workspaces.findForOperator(ref);
    const set = await services.subscriptions.setPlan(ws.id, tier);
    console.log(set.previousTier === set.tier
      ? `${ws.slug} (${ws.id}) stays on ${set.tier}: its pending change was withdrawn`
      : `${ws.slug} (${ws.id}): ${set.previousTier} -> ${set.tier} (change request ${set.changeRequestId})`);
    return 0;
  }).catch(refusal);
}

/**
 * The services over the database for one operator command: stages 1 and 2 of the composition root
 * (src/system-services.ts), without the app, workers or HTTP. The in-process API stays unserved: a
 * service that called it would fail with that API's own clear error; none of these commands does.
 */
async function withServices<T>(fn: (services: import('./services.js').Services) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const { openSystemServices } = await import('./system-services.js');
  const { services, owned } = await openSystemServices({ ...config, logLevel: process.env.LOG_LEVEL ? config.logLevel : 'warn' });
  try {
    return await fn(services);
  } finally {
    await services.localCompute.stop();
    await owned?.close();
  }
}

const when = (unix: number) => new Date(unix * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

const USER_VERBS = ['list', 'disable', 'enable', 'delete', 'reset-password', 'grant-admin', 'revoke-admin'] as const;

/** `svc admin users <verb> [<user>]` */
async function adminUsers(argv: string[]): Promise<number> {
  const usageText = ADMIN_COMMANDS.users!;
  const { values, positionals } = parseArgs({ args: argv, options: HELP, strict: true, allowPositionals: true });
  if (values.help) return usage(usageText);
  const [verb, ref, ...extra] = positionals;
  if (verb === undefined || !(USER_VERBS as readonly string[]).includes(verb)) {
    return usage(usageText, verb === undefined ? `a command is required: ${USER_VERBS.join(', ')}` : `unknown command "${verb}"`);
  }
  if (verb === 'list' ? ref !== undefined : !ref || extra.length) return usage(usageText, verb === 'list' ? 'list takes no argument' : `${verb} needs one user: a usr_ id or an e-mail`);
  try {
    return await withServices(async ({ admin }) => {
      switch (verb) {
        case 'list': {
          let cursor: string | undefined;
          const rows: string[][] = [['ID', 'EMAIL', 'NAME', 'STATE', 'ADMIN', 'OWNS', 'CREATED']];
          do {
            const page = await admin.listUsers({ limit: 100, ...(cursor ? { cursor } : {}) });
            for (const u of page.data) {
              rows.push([u.id, u.email, u.name ?? '-', u.disabled_at === null ? 'active' : 'disabled', u.admin_source ?? '-', u.owned_workspaces.map((w) => w.slug).join(',') || '-', when(u.created_at)]);
            }
            cursor = page.next_cursor ?? undefined;
          } while (cursor);
          const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
          for (const r of rows) console.log(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  '));
          return 0;
        }
        case 'disable': {
          const { user, signedOut } = await admin.disable(ref!, 'operator');
          console.log(`${user.email} (${user.id}) is disabled: ${signedOut} session(s) signed out; the API tokens it created stop until it is enabled`);
          return 0;
        }
        case 'enable': {
          const user = await admin.enable(ref!, 'operator');
          console.log(`${user.email} (${user.id}) is enabled`);
          return 0;
        }
        case 'delete': {
          const user = await admin.getUser(ref!);
          const { deletedTokens } = await admin.remove(ref!, 'operator');
          console.log(`${user.email} (${user.id}) is deleted, with ${deletedTokens} API token(s) it had created`);
          return 0;
        }
        case 'reset-password': {
          const link = await admin.resetLink(ref!, 'operator');
          console.log(`a link for ${link.email} to choose a new password (it works once, until ${when(link.expiresAt)}):`);
          console.log(link.url);
          return 0;
        }
        default: {
          const user = await admin.setAdmin(ref!, verb === 'grant-admin', 'operator');
          console.log(`${user.email} (${user.id}) ${user.admin_source ? `is an instance admin (${user.admin_source})` : 'is no instance admin'}`);
          return 0;
        }
      }
    });
  } catch (err) {
    return refusal(err);
  }
}

/** `svc admin mail list [--to EMAIL] [--limit N]` */
async function adminMail(argv: string[]): Promise<number> {
  const usageText = ADMIN_COMMANDS.mail!;
  const { values, positionals } = parseArgs({ args: argv, options: { to: { type: 'string' }, limit: { type: 'string' }, ...HELP }, strict: true, allowPositionals: true });
  if (values.help) return usage(usageText);
  if (positionals.length !== 1 || positionals[0] !== 'list') return usage(usageText, positionals.length ? `unknown command "${positionals.join(' ')}"` : 'a command is required: list');
  const limit = values.limit === undefined ? 10 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) return usage(usageText, '--limit must be an integer from 1 to 100');
  try {
    return await withServices(async ({ mail }) => {
      const page = await mail.list({ limit, ...(values.to ? { to: values.to } : {}) });
      if (!page.data.length) console.log(values.to ? `no mail to ${values.to}` : 'the outbox is empty');
      for (const m of page.data) {
        console.log(`${m.id}  ${when(m.created_at)}  to ${m.to}  [${m.state}${m.last_error ? `: ${m.last_error}` : ''}]`);
        console.log(`Subject: ${m.subject}`);
        console.log(m.body === null ? '(body not kept: sent through the mail server)' : m.body);
        console.log('');
      }
      return 0;
    });
  } catch (err) {
    return refusal(err);
  }
}

async function adminRotateKeys(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'batch-size': { type: 'string' }, ...HELP }, strict: true });
  if (values.help) return usage(ADMIN_COMMANDS['rotate-keys']!);
  const batchSize = values['batch-size'] === undefined ? 500 : Number(values['batch-size']);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    return usage(ADMIN_COMMANDS['rotate-keys']!, '--batch-size must be an integer from 1 to 10000');
  }
  const config = loadConfig();
  const keyring = keyringOf(config);
  const [{ rotateKeys }, { keyCensus }] = await Promise.all([import('./modules/secrets/rotate-keys.js'), import('./modules/secrets/key-census.js')]);
  const { handle } = await openMigrated(config);
  try {
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
    // Values sealed meanwhile by an instance that still runs with an older key as SVC_SECRET_KEY.
    const left = (await keyCensus(handle.db)).filter((c) => c.keyId !== keyring.currentKeyId);
    if (left.length) {
      for (const l of left) console.error(`error: ${l.what}: ${l.count} still sealed under key ${l.keyId}`);
      console.error('error: an instance still seals new values under an older key: restart every instance with the new SVC_SECRET_KEY, then run this again');
      return 1;
    }
    console.log('done: everything is sealed under the current key; the previous keys may be removed');
    updateKeyFile(config, keyring);
    return 0;
  } finally {
    await handle.close();
  }
}

/**
 * After a complete rotation: a key file in the data dir that holds another key than the current
 * one would make the next start without SVC_SECRET_KEY use a key that opens nothing, so it is
 * replaced with the current key. With no key file (the key comes from the environment, as in
 * production) there is nothing to write.
 */
function updateKeyFile(config: Config, keyring: Keyring): void {
  const file = keyFilePath(config.dataDir);
  let held: Buffer | null;
  try {
    held = readKeyFile(config.dataDir);
  } catch (err) {
    console.error(`warning: ${file} was left as it is: ${(err as Error).message}`);
    return;
  }
  if (held === null || held.equals(config.secretKey)) return;
  replaceKeyFile(config.dataDir, config.secretKey);
  console.log(`${file}: now holds the current key ${keyring.currentKeyId} (it held key ${keyIdOf(held)}), so a start without SVC_SECRET_KEY uses it; ` +
    `backups taken before this rotation still need the old key`);
}

const BACKUP_OPTIONS = { force: { type: 'boolean' }, ...HELP } as const;

/**
 * The environment pg_dump and pg_restore run in: this one (PATH, libpq's PG* settings such as
 * PGSSLROOTCERT) without svc's own settings, so no key reaches them; the connection is passed on
 * their command line (its password in PGPASSWORD, see db/backup.ts).
 */
function toolEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SVC_') && name !== 'DATABASE_URL'));
}

/** A backup's refusal or failure (BackupError, DatabaseBackupError): its message on stderr, exit 1. */
async function backupRefusal(err: unknown): Promise<number> {
  const { BackupError, DatabaseBackupError } = await import('./platform/backup.js');
  if (!(err instanceof BackupError) && !(err instanceof DatabaseBackupError)) throw err;
  console.error(`error: ${err.message}`);
  return 1;
}

/** `svc admin backup --to FILE [--force]` */
async function adminBackup(argv: string[]): Promise<number> {
  const usageText = ADMIN_COMMANDS.backup!;
  const { values } = parseArgs({ args: argv, options: { to: { type: 'string' }, ...BACKUP_OPTIONS }, strict: true });
  if (values.help) return usage(usageText);
  if (!values.to) return usage(usageText, 'admin backup needs --to FILE');
  const config = loadConfig();
  const [{ createBackup, keysWarning }, { keyCensus }] = await Promise.all([import('./platform/backup.js'), import('./modules/secrets/key-census.js')]);
  try {
    const result = await createBackup({
      to: values.to, force: values.force ?? false, dataDir: config.dataDir, databaseUrl: config.databaseUrl,
      currentKeyId: keyIdOf(config.secretKey), svcVersion: svcVersion(), census: keyCensus,
      toolEnv: toolEnvironment(), progress: (line) => console.error(`backup: ${line}`),
    });
    const m = result.manifest;
    const ids = [...new Set(m.keys.sealed_under.map((s) => s.key_id))];
    console.log(`backup written: ${result.file} (${(result.bytes / 1_048_576).toFixed(1)} MB)`);
    console.log(`  database: ${m.dialect}, schema ${m.schema.latest_migration}, taken ${m.created_at}`);
    console.log(`  files: ${result.files} of ${config.dataDir} (not the database files, not the key file)`);
    for (const s of m.keys.sealed_under) console.log(`  ${s.what}: ${s.count} sealed under key ${s.key_id}`);
    console.log('');
    console.log(keysWarning(ids, m.keys.current_key_id));
    return 0;
  } catch (err) {
    return backupRefusal(err);
  }
}

/** `svc admin restore --from FILE [--force]` */
async function adminRestore(argv: string[]): Promise<number> {
  const usageText = ADMIN_COMMANDS.restore!;
  const { values } = parseArgs({ args: argv, options: { from: { type: 'string' }, ...BACKUP_OPTIONS }, strict: true });
  if (values.help) return usage(usageText);
  if (!values.from) return usage(usageText, 'admin restore needs --from FILE');
  // Not loadConfig: it would generate a key into the new data dir, one that opens nothing restored.
  const storage = loadStorageConfig();
  const { restoreBackup } = await import('./platform/backup.js');
  try {
    const { manifest: m, files } = await restoreBackup({
      from: values.from, force: values.force ?? false, dataDir: storage.dataDir, databaseUrl: storage.databaseUrl,
      svcVersion: svcVersion(), toolEnv: toolEnvironment(), progress: (line) => console.error(`restore: ${line}`),
    });
    console.log(`restored the backup of svc ${m.svc_version} taken ${m.created_at}: ${m.dialect} database (schema ${m.schema.latest_migration}) ` +
      `${storage.databaseUrl ? 'into DATABASE_URL' : `into ${storage.dataDir}`}, and ${files} file(s) into ${storage.dataDir}`);
    const needed = [...new Set(m.keys.sealed_under.map((s) => s.key_id))];
    const held = storage.secretKey ? [storage.secretKey, ...storage.previousSecretKeys].map(keyIdOf) : [];
    const missing = needed.filter((id) => !held.includes(id));
    console.log('');
    if (needed.length === 0) console.log('Keys: no value of the archive is sealed yet; any key will do.');
    else if (missing.length === 0) console.log(`Keys: the restored values are sealed under key id ${needed.join(', ')}, which the configured key opens.`);
    else {
      console.log(`KEYS: the restored values are sealed under key id ${needed.join(', ')}; ${held.length ? `the configured key (id ${held.join(', ')}) does not open ${missing.join(', ')}` : 'no key is configured'}.`);
      console.log(`Before \`svc serve\`, set SVC_SECRET_KEY to the key of id ${missing.join(' / ')} that you kept (or write it, 64 hex characters, to ${keyFilePath(storage.dataDir)}). ` +
        'The archive does not hold it; svc serve refuses to start without it.');
    }
    console.log('Next: start svc serve (it applies this build\'s newer migrations first).');
    return 0;
  } catch (err) {
    return backupRefusal(err);
  }
}
