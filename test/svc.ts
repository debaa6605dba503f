// The `svc` command run from source (through tsx), exactly as bin/svc.js runs the built one, so the
// process tests exercise the current code without a build step.
import { main } from '../src/main.js';
import { clock } from '../src/platform/clock.js';

// Process tests that cross a billing period start the service with its clock moved. Read here, in
// the test entry, never by the service itself.
if (process.env.SVC_TEST_CLOCK_OFFSET_MS) clock.offsetMs = Number(process.env.SVC_TEST_CLOCK_OFFSET_MS);

main(process.argv.slice(2)).then(
  (code) => { if (typeof code === 'number') process.exitCode = code; },
  (err) => { console.error(err instanceof Error ? err.message : err); process.exitCode = 1; },
);
