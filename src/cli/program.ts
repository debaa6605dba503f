// The command-line client's entry: a commander program whose resource commands are built from the
// OpenAPI document (spec.ts has the rule; help.ts what their --help says), plus login, logout,
// whoami (auth status), workspaces use and completion. Commander (zero dependencies, the most used
// Node argument parser) gives subcommands, typed option parsing, choices and --help; picocolors
// (tiny, NO_COLOR-aware) the colours. What a command needs to talk to the server (openapi-fetch,
// execute, auth) is imported when it runs, so --help and completion load only commander,
// picocolors and the document.
import { Argument, Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { complete, completionScript, SHELLS } from './completion.js';
import { HELP_LAYOUT, operationDescription, operationFooter } from './help.js';
import { loadSettings } from './config.js';
import type { CommonFlags } from './execute.js';
import { CliError, EXIT } from './errors.js';
import { createOutput, type Output } from './output.js';
import { presenterFor } from './presenters.js';
import { MACHINE_JOIN_HELP, machineJoin, type MachineJoinFlags } from './machine.js';
import { CHAT_HELP, chat, type ChatFlags } from './chat.js';
import { commandTree, firstSentence, withoutApiProse, type CommandSpec, type Flag } from './spec.js';

const ENV_HELP = `
Environment:
  SVC_API_URL  the server (default: the one last logged in to, else
               http://127.0.0.1:8080)
  SVC_TOKEN    a token to use instead of the stored one
  SVC_CONTEXT  the workspace (ws_...) to act on instead of \`svc workspaces use\`
  NO_COLOR     no colours (colours are only used on a terminal anyway)

Exit codes: 0 ok, 1 API or runtime error (or a FAILED/CANCELLED operation),
2 usage, 3 not authenticated, 4 permission denied, 5 conflict, 6 retryable
(429, 5xx, network). Every API command prints the API's JSON with --json.

Run \`svc <command> --help\` or \`svc help <command>\` for its flags and examples.`;

/** A number flag's parser: the type and the schema's bounds are usage errors, before any request. */
function parseNumber({ type, minimum, maximum }: { type: Flag['type']; minimum?: number; maximum?: number }) {
  const what = type === 'integer' ? 'an integer' : 'a number';
  const range = minimum !== undefined && maximum !== undefined ? ` from ${minimum} to ${maximum}`
    : minimum !== undefined ? ` of at least ${minimum}` : maximum !== undefined ? ` of at most ${maximum}` : '';
  return (raw: string) => {
    const n = Number(raw);
    const valid = raw.trim() !== '' && Number.isFinite(n) && (type !== 'integer' || Number.isInteger(n));
    if (!valid || (minimum !== undefined && n < minimum) || (maximum !== undefined && n > maximum)) throw new InvalidArgumentError(`expected ${what}${range}.`);
    return n;
  };
}

const isNumeric = (type: Flag['type']) => type === 'integer' || type === 'number';

/** Flag descriptions of the client's own where the document's speak of the HTTP header. */
const HEADER_HELP: Record<string, string> = {
  'svc-context': 'the workspace to act on (ws_...); default: the one of `svc workspaces use` or SVC_CONTEXT',
  'if-match': 'the etag last read; omitted: the client reads the current etag first',
  'idempotency-key': 'retrying with the same key returns the first outcome instead of doing it again',
};

/** `twin`: the flag that can stand in for this one (--value-file for --value). */
function flagOptions(flag: Flag, twin?: Flag): Option[] {
  const desc = HEADER_HELP[flag.flag] ?? `${flag.description}${flag.required ? (twin ? ` (required, or --${twin.flag})` : ' (required)') : ''}`;
  if (flag.type === 'boolean') {
    return [new Option(`--${flag.flag}`, desc), new Option(`--no-${flag.flag}`, `sets ${flag.key.join('.')} to false`)];
  }
  // The value's kind, short so flag terms leave room for descriptions: --package-id <id>, --svc-context <ws>.
  const placeholder = flag.flag === 'if-match' ? 'etag'
    : flag.flag === 'svc-context' ? 'ws'
    : isNumeric(flag.type) ? 'n'
    : flag.type === 'array' ? 'value'
    : flag.type === 'map' ? 'key=value'
    : flag.type === 'file' ? 'file'
    : flag.key[flag.key.length - 1]!.split(/[_-]/).pop()!;
  const opt = new Option(`--${flag.flag} <${placeholder}>`, desc);
  if (flag.choices) opt.choices(flag.choices);
  if (isNumeric(flag.type)) opt.argParser(parseNumber(flag));
  if (flag.type === 'array' || flag.type === 'map') opt.argParser(collect);
  return [opt];
}

const collect = (v: string, prev: string[] | undefined) => [...(prev ?? []), v];

/** A presenter's own wording of a flag; its parser's CliError is a usage error of commander's. */
function overrideOption(o: NonNullable<ReturnType<typeof presenterFor>['flagOverrides']>[string]): Option {
  const opt = new Option(o.flags, o.description);
  const parse = o.parse;
  if (parse) {
    opt.argParser((raw: string) => {
      try {
        return parse(raw);
      } catch (err) {
        throw new InvalidArgumentError(err instanceof Error ? err.message.replace(/^--\S+: /, '') : String(err));
      }
    });
  }
  return opt;
}

/** `key=value` (a map entry) rather than a file name, for the --input that takes both. */
const isEntry = (v: string) => /^[A-Za-z_][A-Za-z0-9_.-]*=/.test(v);

function addOperationCommand(parent: Command, spec: CommandSpec, o: Output): void {
  const presenter = presenterFor(spec.resource, spec.action);
  // `svc snippets run --code-file F`: the path arguments are optional, another operation runs without them.
  const alternative = presenter.alternative ? commandTree().flatMap((r) => r.commands).find((c) => c.operationId === presenter.alternative!.operationId) : undefined;
  const cmd = parent.command(spec.action).summary(spec.summary || spec.operationId);
  const alsoRuns = alternative ? `Without ${spec.args.map((a) => `<${a.name}>`).join(' ')} and with ${presenter.alternative!.when.map((f) => `--${f}`).join(' or ')}: ${alternative.method} ${alternative.path} (${alternative.summary})` : '';
  cmd.description(operationDescription(spec));
  cmd.addHelpText('after', () => operationFooter(spec, helpWidth(), alsoRuns));
  for (const a of spec.args) {
    const arg = new Argument(alternative ? `[${a.name.replace(/_/g, '-')}]` : `<${a.name.replace(/_/g, '-')}>`, a.description);
    if (isNumeric(a.type)) arg.argParser(parseNumber(a));
    cmd.addArgument(arg);
  }
  const attrs = new Map<string, string>();
  const waitCmd = spec.operationId === 'waitOperation';
  const adHoc = presenter.alternative ? ` (without ${spec.args.map((a) => `<${a.name}>`).join(' ')})` : '';
  const flags = [
    ...spec.flags,
    ...(alternative?.flags.filter((f) => !spec.flags.some((g) => g.flag === f.flag)).map((f) => ({ ...f, required: false, description: `${f.description}${adHoc}` })) ?? []),
  ];
  // A map flag named `input` (snippet inputs) shares the one --input with the body file.
  const inputMap = flags.some((f) => f.flag === 'input' && f.type === 'map');
  for (const flag of flags) {
    if (waitCmd && flag.flag === 'timeout') continue;
    if (flag.flag === 'input' && flag.type === 'map') continue;
    const twin = flag.type === 'file' ? undefined : flags.find((f) => f.type === 'file' && f.key.join('.') === flag.key.join('.'));
    const override = presenter.flagOverrides?.[flag.flag];
    for (const opt of override ? [overrideOption(override)] : flagOptions(flag, twin)) {
      cmd.addOption(opt);
      attrs.set(flag.flag, opt.attributeName());
    }
  }
  if (spec.body) {
    const only = spec.body.inputOnly.length ? ` (${spec.body.inputOnly.map((f) => `--${f}`).join(', ')} only this way)` : '';
    const body = `the JSON request body from a file, or - for stdin; flags override its fields${only}`;
    if (inputMap) cmd.addOption(new Option('--input <key=value|file>', `an input of the run as key=value (repeat for several; typed as the snippet declares it), or ${body}`).argParser(collect));
    else cmd.option('--input <file>', body);
  }
  if (spec.returnsOperation && !waitCmd) cmd.option('--wait', 'follow the operation until it ends (progress on stderr); exit 1 if it FAILED or was CANCELLED');
  if (spec.isList) cmd.option('--all', 'follow every next_cursor (with --json: one JSON array of all items)');
  if (spec.destructive) cmd.option('-y, --yes', 'do not ask for confirmation (needed when not on a terminal)');
  const extraAttrs = (presenter.options ?? []).map((x) => {
    const opt = new Option(x.flags, x.description);
    if (x.choices) opt.choices(x.choices);
    cmd.addOption(opt);
    return opt.attributeName();
  });
  cmd.option('--json', "print the API's JSON response (exactly as received when piped; indented and coloured on a terminal)");
  cmd.option('--field <path>', 'print one field of the JSON response (dotted path: id, data.0.id, response.install_id); exit 1 if it has none');
  cmd.action(async (...params: unknown[]) => {
    const positional = (params.slice(0, spec.args.length) as (string | undefined)[]).filter((p): p is string => p !== undefined);
    const opts = params[spec.args.length] as Record<string, unknown> & CommonFlags;
    let chosen = spec;
    const adHocGiven = alternative ? presenter.alternative!.when.filter((f) => opts[attrs.get(f)!] !== undefined) : [];
    if (adHocGiven.length && positional.length === spec.args.length) {
      throw new CliError(`${adHocGiven.map((f) => `--${f}`).join(' and ')} runs code without ${spec.args.map((a) => `<${a.name}>`).join(' ')}: give one or the other`, EXIT.USAGE);
    }
    if (alternative && positional.length < spec.args.length) {
      if (!adHocGiven.length) {
        throw new CliError(`missing ${spec.args.map((a) => `<${a.name}>`).join(' ')} (or ${presenter.alternative!.when.map((f) => `--${f}`).join(' or ')})`, EXIT.USAGE);
      }
      chosen = alternative;
    }
    const values = new Map<Flag, unknown>();
    for (const flag of chosen.flags) if (attrs.has(flag.flag)) values.set(flag, opts[attrs.get(flag.flag)!]);
    if (inputMap) {
      const raw = (opts.input as string[] | undefined) ?? [];
      const files = raw.filter((v) => !isEntry(v));
      if (files.length > 1) throw new CliError(`--input: one body file at most, got ${files.join(', ')}`, EXIT.USAGE);
      const entries = raw.filter(isEntry);
      const map = chosen.flags.find((f) => f.flag === 'input' && f.type === 'map');
      if (map) values.set(map, entries.length ? entries : undefined);
      opts.input = files[0];
    }
    const extra = Object.fromEntries(extraAttrs.map((a) => [a, opts[a]]));
    const [{ executeCommand }, { createApi }] = await Promise.all([import('./execute.js'), import('./http.js')]);
    exitCode = await executeCommand(createApi(loadSettings()), o, { spec: chosen, positional, values, common: opts, extra });
  });
}

let exitCode: number = EXIT.OK;

/** The width help is laid out for, as commander's own: the terminal's, else 80. */
const helpWidth = () => (process.stdout.isTTY && process.stdout.columns) || 80;

// The server side's commands, for --help only: main.ts runs them before this program is loaded.
const SERVER_COMMANDS: [string, string][] = [
  ['serve', 'run the API and the job workers (--role all|api|worker)'],
  ['migrate', 'apply pending database migrations and exit'],
  ['admin create-user', 'create a user and print its id (--email, --password)'],
  ['admin rotate-keys', 'seal every secret again under SVC_SECRET_KEY'],
  ['admin backup', 'back up the database and data dir (--to FILE)'],
  ['admin restore', 'restore a backup into an empty one (--from FILE)'],
  ['admin users', 'list, disable, enable or delete accounts'],
  ['admin mail', 'read the mail outbox (list)'],
  ['admin workspaces', 'set a workspace\'s plan as the operator (set-plan)'],
];

/**
 * The program; `only` names the resource being run, so only its actions are built (start-up time:
 * `svc clusters list` need not build the options of fifty other commands). Without it, all are.
 */
export function buildProgram(o: Output, only?: string): Command {
  const program = new Command('svc')
    .description('Work with the svc platform API from the command line, and run its server.')
    .usage('<command> [options]')
    .addHelpText('after', ENV_HELP)
    .showSuggestionAfterError(true)
    .exitOverride();
  // Listed for --help; main.ts prints the version before this program is built.
  program.option('-v, --version', 'print the version');
  const configure = (c: Command) => c.exitOverride().showSuggestionAfterError(true).configureHelp({ sortSubcommands: false, ...HELP_LAYOUT });
  configure(program);

  program.commandsGroup('Account:');
  program.command('login')
    .summary('log in: approve this device in a browser, or --with-token')
    .description('log in: the device grant (URL and code on stderr, approve in a browser), or --with-token')
    .option('--with-token', 'read a token (session, sk_svc_ API token or JWT) from stdin')
    .option('--no-browser', 'do not open a browser')
    .action(async (opts: { withToken?: boolean; browser: boolean }) => {
      const auth = await import('./auth.js');
      exitCode = opts.withToken ? await auth.loginWithToken(o) : await auth.loginWithDevice(o, { browser: opts.browser });
    });
  program.command('logout')
    .summary('log out (a session is also revoked on the server)')
    .description('log out: a session is revoked on the server and forgotten; an API token is only forgotten')
    .action(async () => { exitCode = await (await import('./auth.js')).logout(o); });
  const status = (c: Command) => c
    .summary('who you are, on which server and workspace (exit 3 if logged out)')
    .description('who you are: the user, the server, the workspace and the kind of token (exit 3 when not logged in)')
    .option('--json', 'as JSON')
    .action(async (opts: { json?: boolean }) => { exitCode = await (await import('./auth.js')).authStatus(o, Boolean(opts.json)); });
  status(program.command('whoami'));
  const auth = configure(program.command('auth').description('the stored credential: `svc auth status` (the same as `svc whoami`)'));
  status(auth.command('status'));

  program.commandsGroup('Resources (svc <resource> <action>):');
  for (const resource of commandTree()) {
    // The list in `svc --help` shows what the resource is: its description up to the first colon or semicolon.
    const summary = firstSentence(resource.description).replace(/[:;]\s.*$/, '').replace(/\.$/, '');
    const group = configure(program.command(resource.name).summary(summary).description(withoutApiProse(resource.description)));
    group.addHelpText('after', `\nRun \`svc ${resource.name} <command> --help\` for a command's flags and examples.`);
    if (only !== undefined && only !== resource.name) continue;
    for (const spec of resource.commands) addOperationCommand(group, spec, o);
    if (resource.name === 'workspaces') {
      group.command('use')
        .description('make a workspace the default svc-context of commands (SVC_CONTEXT overrides it)')
        .argument('<id>', 'workspace id (ws_...)')
        .action(async (id: string) => { exitCode = await (await import('./auth.js')).useWorkspace(o, id); });
    }
  }

  program.commandsGroup('Agents:');
  program.command('chat')
    .summary('talk to an agent: its answer streamed, tool calls shown, approvals and questions answered here')
    .description('talk to an agent of the workspace: each message is a turn, streamed as it runs, until it ends')
    .argument('<agent>', 'the agent: its id (agt_...) or its name')
    // [message] rather than [message...], which would widen the column of `svc --help`; the words are joined all the same
    .argument('[message]', 'what to say (several words are joined); none: a conversation read line by line from stdin')
    .allowExcessArguments(true)
    .option('--session <id>', 'go on in this session (ags_...) instead of the newest one of yours; a turn of it waiting for you is shown and asked first')
    .option('--new', 'start a new session')
    .option('--approve', 'approve every change the agent proposes, without asking')
    .option('--reject', 'reject every change the agent proposes, without asking')
    .option('--svc-context <ws>', 'the workspace to act on (ws_...); default: the one of `svc workspaces use` or SVC_CONTEXT')
    .option('--json', 'print the events as JSON lines, as the API sends them (prompts still on stderr)')
    .addHelpText('after', CHAT_HELP)
    .action(async (agent: string, _message: string | undefined, opts: ChatFlags, cmd: Command) => { exitCode = await chat(o, agent, cmd.args.slice(1), opts); });

  program.commandsGroup('Machine agent:');
  const machine = configure(program.command('machine').summary('run the machine agent on a server: svc machine join')
    .description('the machine agent: run `svc machine join` on a server to make it a machine (a node) of a cluster'));
  machine.command('join')
    .summary('join this server to a cluster with a worker bootstrap\'s token, then heartbeat (runs in the foreground)')
    .description('join this server to a cluster: trade a worker bootstrap\'s one-time token for a machine credential, then heartbeat until stopped (a long-running foreground process)')
    .requiredOption('--server <url>', 'the svc service (e.g. https://svc.example.com)')
    .option('--token <token>', 'the worker bootstrap\'s one-time token (svcb_...); better: SVC_JOIN_TOKEN')
    .option('--state-dir <dir>', 'where the machine credential is kept (default $XDG_STATE_HOME/svc/machine)')
    .addHelpText('after', MACHINE_JOIN_HELP)
    .action(async (opts: MachineJoinFlags) => { exitCode = await machineJoin(o, opts); });

  program.commandsGroup('Server:');
  for (const [name, description] of SERVER_COMMANDS) program.addCommand(new Command(name).description(description));

  program.commandsGroup('Other:');
  program.command('completion')
    .summary('print a shell completion script (bash, zsh or fish)')
    .description('print a shell completion script: eval "$(svc completion bash)" (in ~/.bashrc)')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(SHELLS))
    .action((shell: string) => {
      const script = completionScript(shell);
      if (!script) throw new CliError(`no completion for "${shell}": bash, zsh or fish`, EXIT.USAGE);
      o.out.write(script);
    });
  program.helpCommand('help [command...]', 'the help of a command: svc help installs create');
  return program;
}

/** The resource a command line runs, whose actions are built: none for root help, all for `help`. */
function resourceOf(argv: string[]): string {
  return commandTree().some((r) => r.name === argv[0]) ? argv[0]! : '';
}

export async function runCli(argv: string[], o: Output = createOutput()): Promise<number> {
  exitCode = EXIT.OK;
  // `svc ... | head`: a closed pipe ends the output quietly, as in other CLIs.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(exitCode);
    throw err;
  });
  // Completion reads the words itself: commander would take a `--` being completed as the end of options.
  if (argv[0] === '__complete') {
    const words = argv.slice(1);
    o.out.write(complete(buildProgram(o, resourceOf(words[0] === 'help' ? words.slice(1) : words)), words).map((c) => `${c}\n`).join(''));
    return EXIT.OK;
  }
  // `svc help installs list` is `svc installs list --help` (commander's help command takes one name);
  // a word that names no command is left to commander, which says so (with a suggestion).
  const help = argv[0] === 'help';
  if (help) argv = argv.slice(1);
  const program = buildProgram(o, resourceOf(argv));
  if (help) {
    let cmd = program;
    const known = argv.every((word) => {
      if (!cmd.commands.length) return true;
      const sub = cmd.commands.find((c) => c.name() === word);
      if (sub) cmd = sub;
      return Boolean(sub);
    });
    if (known) argv = [...argv, '--help'];
  }
  if (argv.length === 0) {
    o.err.write(program.helpInformation());
    return EXIT.USAGE;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help asked for exits 0; help shown for a missing subcommand, and every parse error, is a usage error.
      return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    if (err instanceof CliError) {
      o.err.write(`${o.errColor.red('error:')} ${err.message}\n${err.details.map((d) => `${d}\n`).join('')}`);
      return err.exitCode;
    }
    throw err;
  }
}
