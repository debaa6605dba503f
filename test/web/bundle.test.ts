// The built app's budget and hygiene (issue 22): the JavaScript the first load fetches stays under
// 150 KB gzipped; index.html has no inline script or style and nothing from another origin (the
// CSP allows 'self' only); assets are content-hashed, so they can be served immutable.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { before, describe, test } from 'node:test';
import { ensureBuilt, ROOT, WEB_BUILD } from './harness.js';

export const INITIAL_JS_BUDGET = 150 * 1024;

/** The scripts index.html loads at once: its module entry and the chunks it preloads. */
export function initialScripts(html: string): string[] {
  const refs = [...html.matchAll(/<(?:script[^>]*\bsrc|link[^>]*rel="modulepreload"[^>]*\bhref)="([^"]+)"/g)].map((m) => m[1]!);
  return refs.filter((r) => r.endsWith('.js'));
}

describe('web build', () => {
  let html: string;
  before(async () => {
    await ensureBuilt();
    html = readFileSync(join(WEB_BUILD, 'index.html'), 'utf8');
  });

  test('the initial JavaScript is under 150 KB gzipped', () => {
    const scripts = initialScripts(html);
    assert.ok(scripts.length > 0, 'index.html loads a script');
    const gz = scripts.reduce((n, s) => n + gzipSync(readFileSync(join(WEB_BUILD, s))).length, 0);
    console.log(`# initial JavaScript: ${scripts.length} file(s), ${(gz / 1024).toFixed(1)} KB gzipped`);
    assert.ok(gz < INITIAL_JS_BUDGET, `${gz} bytes gzipped`);
  });

  test('index.html has no inline script or style and loads nothing from another origin', () => {
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'inline script');
    assert.doesNotMatch(html, /<style|\sstyle=/, 'inline style');
    assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//, 'external asset');
  });

  test("the app's build directory is none the server's compiler writes (Vite empties it on each build)", () => {
    // tsc writes src/<dir> to dist/<dir>: dist/web once held both, and a build deleted the server's pages.
    assert.equal(existsSync(join(ROOT, 'src', basename(WEB_BUILD))), false, `src/${basename(WEB_BUILD)} exists`);
    assert.equal(dirname(WEB_BUILD), join(ROOT, 'dist'));
  });

  test('every asset name carries a content hash', () => {
    for (const name of readdirSync(join(WEB_BUILD, 'assets'))) assert.match(name, /-[A-Za-z0-9_-]{8}\.(js|css|svg|png|woff2)$/, name);
  });

  test('no asset loads from another origin', () => {
    for (const name of readdirSync(join(WEB_BUILD, 'assets')).filter((n) => n.endsWith('.css'))) {
      assert.doesNotMatch(readFileSync(join(WEB_BUILD, 'assets', name), 'utf8'), /url\((["']?)(https?:)?\/\//, name);
    }
  });
});
