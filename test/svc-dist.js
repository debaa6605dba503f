// The `svc` command from the build (dist/), as bin/svc.js runs it, for the process tests (see
// test/processes.ts); test/svc.ts is the same entry over the TypeScript source.
import { main } from '../dist/main.js';
import { clock } from '../dist/platform/clock.js';

// Process tests that cross a billing period start the service with its clock moved. Read here, in
// the test entry, never by the service itself.
if (process.env.SVC_TEST_CLOCK_OFFSET_MS) clock.offsetMs = Number(process.env.SVC_TEST_CLOCK_OFFSET_MS);

main(process.argv.slice(2)).then(
  (code) => { if (typeof code === 'number') process.exitCode = code; },
  (err) => { console.error(err instanceof Error ? err.message : err); process.exitCode = 1; },
);
