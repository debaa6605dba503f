// The `svc` command run from source (through tsx), exactly as bin/svc.js runs the built one, so the
// process tests exercise the current code without a build step.
import { main } from '../src/main.js';

main(process.argv.slice(2)).then(
  (code) => { if (typeof code === 'number') process.exitCode = code; },
  (err) => { console.error(err instanceof Error ? err.message : err); process.exitCode = 1; },
);
