// The process logger's standard output (platform/logging.ts): lines logged in a turn of the event
// loop leave together at its end, in order, and lines still pending when the process exits (here
// process.exit right after logging) are written by the exit handler, not lost.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './paths.js';

const LOGGING = join(ROOT, 'src/platform/logging.ts');

function run(script: string): { lines: Array<{ msg: string }>; status: number | null } {
  const r = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), '--input-type=module', '-e', script], { encoding: 'utf8', cwd: ROOT });
  assert.equal(r.stderr, '', r.stderr);
  const lines = r.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { msg: string });
  return { lines, status: r.status };
}

test('lines logged across turns all reach stdout, in order', () => {
  const { lines, status } = run(`
    const { createLogger } = await import(${JSON.stringify(LOGGING)});
    const a = createLogger('info');
    const b = createLogger('info');
    a.info('one'); b.info('two');
    await new Promise((r) => setImmediate(r));
    a.info('three'); a.debug('not at info'); b.warn('four');
    await new Promise((r) => setTimeout(r, 5));
    a.info('five');
  `);
  assert.equal(status, 0);
  assert.deepEqual(lines.map((l) => l.msg), ['one', 'two', 'three', 'four', 'five']);
});

test('lines pending when the process exits are written by the exit handler', () => {
  const { lines, status } = run(`
    const { createLogger } = await import(${JSON.stringify(LOGGING)});
    const log = createLogger('info');
    for (let i = 0; i < 1000; i++) log.info('line ' + i);
    log.error('last words');
    process.exit(3);
  `);
  assert.equal(status, 3);
  assert.equal(lines.length, 1001);
  assert.equal(lines[0]!.msg, 'line 0');
  assert.equal(lines.at(-1)!.msg, 'last words');
});
