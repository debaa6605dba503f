// What `--help` says about a command made from an operation: the summary, at most the first sentence
// of the operation's description, the flags (first sentences, spec.ts), examples, and the route. The
// rest of the API prose (status codes, reason codes, transactions) is the API reference's
// (GET /v1/openapi.json), not the terminal's.
//
// Examples come from the document: the request body example of the operation (one command per
// example) turned into flags, else the required fields with placeholders; ids are shown as their
// prefix (`pkg_…`). EXAMPLES below replaces them where a hand-written one teaches better.
import { Help } from 'commander';
import { firstSentence, isApiProse, singular, withoutApiProse, type CommandSpec, type Flag } from './spec.js';

/** Hand-written examples, by `<resource> <action>`; they replace the generated ones. */
const EXAMPLES: Record<string, string[]> = {
  'packages create-version': ['svc packages create-version pkg_… --input version.json   # version.json: {"semver": "1.0.0", "input_schema": {…}, "manifest": {…}}'],
  'secrets create': ["printf '%s' \"$DB_PASSWORD\" | svc secrets create --name db-password --value-file - --label team=data"],
  'secret-versions create': ["printf '%s' \"$NEW_PASSWORD\" | svc secret-versions create sec_… --value-file - --comment rotated"],
  'secrets access': ['svc secrets access sec_… latest', 'DB_PASSWORD=$(svc secrets access sec_… stable)'],
  'secret-versions access': ['svc secret-versions access sec_… 3 --json'],
  'snippets run': ['svc snippets run snp_… --input limit=10', 'svc snippets run --code-file report.js --input days=7'],
  'snippets execute-code': ['svc snippets execute-code --code-file report.js --input a=1 --input b=2'],
  'snippets create': ["svc snippets create --name 'Installs and their URLs' --code-file installs.js --display-type table"],
  // short texts typed inline; `svc chat` is the conversational way to the same calls
  'agents create': ["svc agents create --name ops --instructions 'You help the team run their workspace.' --capabilities CHAT"],
  'agent-turns create': ["svc agent-turns create --session-id ags_… --message 'How many installs are there?'"],
  'agent-turns respond': ['svc agent-turns respond agtt_… --content staging'],
  'installs logs': ['svc installs logs inst_… --tail 50', 'svc installs logs inst_… -f --container web --since 10m'],
};

/** Where the whole description of an operation is. */
const REFERENCE = 'reference: GET /v1/openapi.json';

/** The command's description: the summary, then the description's first sentence unless it is API prose. */
export function operationDescription(spec: CommandSpec): string {
  const sentence = withoutApiProse(firstSentence(spec.description.replace(/\s+/g, ' ').trim()));
  const lead = isApiProse(sentence) ? '' : sentence;
  return [spec.summary || spec.operationId, lead].filter(Boolean).join('\n\n');
}

/** `inst_…` from a description naming the id's prefix ("install id (inst_...)", "pkg_ id of"). */
function idPlaceholder(description: string): string | null {
  const m = /\b([a-z]{2,5}_)(?:\.\.\.|…|\s+id\b|\))/.exec(description);
  return m ? `${m[1]}…` : null;
}

const ID_VALUE = /^([a-z]{2,5}_)[0-9a-z]{26}$/;

function quote(value: string): string {
  return /^[A-Za-z0-9_@%+=:,./…-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

function shown(value: unknown): string {
  if (typeof value === 'string') return quote(ID_VALUE.test(value) ? value.replace(ID_VALUE, '$1…') : value);
  return quote(JSON.stringify(value));
}

/** A file name for a long text flag's twin: `--code-file code.js`. */
const FILE_NAMES: Record<string, string> = { code: 'code.js', kubeconfig: 'kubeconfig.yaml' };

function at(example: unknown, key: string[]): unknown {
  let v = example;
  for (const k of key) v = v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

/** The words of one flag given `value`, as a user would type them. */
function flagWords(spec: CommandSpec, flag: Flag, value: unknown): string[] {
  const twin = spec.flags.find((f) => f.type === 'file' && f.flag !== flag.flag && f.key.join('.') === flag.key.join('.'));
  if (twin) return [`--${twin.flag}`, FILE_NAMES[flag.key.join('.')] ?? `${flag.key[flag.key.length - 1]}.txt`];
  if (flag.type === 'boolean') return [value === false ? `--no-${flag.flag}` : `--${flag.flag}`];
  if (flag.type === 'array' && Array.isArray(value)) return value.flatMap((v) => [`--${flag.flag}`, shown(v)]);
  if (flag.type === 'map' && value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => [`--${flag.flag}`, `${k}=${typeof v === 'string' ? quote(v) : shown(v)}`]);
  }
  return [`--${flag.flag}`, shown(value)];
}

/** A value for a required field the document gives no example of. */
function placeholder(flag: Flag): string {
  if (flag.choices) return flag.choices[0]!;
  if (flag.flag === 'idempotency-key') return '"$(uuidgen)"';
  if (flag.type === 'integer' || flag.type === 'number') return String(flag.minimum ?? 1);
  return idPlaceholder(flag.description) ?? flag.key[flag.key.length - 1]!.toUpperCase();
}

/** The file of an example's `--input`: `snippet.json`. */
const bodyFile = (spec: CommandSpec) => `${singular(spec.resource)}.json`;

/** One command line per request body example of the operation, or one from its required fields. */
function generatedExamples(spec: CommandSpec): string[] {
  const head = ['svc', spec.resource, spec.action, ...spec.args.map((a) => idPlaceholder(a.description) ?? a.name.toUpperCase())];
  const tail = spec.returnsOperation && spec.operationId !== 'waitOperation' ? ['--wait'] : [];
  const fileFlags = new Set(spec.flags.filter((f) => f.type === 'file').map((f) => f.flag));
  const required = spec.flags.filter((f) => f.required && f.in !== 'body');
  const requiredWords = required.flatMap((f) => [`--${f.flag}`, placeholder(f)]);
  const lines = spec.bodyExamples.map((example) => {
    const words = spec.flags.filter((f) => f.in === 'body' && !fileFlags.has(f.flag) && at(example, f.key) !== undefined).flatMap((f) => flagWords(spec, f, at(example, f.key)));
    const inputOnly = (spec.body?.inputOnly ?? []).some((f) => at(example, [f.replace(/-/g, '_')]) !== undefined);
    return [...head, ...requiredWords, ...words, ...(inputOnly ? ['--input', bodyFile(spec)] : []), ...tail].join(' ');
  });
  if (lines.length) return lines;
  const body = spec.flags.filter((f) => f.in === 'body' && f.required && !fileFlags.has(f.flag));
  // A change with nothing required shows its first field, so the example changes something.
  const some = !body.length && spec.method === 'PATCH' ? spec.flags.filter((f) => f.in === 'body' && !fileFlags.has(f.flag)).slice(0, 1) : body;
  const inputOnly = spec.body?.requiredFields.some((f) => spec.body!.inputOnly.includes(f.replace(/_/g, '-'))) ? ['--input', bodyFile(spec)] : [];
  return [[...head, ...requiredWords, ...some.flatMap((f) => flagWords(spec, f, placeholder(f))), ...inputOnly, ...tail].join(' ')];
}

/** Examples for a command that creates or changes something; none for reads. */
export function examplesFor(spec: CommandSpec): string[] {
  if (spec.method === 'GET') return [];
  return EXAMPLES[`${spec.resource} ${spec.action}`] ?? generatedExamples(spec);
}

/** The shell words of a command line (quotes kept), a flag and its value as one unit so a break never parts them. */
function units(cmd: string): string[] {
  const words = cmd.match(/(?:[^\s'"]+|'[^']*'|"[^"]*")+/g) ?? [];
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const takesValue = words[i]!.startsWith('--') && words[i + 1] !== undefined && !/^-[-A-Za-z]/.test(words[i + 1]!) && words[i + 1] !== '|';
    out.push(takesValue ? `${words[i]} ${words[++i]}` : words[i]!);
  }
  return out;
}

/** A long command line broken between words with ` \` continuations, so it pastes as one command. */
export function wrapCommand(line: string, width: number, indent = '  '): string {
  const comment = line.indexOf('   # ');
  const [cmd, note] = comment >= 0 ? [line.slice(0, comment), line.slice(comment + 3)] : [line, ''];
  const out: string[] = [];
  let current = `${indent}$`;
  for (const unit of units(cmd)) {
    if (!current.endsWith('$') && current.length + 1 + unit.length + 2 > width) {
      out.push(`${current} \\`);
      current = `${indent}    ${unit}`;
    } else current += ` ${unit}`;
  }
  out.push(current);
  if (note) out.unshift(`${indent}${note}`);
  return out.join('\n');
}

/** What follows the flags in a command's help: examples and the route. */
export function operationFooter(spec: CommandSpec, width: number, alsoRuns: string): string {
  const examples = examplesFor(spec);
  const parts = [''];
  if (examples.length) parts.push('Examples:', ...examples.map((e) => wrapCommand(e, width)), '');
  parts.push(`API: ${spec.method} ${spec.path} (${REFERENCE})`);
  if (alsoRuns) parts.push(alsoRuns);
  return new Help().boxWrap(parts.join('\n'), width);
}

/** Flag terms wider than this put their description on the next line, so descriptions keep room at 80 columns. */
const TERM_WIDTH = 30;

/**
 * The help layout of every command: terms padded to at most TERM_WIDTH; a longer term stands on its
 * own line with its description below, indented as the others (as argparse does).
 */
export const HELP_LAYOUT: Partial<Help> = {
  // `get <id>`, not `get [options] <id>`: every command has options.
  subcommandTerm(cmd) {
    return [cmd.name(), ...cmd.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}${a.variadic ? '...' : ''}]`))].join(' ');
  },
  padWidth(cmd, helper) {
    const widest = Math.max(
      helper.longestOptionTermLength(cmd, helper),
      helper.longestSubcommandTermLength(cmd, helper),
      helper.longestArgumentTermLength(cmd, helper),
    );
    return Math.min(widest, TERM_WIDTH);
  },
  formatItem(term, termWidth, description, helper) {
    const base = Help.prototype.formatItem.bind(helper);
    if (helper.displayWidth(term) <= termWidth || !description) return base(term, termWidth, description, helper);
    return `  ${term}\n${base('', termWidth, description, helper)}`;
  },
};
