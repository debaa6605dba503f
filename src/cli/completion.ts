// Shell completion: `svc completion bash|zsh|fish` prints a script that asks the executable itself
// (`svc __complete <words...>`) for candidates, so completion follows the command tree of the
// installed version without regenerating the script (the approach of cobra-based CLIs).
import { presenterFor } from './presenters.js';
import { commandTree } from './spec.js';

export const TOP_COMMANDS = ['login', 'logout', 'auth', 'completion', 'serve', 'migrate', 'admin', 'help'];
const SHELLS = ['bash', 'zsh', 'fish'] as const;

/** Candidates for the last word of `words` (the words after `svc`, the last one being completed). */
export function complete(words: string[]): string[] {
  const current = words[words.length - 1] ?? '';
  const done = words.slice(0, -1);
  const tree = commandTree();
  let candidates: string[] = [];
  if (done.length === 0) candidates = [...tree.map((r) => r.name), ...TOP_COMMANDS];
  else if (done[0] === 'completion' && done.length === 1) candidates = [...SHELLS];
  else if (done[0] === 'auth' && done.length === 1) candidates = ['status'];
  else {
    const resource = tree.find((r) => r.name === done[0]);
    if (resource && done.length === 1) {
      candidates = resource.commands.map((c) => c.action);
      if (resource.name === 'workspaces') candidates.push('use');
    } else if (resource) {
      const cmd = resource.commands.find((c) => c.action === done[1]);
      const prev = done[done.length - 1] ?? '';
      const flag = cmd?.flags.find((f) => `--${f.flag}` === prev);
      if (flag?.choices) candidates = flag.choices;
      else if (cmd && current.startsWith('-')) {
        candidates = [...cmd.flags.map((f) => `--${f.flag}`), '--json', '--help'];
        if (cmd.body) candidates.push('--input');
        if (cmd.returnsOperation) candidates.push('--wait');
        if (cmd.isList) candidates.push('--all');
        if (cmd.destructive) candidates.push('--yes');
        // the client's own options and those of an alternative operation (`snippets run --code-file`)
        const presenter = presenterFor(resource.name, cmd.action);
        candidates.push(...(presenter.options ?? []).map((x) => x.flags.split(/[ ,]/)[0]!));
        const alternative = presenter.alternative && tree.flatMap((r) => r.commands).find((c) => c.operationId === presenter.alternative!.operationId);
        if (alternative) candidates.push(...alternative.flags.map((f) => `--${f.flag}`).filter((f) => !candidates.includes(f)));
      }
    }
  }
  return [...new Set(candidates)].filter((c) => c.startsWith(current));
}

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
  candidates=("\${(@f)$(svc __complete "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  compadd -a candidates
}
compdef _svc svc
`;
    case 'fish':
      return `# svc fish completion: svc completion fish > ~/.config/fish/completions/svc.fish
complete -c svc -f -a '(svc __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`;
    default:
      return null;
  }
}
