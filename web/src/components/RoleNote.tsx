// An action the caller's role may not take, shown as absent with the reason: the children render
// for a role at least `need`, otherwise a note says who may. Hiding is never the safety: the API
// refuses the write whatever the page shows.
import type { ComponentChildren } from 'preact';
import { useSession } from '../lib/session.tsx';
import { roleAtLeast, ROLE_WORDS, type Role } from '../lib/roles.ts';

export function NeedsRole(props: { need: Role; what: string; children: ComponentChildren }) {
  const role = useSession().workspace?.role;
  if (roleAtLeast(role, props.need)) return <>{props.children}</>;
  const who = props.need === 'owner' ? 'owners' : 'owners and admins';
  return (
    <p class="muted role-note">
      Only {who} can {props.what}; your role in this workspace is {role ? ROLE_WORDS[role].toLowerCase() : 'unknown'}.
    </p>
  );
}
