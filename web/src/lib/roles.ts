// A workspace's roles as the API names them (API.md section 4), in ascending order, and what the
// pages show for them. Pages use these to show an action a role may not take as absent with a
// reason; the API still decides every write.

export type Role = 'owner' | 'admin' | 'member';

const ORDER: Role[] = ['member', 'admin', 'owner'];

export const ROLE_WORDS: Record<Role, string> = { owner: 'Owner', admin: 'Admin', member: 'Member' };

/** Whether `role` (the caller's, possibly unknown) is at least `needed`. */
export function roleAtLeast(role: string | undefined, needed: Role): boolean {
  const have = ORDER.indexOf(role as Role);
  return have >= 0 && have >= ORDER.indexOf(needed);
}

/** The choices among `offered` a caller of `role` may grant: never above their own. */
export function grantable<R extends Role>(role: string | undefined, offered: readonly R[]): [R, string][] {
  return offered.filter((r) => roleAtLeast(role, r)).map((r) => [r, ROLE_WORDS[r]]);
}
