// Names and values taken from a message as the person wrote them (case kept): a secret's name and
// value, a snippet's name and what it shows, a deploy's package, cluster and version. Messages may
// be 50,000 characters of anything, so each pattern here is a keyword found once and then read by
// index, never a regular expression that can backtrack over a long run (a repeated `\s+`, a lazy
// `.+?` before a lookahead): every function is linear in the message's length.
import { resourceIn, singular, stateIn, type ResourceKey } from './resources.js';

const QUOTES = '"\'`';

/** Words that fill a sentence but are never a name ("deploy it to the cluster"). */
export const FILLERS = new Set([
  'a', 'an', 'the', 'my', 'our', 'your', 'this', 'that', 'these', 'those', 'it', 'its', 'to', 'on', 'in', 'into', 'onto', 'of', 'for',
  'with', 'and', 'or', 'is', 'are', 'be', 'me', 'i', 'we', 'you', 'please', 'can', 'could', 'would', 'will', 'do', 'does', 'some',
  'what', 'which', 'how', 'there', 'here', 'all', 'any', 'named', 'called', 'cluster', 'package', 'secret', 'snippet', 'latest', 'new',
  'version', 'value', 'as', 'at', 'by', 'from', 'something', 'one',
]);

/** `s` without the characters of `chars` at its end. */
function trimTrailing(s: string, chars: string): string {
  let end = s.length;
  while (end > 0 && chars.includes(s[end - 1]!)) end--;
  return s.slice(0, end);
}

/** A name as written, without the quotes around it or the punctuation after it ("`db-password`." -> db-password). */
export function bareName(raw: string): string {
  let name = trimTrailing(raw.trim(), '.,;:!?');
  let start = 0;
  while (start < name.length && QUOTES.includes(name[start]!)) start++;
  name = trimTrailing(name.slice(start), QUOTES);
  return trimTrailing(name, '.,;:!?').trim();
}

/** A name of the message, or null when it is a filler word. */
function nameOrNull(raw: string | null | undefined): string | null {
  const name = raw ? bareName(raw) : '';
  return name && !FILLERS.has(name.toLowerCase()) ? name : null;
}

/** The text after the first match of a keyword pattern, or null. */
function after(text: string, keyword: RegExp): string | null {
  const m = keyword.exec(text);
  return m ? text.slice(m.index + m[0].length) : null;
}

/** What `s` starts with: the text inside quotes when it opens with one, else its first word; and what follows. */
function leading(s: string): { value: string; rest: string } | null {
  const t = s.trimStart();
  if (!t) return null;
  const quote = t[0]!;
  if (QUOTES.includes(quote)) {
    const end = t.indexOf(quote, 1);
    if (end > 1) return { value: t.slice(1, end), rest: t.slice(end + 1) };
    if (end === -1) return leading(t.slice(1));
  }
  const space = t.search(/\s/);
  return space === -1 ? { value: t, rest: '' } : { value: t.slice(0, space), rest: t.slice(space) };
}

/** An unquoted value's end punctuation is the sentence's ("with value hunter2." -> hunter2); a quoted value is exact. */
function valueAt(s: string | null): string | null {
  if (s === null) return null;
  const t = s.trimStart();
  const found = leading(t);
  if (!found) return null;
  return QUOTES.includes(t[0]!) ? found.value : trimTrailing(found.value, '.,;?') || null;
}

/** "create a secret named db-password with value hunter2", "add secret API_KEY=abc", "store abc as secret API_KEY". */
export function secretOf(text: string): { name: string | null; value: string | null } {
  const stored = after(text, /\b(?:store|save|put)\s/i);
  const storedValue = stored === null ? null : leading(stored);
  if (storedValue) {
    const as = /^\s*(?:as|in|into)\s+(?:a\s+|the\s+)?secret\b\s*(?:(?:named|called)\b)?/i.exec(storedValue.rest);
    if (as) return { name: nameOrNull(leading(storedValue.rest.slice(as[0].length))?.value), value: storedValue.value };
  }
  const named = after(text, /\b(?:named|called)\b/i) ?? after(text, /\bname\b\s*[:=]?/i);
  const afterSecret = after(text, /\bsecret\b/i);
  // "secret API_KEY=abc" or "secret API_KEY = 'a b'"
  const assigned = afterSecret === null ? null : /^\s*(?:(?:named|called)\s+)?([^\s=`'"]+)\s*=/i.exec(afterSecret);
  if (assigned) return { name: nameOrNull(assigned[1]), value: valueAt(afterSecret!.slice(assigned[0].length)) };
  const value = valueAt(after(text, /\bvalue\b\s*(?:(?:is|of)\b|[=:])?/i));
  const name = nameOrNull(leading(named ?? afterSecret ?? '')?.value);
  return { name: name && ['with', 'value', 'and', 'named', 'called'].includes(name.toLowerCase()) ? null : name, value };
}

/** Where a snippet's name ends and what it does begins. */
const CONNECTOR = /\s(?:that|which|to|showing|listing|counting|for|with)\b/i;

/** "create a snippet named X that lists installs", "make a snippet called 'Failed ops' showing failed operations". */
export function snippetOf(text: string): { name: string | null; resource: ResourceKey | null; count: boolean; state: string | null } {
  const named = after(text, /\b(?:named|called|titled)\s/i);
  let name: string | null = null;
  let rest: string;
  const quoted = named !== null && QUOTES.includes(named.trimStart()[0] ?? '') ? leading(named) : null;
  if (quoted) {
    name = quoted.value.trim() || null;
    rest = quoted.rest;
  } else if (named !== null) {
    const at = named.search(CONNECTOR);
    name = nameOrNull(at === -1 ? named : named.slice(0, at));
    rest = at === -1 ? '' : named.slice(at);
  } else {
    const at = text.search(CONNECTOR);
    rest = at === -1 ? '' : text.slice(at);
  }
  return { name, ...behaviourOf(rest) };
}

/** What a snippet should show, from words like "counts failed operations". */
export function behaviourOf(text: string): { resource: ResourceKey | null; count: boolean; state: string | null } {
  const words = wordsOf(text).filter((w) => singular(w) !== 'snippet');
  const resource = resourceIn(words);
  const count = /\b(how many|count|counts|counting|number of|total)\b/.test(text.toLowerCase());
  return { resource, count, state: resource ? stateIn(resource, words) : null };
}

/** "deploy hello to dev", "install the hello package version 1.2.0 on cluster staging", "deploy hello@1.2.0". */
export function deployOf(text: string): { packageName: string | null; clusterName: string | null; version: string | null } {
  const versionAt = /(?:@|\bv(?:ersion)?\s?)(\d{1,9}\.\d{1,9}\.\d{1,9}(?:[-+][0-9A-Za-z.+-]{0,60}[0-9A-Za-z])?)/i.exec(text);
  const rest = versionAt ? text.replace(versionAt[0], ' ') : text;
  const cluster = /\b(?:to|on|onto|in|into)\s+(?:the\s+|my\s+|our\s+)?(?:cluster\s+)?[`'"]?([A-Za-z0-9][A-Za-z0-9-]*)/i.exec(rest);
  const pkg = /\b(?:deploy|redeploy|install|roll out)\s+(?:the\s+|a\s+|an\s+|my\s+|our\s+)?(?:latest\s+)?(?:package\s+)?[`'"]?([^\s`'",]+)/i.exec(rest);
  return { packageName: nameOrNull(pkg?.[1]), clusterName: nameOrNull(cluster?.[1])?.toLowerCase() ?? null, version: versionAt?.[1] ?? null };
}

/** "on cluster dev", "in the prod cluster". */
export function clusterNamed(text: string): string | null {
  const m = /\bcluster\s+[`'"]?([a-z0-9][a-z0-9-]*)/i.exec(text) ?? /\b(?:on|in|of)\s+(?:the\s+)?[`'"]?([a-z0-9][a-z0-9-]*)[`'"]?\s+cluster\b/i.exec(text);
  return nameOrNull(m?.[1])?.toLowerCase() ?? null;
}

/** A name given as an answer: "call it db-password" or just "db-password". */
export function nameFromAnswer(answer: string | null): string | null {
  if (!answer) return null;
  return bareName(after(answer, /\b(?:named|called|call it|name it|name is)\s/i) ?? answer) || null;
}

/** Lower-case words, punctuation dropped; ids, hyphenated and dotted names stay whole. */
export function wordsOf(text: string): string[] {
  return text.toLowerCase().replace(/[’‘`]/g, "'").match(/[a-z0-9][a-z0-9_.@-]*[a-z0-9]|[a-z0-9]/g) ?? [];
}
