// Issue 34: notifications name things as people know them. A title or body that shows an id where
// a name belongs (an install, workspace, operation, cluster, secret, machine, token, order...) fails
// these checks; the ids stay in resource_id and context.
import assert from 'node:assert/strict';

/** An id of ours in running text (the kinds a notification is about, and the ones they refer to). */
export const ID_IN_TEXT = /\b(inst|ws|op|clu|sec|mch|tok|ord|odft|scr|pkg|pkv|usr|agtt|ags)_[0-9a-z]{26}\b/;

/** `n`'s title and body hold no id, and its title names each of `names`. */
export function assertNamed(n: { title: string; body: string }, ...names: string[]): void {
  assert.doesNotMatch(n.title, ID_IN_TEXT, `the title falls back to an id: ${n.title}`);
  assert.doesNotMatch(n.body, ID_IN_TEXT, `the body falls back to an id: ${n.body}`);
  for (const name of names) assert.ok(n.title.includes(name), `the title names ${name}: ${n.title}`);
}
