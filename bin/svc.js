#!/usr/bin/env node
// The `svc` executable: runs the compiled service (built by `npm ci` via the prepare script).
import { main } from '../dist/main.js';

main(process.argv.slice(2)).then(
  (code) => { if (typeof code === 'number') process.exitCode = code; },
  (err) => { console.error(err instanceof Error ? err.message : err); process.exitCode = 1; },
);
