// The links between README.md and the guides in docs/: every relative link names a file that
// exists, and every #anchor a heading of that file (as GitHub makes anchors from headings), so a
// section that moves or is renamed cannot leave a reader at a dead link.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, test } from 'node:test';
import { ROOT } from './paths.js';

/**
 * Guides of issue 35 written on other branches, which the README links to before they are merged.
 * A link to one of them may point nowhere only while the file does not exist; once it does, its
 * links and anchors are checked like any other. Empty this list after the merge.
 */
const WRITTEN_ON_OTHER_BRANCHES = new Set<string>();

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2, ... */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fence = !fence;
    const m = fence ? null : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1]!.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').trim().replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The relative link targets of a markdown text, outside code. */
export function linksOf(markdown: string): string[] {
  const prose = markdown.replace(/^\s*```[\s\S]*?^\s*```/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z]+:/i.test(t));
}

const files = ['README.md', ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

describe('links between README.md and docs/', () => {
  test('anchors and links are read as GitHub reads them', () => {
    assert.deepEqual([...anchorsOf('# The web app\n## Single sign-on (OpenID Connect)\n```sh\n# not a heading\n```\n## Notes\n## Notes\n')], ['the-web-app', 'single-sign-on-openid-connect', 'notes', 'notes-1']);
    assert.deepEqual(linksOf('[a](docs/a.md#x) `[b](c.md)` [c](https://example.com) ![d](shot.png)\n```sh\n[e](f.md)\n```\n'), ['docs/a.md#x', 'shot.png']);
  });

  test('every relative link names a file that exists and a heading it has', () => {
    assert.ok(files.length >= 10, files.join(', '));
    const broken: string[] = [];
    for (const file of files) {
      const links = linksOf(readFileSync(join(ROOT, file), 'utf8'));
      for (const link of links) {
        const [path, anchor] = link.split('#') as [string, string | undefined];
        const target = path ? normalize(join(dirname(file), decodeURI(path))) : file;
        if (!existsSync(join(ROOT, target))) {
          if (!WRITTEN_ON_OTHER_BRANCHES.has(target)) broken.push(`${file}: ${link} (no such file)`);
          continue;
        }
        if (anchor && target.endsWith('.md') && !anchorsOf(readFileSync(join(ROOT, target), 'utf8')).has(anchor)) broken.push(`${file}: ${link} (no such heading)`);
      }
    }
    assert.deepEqual(broken, []);
  });
});
