// Shell completion: `svc completion bash|zsh|fish` prints a script that asks the executable itself
// (`svc __complete <words...>`) for candidates, so completion follows the command tree of the
// installed version without regenerating the script (the approach of cobra-based CLIs). The
// candidates are read from the commander program that parses the same words, so every flag the
// parser accepts (the API's, --wait, --json, a presenter's own) is offered, and nothing else.
import type { Command } from 'commander';

export const SHELLS = ['bash', 'zsh', 'fish'];

/**
 * Candidates for the last word of `words` (the words after `svc`, the last one being completed).
 * After a command with subcommands: their names (`--` offers --help, the only flag a group takes);
 * after an action: its flags when the word starts with `-`, and a flag's choices after the flag.
 * `help` completes the command names that follow it.
 */
export function complete(program: Command, words: string[]): string[] {
  const current = words[words.length - 1] ?? '';
  let done = words.slice(0, -1);
  const help = done[0] === 'help';
  if (help) done = done.slice(1);
  let cmd = program;
  // Names holding a space (`admin create-user`, the server's commands listed in --help) are two words.
  let prefix = '';
  for (const word of done) {
    if (word.startsWith('-')) break;
    const sub = cmd.commands.find((c) => c.name() === `${prefix}${word}`);
    if (sub) {
      cmd = sub;
      prefix = '';
    } else if (cmd.commands.some((c) => c.name().startsWith(`${prefix}${word} `))) prefix = `${prefix}${word} `;
    else if (cmd.commands.length) return [];
    else break;
  }
  const names = [...new Set(cmd.commands.filter((c) => c.name().startsWith(prefix)).map((c) => c.name().slice(prefix.length).split(' ')[0]!))];
  let candidates: string[];
  const prev = done[done.length - 1] ?? '';
  const option = prev.startsWith('--') ? cmd.options.find((o) => o.long === prev) : undefined;
  if (option && (option.required || option.optional)) candidates = option.argChoices ?? [];
  else if (current.startsWith('-')) candidates = help ? [] : [...cmd.options.filter((o) => !o.hidden && o.long).map((o) => o.long!), '--help'];
  else if (names.length || prefix) candidates = [...names, ...(cmd === program && !prefix && !help ? ['help'] : [])];
  else candidates = help ? [] : cmd.registeredArguments.flatMap((a) => a.argChoices ?? []);
  return [...new Set(candidates)].filter((c) => c.startsWith(current));
}

// Each script hands the words before the cursor and the word being completed to `svc __complete`;
// where it offers nothing (a flag's value that is a file, say) the shell completes file names.
export function completionScript(shell: string): string | null {
  switch (shell) {
    case 'bash':
      return `# svc bash completion: eval "$(svc completion bash)" (e.g. in ~/.bashrc)
_svc_complete() {
  local IFS=$'\\n'
  COMPREPLY=($(svc __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _svc_complete svc
`;
    case 'zsh':
      return `#compdef svc
# svc zsh completion: eval "$(svc completion zsh)" (e.g. in ~/.zshrc, after compinit)
_svc() {
  local -a candidates
  candidates=(\${(f)"$(svc __complete "\${(@)words[2,CURRENT]}" 2>/dev/null)"})
  if (( \${#candidates} )); then compadd -a candidates; else _files; fi
}
compdef _svc svc
`;
    case 'fish':
      return `# svc fish completion: svc completion fish > ~/.config/fish/completions/svc.fish
function __svc_complete
    set -l candidates (svc __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)
    if test (count $candidates) -gt 0
        printf '%s\\n' $candidates
    else
        __fish_complete_path (commandline -ct)
    end
end
complete -c svc -f -a '(__svc_complete)'
`;
    default:
      return null;
  }
}
