// `node --import ./test/ts-loader.mjs file.test.ts`: runs a test file and the TypeScript it
// imports (see test/ts-hooks.mjs), with stack traces pointing into the .ts sources.
import { register } from 'node:module';

process.setSourceMapsEnabled(true);
register('./ts-hooks.mjs', import.meta.url);
