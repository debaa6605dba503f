// Issue 21: `svc admin` is discoverable like a gh command group: `svc admin`, `svc admin --help`
// and `svc admin help` exit 0 and list every admin command with a one-line summary and its flags;
// each command's `--help` (or `svc admin help <command>`) prints its usage and exits 0; a mistake
// is a usage error (exit 2) that shows the right usage. Through the real `svc` process.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runSvc } from './processes.js';

// None of these touch a database or a key file: the data dir is a path that is never created.
const env = { SVC_DATA_DIR: '/nonexistent/svc-admin-help', SVC_SECRET_KEY: '0'.repeat(64) };

describe('svc admin help', () => {
  test('svc admin, --help, -h and help list create-user and rotate-keys with their flags, exit 0', async () => {
    const runs = await Promise.all([[], ['--help'], ['-h'], ['help']].map((args) => runSvc(['admin', ...args], env)));
    for (const run of runs) {
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stderr, '');
      assert.match(run.stdout, /^Usage: svc admin <command>/);
      assert.match(run.stdout, /create-user --email E --password P \[--name N\]\n +create a user and print its id/);
      assert.match(run.stdout, /rotate-keys \[--batch-size N\]\n +re-seal every stored value under SVC_SECRET_KEY/);
      assert.match(run.stdout, /workspaces set-plan <workspace> <tier>\n +set a workspace's plan now/);
    }
    assert.equal(new Set(runs.map((r) => r.stdout)).size, 1, 'the same text every way');
  });

  test('each command\'s --help, -h and `svc admin help <command>` print its usage and exit 0', async () => {
    const [rotate, rotateShort, rotateTopic, create, createTopic, serve] = await Promise.all([
      runSvc(['admin', 'rotate-keys', '--help'], env),
      runSvc(['admin', 'rotate-keys', '-h'], env),
      runSvc(['admin', 'help', 'rotate-keys'], env),
      runSvc(['admin', 'create-user', '--help'], env),
      runSvc(['admin', 'help', 'create-user'], env),
      runSvc(['serve', '--help'], env),
    ]);
    for (const run of [rotate, rotateShort, rotateTopic, create, createTopic, serve]) assert.equal(run.code, 0, run.stderr);
    assert.match(rotate.stdout, /^Usage: svc admin rotate-keys \[--batch-size N\]/);
    assert.match(rotate.stdout, /--batch-size N {2}rows per committed batch/);
    assert.match(rotate.stdout, /SVC_DATA_DIR\/secret\.key/);
    assert.equal(rotateShort.stdout, rotate.stdout);
    assert.equal(rotateTopic.stdout, rotate.stdout);
    assert.match(create.stdout, /^Usage: svc admin create-user --email E --password P \[--name N\]/);
    assert.match(create.stdout, /Example:\n {2}svc admin create-user --email/);
    assert.equal(createTopic.stdout, create.stdout);
    assert.match(serve.stdout, /^Usage: svc serve \[--role all\|api\|worker\]/);
    const [plan, planTopic] = await Promise.all([runSvc(['admin', 'workspaces', '--help'], env), runSvc(['admin', 'help', 'workspaces'], env)]);
    assert.equal(plan.code, 0, plan.stderr);
    assert.match(plan.stdout, /^Usage: svc admin workspaces set-plan <workspace> <tier>/);
    assert.match(plan.stdout, /Example:\n {2}svc admin workspaces set-plan acme pro/);
    assert.equal(planTopic.stdout, plan.stdout);
  });

  test('an unknown admin command or flag is a usage error (exit 2) with the usage on stderr', async () => {
    const [unknown, topic, flag, noVerb, badVerb, noTier] = await Promise.all([
      runSvc(['admin', 'rotate-key'], env),
      runSvc(['admin', 'help', 'toString'], env),
      runSvc(['admin', 'rotate-keys', '--batch'], env),
      runSvc(['admin', 'workspaces'], env),
      runSvc(['admin', 'workspaces', 'set-tier', 'acme', 'pro'], env),
      runSvc(['admin', 'workspaces', 'set-plan', 'acme'], env),
    ]);
    for (const run of [unknown, topic, flag, noVerb, badVerb, noTier]) {
      assert.equal(run.code, 2);
      assert.equal(run.stdout, '');
    }
    assert.match(unknown.stderr, /^error: unknown admin command "rotate-key"\n\nUsage: svc admin <command>/);
    assert.match(topic.stderr, /unknown admin command "toString"/);
    assert.match(flag.stderr, /^error: Unknown option '--batch'[\s\S]*Usage: svc admin rotate-keys/);
    assert.match(noVerb.stderr, /^error: a command is required: set-plan\n\nUsage: svc admin workspaces/);
    assert.match(badVerb.stderr, /^error: unknown command "set-tier"/);
    assert.match(noTier.stderr, /^error: set-plan needs a workspace \(ws_ id or slug\) and a tier/);
  });
});
