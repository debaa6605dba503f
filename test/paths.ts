// The repository's root, for the test helpers that build, spawn or write into it. test/run.js runs
// the test files compiled into .test-build/<run>/ (see compileTests in test/build.js), a mirror of
// the repository two levels down, so a path taken from the file's own location would name the mirror.
import { basename, dirname, resolve } from 'node:path';

const here = resolve(import.meta.dirname, '..');

export const ROOT = basename(dirname(here)) === '.test-build' ? dirname(dirname(here)) : here;
