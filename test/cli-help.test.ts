// The client as a gh user expects it (issue 21): --version, `svc help <command...>`, whoami, help that
// reads as help (a summary, the flags, examples for every write, no API prose, 80 columns), number
// flags checked against the schema's bounds before any request, shell completion run through bash
// itself (and zsh and fish when installed), the committed bin/svc symlink, and what `npm pack` ships.
// `svc whoami`, which needs a server, is in cli-whoami.test.ts: this file uses no database and runs once.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { Command } from 'commander';
import { buildProgram } from '../src/cli/program.js';
import { createOutput } from '../src/cli/output.js';
import { ROOT, runSvc, SVC_SHELL_COMMAND } from './processes.js';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const BUILT = existsSync(join(ROOT, 'dist/main.js'));
const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/** Every command of the program with its help text, as `svc ... --help` prints it (piped: 80 columns). */
function allHelp(): { path: string; cmd: Command; text: string }[] {
  const out: { path: string; cmd: Command; text: string }[] = [];
  const walk = (cmd: Command, path: string) => {
    let text = '';
    cmd.configureOutput({ writeOut: (s) => { text += s; } });
    cmd.outputHelp();
    out.push({ path, cmd, text });
    for (const sub of cmd.commands) walk(sub, `${path} ${sub.name()}`);
  };
  walk(buildProgram(createOutput()), 'svc');
  return out;
}

/** The words of an example's `svc` command line (after a pipe, inside `$(...)`, before a comment). */
function exampleWords(example: string): string[] {
  const line = example.replace(/^\s*\$ /, '').replace(/\\\n\s*/g, '').replace(/\s+#.*$/, '');
  const svc = line.slice(line.indexOf('svc ')).replace(/\).*$/, '');
  return [...svc.matchAll(/'[^']*'|"[^"]*"|\S+/g)].map((m) => m[0]);
}

describe('svc --version, svc help and --help', () => {
  const cli = (args: string[], env: Record<string, string> = {}) => runSvc(args, { SVC_API_URL: 'http://127.0.0.1:9', ...env });

  test('--version and -v print the version of package.json; svc help <resource> [<action>] is that command\'s --help', async () => {
    const [long, short, viaHelp, direct, group, groupDirect, unknown, unknownAction, admin] = await Promise.all([
      cli(['--version']), cli(['-v']),
      cli(['help', 'installs', 'list']), cli(['installs', 'list', '--help']),
      cli(['help', 'installs']), cli(['installs', '--help']),
      cli(['help', 'nosuch']), cli(['help', 'installs', 'nosuch']),
      cli(['help', 'admin']),
    ]);
    for (const r of [long, short]) {
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `svc ${VERSION}\n`);
    }
    assert.equal(viaHelp.code, 0, viaHelp.stderr);
    assert.match(viaHelp.stdout, /^Usage: svc installs list \[options\]$/m);
    assert.equal(viaHelp.stdout, direct.stdout);
    assert.equal(group.code, 0);
    assert.equal(group.stdout, groupDirect.stdout);
    assert.match(group.stdout, /\n {2}list-renders <id> +List an install's renders\n/);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command 'nosuch'/);
    assert.equal(unknownAction.code, 2);
    assert.match(unknownAction.stderr, /unknown command 'nosuch'/);
    assert.equal(admin.code, 0, admin.stderr);
    assert.match(admin.stdout, /^Usage: svc admin <command>/);
    assert.match(admin.stdout, /\n {2}create-user --email/);
    assert.match(admin.stdout, /\n {2}rotate-keys/);
  });

  test('svc --help lists whoami, --version and every server command, admin ones included, on one line each', async () => {
    const root = await cli(['--help']);
    assert.equal(root.code, 0, root.stderr);
    for (const line of [
      /^ {2}-v, --version +print the version$/m,
      /^ {2}whoami +who you are/m,
      /^ {2}admin create-user +create a user and print its id.*$\n {2}admin rotate-keys +\S.*$\n {2}admin backup +\S.*$\n {2}admin restore +\S.*$\n {2}admin users +\S.*$\n {2}admin mail +\S.*$\n {2}admin workspaces +\S.*$\n\nOther:/m,
      /^ {2}serve +run the API/m,
      /^ {2}help \[command\.\.\.\] +the help of a command/m,
    ]) assert.match(root.stdout, line);
    // One line per resource where its summary fits: the list reads like gh's.
    assert.match(root.stdout, /^ {2}secrets +Secrets of a workspace$/m);
  });

  test('every command\'s help fits 80 columns, holds no status or reason codes, and names its route', () => {
    const helps = allHelp();
    assert.ok(helps.length > 100, `${helps.length} commands`);
    for (const { path, text } of helps) {
      for (const line of text.split('\n')) assert.ok(line.length <= 80, `${path}: ${line.length} columns: ${line}`);
      // API prose (which status a refusal is, reason codes) belongs to the API reference.
      assert.doesNotMatch(text, /\b(?:is|are|else)\s+[2-5]\d\d\b|\([2-5]\d\d\)|\b[45]\d\d [A-Z]+_[A-Z_]+/, path);
    }
    const create = helps.find((h) => h.path === 'svc installs create')!.text;
    // A one-line summary, at most one sentence more, then the flags.
    assert.match(create, /^Usage: svc installs create \[options\]\n\nInstall a package on a cluster\n\n[^\n]+\.\n\nOptions:\n/);
    assert.match(create, /\nAPI: POST \/v1\/installs \(reference: GET \/v1\/openapi\.json\)\n/);
    // A flag term too wide for the column puts its description on the next line.
    assert.match(create, /\n {2}--package-version-pin\.kind <kind>\n {20,}\S/);
    // Flag descriptions are first sentences: the rules of a field stay in the reference.
    assert.match(create, /\n {2}--package-version-pin\.version <version>\n +the semver to install; required with kind\n +pinned, refused with latest\n {2}--/);
    assert.match(create, /\n {2}--idempotency-key <key> +retrying with the same key returns the first\n +outcome instead of doing it again\n {2}--/);
  });

  test('every command that creates or changes something has an example, made of the command\'s own flags', () => {
    const byPath = new Map(allHelp().map((h) => [h.path, h]));
    let checked = 0;
    for (const { path, cmd, text } of byPath.values()) {
      const route = /\nAPI: (GET|POST|PATCH|PUT|DELETE) /.exec(text)?.[1];
      if (!route) continue;
      const examples = /\nExamples:\n([\s\S]*?)\n\n/.exec(text)?.[1];
      if (route === 'GET') {
        assert.equal(examples, undefined, `${path}: a read needs no example`);
        continue;
      }
      assert.ok(examples, `${path} has no example`);
      for (const example of examples.split(/\n(?= {2}\$ | {2}\S)/).filter((e) => e.includes('$ '))) {
        const words = exampleWords(example);
        assert.equal(words.slice(0, 3).join(' '), path, example);
        const flags = new Set([...cmd.options.map((o) => o.long), '--help']);
        for (const w of words.filter((x) => x.startsWith('--'))) assert.ok(flags.has(w), `${path}: ${w} in ${example}`);
        checked++;
      }
    }
    assert.ok(checked >= 45, `${checked} examples`);
    const install = byPath.get('svc installs create')!.text;
    assert.match(install, /\$ svc installs create --package-id pkg_… --package-version-pin\.kind latest \\\n {6}--cluster-id clu_… .*--wait\n/);
    // Long text fields are taught through their file flag, never on the command line.
    assert.match(byPath.get('svc clusters create')!.text, /--kubeconfig-file kubeconfig\.yaml/);
    assert.match(byPath.get('svc secrets create')!.text.replace(/ \\\n +/g, ' '), /\| svc secrets create --name db-password --value-file - /);
  });

  test('--limit 500 is a usage error naming --limit before any request; every number flag is held to its schema bounds', async () => {
    // The server address is a closed port: a request would exit 6, a usage error exits 2 first.
    const [over, zero, fraction, inRange, notifications, timeout] = await Promise.all([
      cli(['installs', 'list', '--limit', '500']),
      cli(['clusters', 'list', '--limit', '0']),
      cli(['installs', 'list', '--limit', '1.5']),
      cli(['installs', 'list', '--limit', '100'], { SVC_TOKEN: 'A'.repeat(32), SVC_CONTEXT: 'ws_x' }),
      cli(['notifications', 'list', '--limit', '51']),
      cli(['snippets', 'run', 'snp_x', '--overrides.timeout-ms', '60001']),
    ]);
    assert.equal(over.code, 2);
    assert.equal(over.stderr, "error: option '--limit <n>' argument '500' is invalid. expected an integer from 1 to 100.\n");
    assert.equal(zero.code, 2);
    assert.match(zero.stderr, /--limit <n>' argument '0' is invalid/);
    assert.equal(fraction.code, 2);
    assert.equal(inRange.code, 6, 'an in-range limit reaches the network');
    assert.equal(notifications.code, 2);
    assert.match(notifications.stderr, /from 1 to 50/);
    assert.equal(timeout.code, 2);
    assert.match(timeout.stderr, /--overrides\.timeout-ms <n>' argument '60001' is invalid\. expected an integer from 1 to 60000/);
  });
});

describe('shell completion, run by the shells themselves', () => {
  let bin: string;
  before(() => {
    // `svc` on PATH runs it as the other process tests do (SVC_COMMAND): the completion scripts call it by name.
    bin = mkdtempSync(join(tmpdir(), 'svc-completion-'));
    writeFileSync(join(bin, 'svc'), `#!/bin/sh\ncd '${ROOT}' && exec ${SVC_SHELL_COMMAND} "$@"\n`);
    chmodSync(join(bin, 'svc'), 0o755);
  });
  after(() => rmSync(bin, { recursive: true, force: true }));
  const shell = (cmd: string, args: string[]) => promisify(execFile)(cmd, args, { cwd: ROOT, env: { PATH: `${bin}:${process.env.PATH}`, HOME: bin } });

  test('bash: `svc installs --` offers --help, `svc installs create --` its flags, a flag its choices', async () => {
    const cases: [string, string][] = [
      ["svc ''", 'root'], ['svc installs --', 'group'], ['svc installs create --', 'action'],
      ["svc installs create --package-version-pin.kind ''", 'choices'], ["svc help installs l", 'help'],
      ["svc admin ''", 'admin'], ["svc completion ''", 'shells'], ['svc --', 'root flags'],
    ];
    const script = [
      'eval "$(svc completion bash)"',
      ...cases.map(([line, name]) => `COMP_WORDS=(${line}); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); _svc_complete; echo "${name}=\${COMPREPLY[*]}"`),
    ].join('\n');
    const { stdout } = await shell('bash', ['-c', script]);
    const got = new Map(stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).split(' ')]));
    for (const c of ['installs', 'whoami', 'admin', 'help', 'completion']) assert.ok(got.get('root')!.includes(c), c);
    assert.deepEqual(got.get('group'), ['--help']);
    const action = got.get('action')!;
    for (const f of ['--package-id', '--cluster-id', '--package-version-pin.kind', '--initial-value', '--input', '--wait', '--json', '--help']) assert.ok(action.includes(f), f);
    assert.ok(!action.includes('--all') && !action.includes('--yes'), 'only the flags `installs create` accepts');
    assert.deepEqual(got.get('choices'), ['latest', 'pinned']);
    assert.deepEqual(got.get('help'), ['list', 'list-renders', 'logs']);
    assert.deepEqual(got.get('admin'), ['create-user', 'rotate-keys', 'backup', 'restore', 'users', 'mail', 'workspaces']);
    assert.deepEqual(got.get('shells'), ['bash', 'zsh', 'fish']);
    assert.deepEqual(got.get('root flags'), ['--version', '--help']);
  });

  test('zsh: the script parses and hands the words to svc __complete', { skip: !has('zsh') && 'zsh is not installed' }, async () => {
    // compadd and compdef exist only inside zsh's completion system; stand-ins print what they get.
    const { stdout } = await shell('zsh', ['-c', [
      'compdef() {}; compadd() { print -l -- ${(P)2} }; _files() { print FILES }',
      'eval "$(svc completion zsh)"',
      'words=(svc installs create --package-version-pin.kind ""); CURRENT=5; _svc',
      'words=(svc installs create --input ""); CURRENT=5; _svc',
    ].join('\n')]);
    assert.equal(stdout, 'latest\npinned\nFILES\n');
  });

  test('fish: the script parses and completes through complete -C', { skip: !has('fish') && 'fish is not installed' }, async () => {
    const { stdout } = await shell('fish', ['-c', 'svc completion fish | source; complete -C "svc installs create --package-version-pin.kind "; complete -C "svc installs --"']);
    assert.equal(stdout, 'latest\npinned\n--help\n');
  });
});

describe('bin/svc and the package', () => {
  test('bin/svc is a symlink to svc.js that runs from any directory through a symlinked PATH entry', { skip: !BUILT && 'dist/ is not built (npm run build)' }, async () => {
    assert.ok(lstatSync(join(ROOT, 'bin/svc')).isSymbolicLink());
    assert.equal(readlinkSync(join(ROOT, 'bin/svc')), 'svc.js');
    assert.ok(lstatSync(join(ROOT, 'bin/svc.js')).mode & 0o100, 'bin/svc.js is executable');
    // ~/bin/svc -> <checkout>/bin/svc -> svc.js, run from elsewhere: node follows both links to the ESM file.
    const elsewhere = mkdtempSync(join(tmpdir(), 'svc-path-'));
    try {
      symlinkSync(join(ROOT, 'bin/svc'), join(elsewhere, 'svc'));
      const run = promisify(execFile);
      const env = { PATH: `${elsewhere}:${process.env.PATH}`, HOME: elsewhere };
      assert.equal((await run('svc', ['--version'], { cwd: elsewhere, env })).stdout, `svc ${VERSION}\n`);
      assert.equal((await run('sh', ['-c', 'PATH="$PWD:$PATH"; svc __complete installs cr'], { cwd: elsewhere, env })).stdout, 'create\n');
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  test('npm pack ships the build, bin/svc.js and the command tree, and no sources, tests or benches', { skip: !BUILT && 'dist/ is not built (npm run build)' }, async () => {
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT });
    const files = (JSON.parse(stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    for (const f of ['bin/svc.js', 'dist/main.js', 'dist/cli/program.js', 'dist/server-commands.js', 'src/cli/generated/commands.json', 'package.json', 'README.md']) assert.ok(files.includes(f), f);
    const stray = files.filter((f) => /^(test|bench|scripts|\.ci)\/|\.ts$|\.map$/.test(f) && !f.endsWith('.d.ts'));
    assert.deepEqual(stray, []);
  });
});
