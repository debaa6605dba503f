// The deploy pages' logic (web/src/lib): the publish form's checks and where the API's violations
// land, and the install form's version choices, which the journey covers only for one path.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseVersionForm, STARTER, versionViolations } from '../../web/src/lib/package-version.js';
import { chosenVersion, healthOf, initialChoice, LATEST, pinOf, versionOptions } from '../../web/src/lib/install-form.js';
import { idempotencyKey } from '../../web/src/lib/idempotency.js';

describe('web lib: publishing a package version', () => {
  test('the starter texts parse into the body the API takes', () => {
    const parsed = parseVersionForm(STARTER);
    assert.ok(parsed.ok);
    assert.equal(parsed.body.semver, '1.0.0');
    assert.equal((parsed.body.input_schema as { type: string }).type, 'object');
    assert.deepEqual(parsed.body.manifest.routes, [{ route_key: 'web' }]);
  });

  test('broken JSON, non-objects and an empty version are refused at their field, nothing else', () => {
    const parsed = parseVersionForm({ semver: '  ', input_schema: '[1, 2]', manifest: '{"routes": [' });
    assert.equal(parsed.ok, false);
    if (parsed.ok) return;
    assert.equal(parsed.errors.semver, 'required');
    assert.equal(parsed.errors.input_schema, 'must be a JSON object ({ ... })');
    assert.match(parsed.errors.manifest ?? '', /^not valid JSON: /);
    const onlyOne = parseVersionForm({ ...STARTER, manifest: 'null' });
    assert.deepEqual(onlyOne.ok ? {} : onlyOne.errors, { manifest: 'must be a JSON object ({ ... })' });
    assert.deepEqual(parseVersionForm({ ...STARTER, input_schema: '' }).ok ? {} : parseVersionForm({ ...STARTER, input_schema: '' }), { ok: false, errors: { input_schema: 'required' } });
  });

  test('the version is trimmed', () => {
    const parsed = parseVersionForm({ ...STARTER, semver: ' 2.0.0 ' });
    assert.ok(parsed.ok && parsed.body.semver === '2.0.0');
  });

  test("the API's violations go to the text area they concern, with their path inside it; the rest stay for the notice", () => {
    const { errors, shown } = versionViolations(
      new Map([
        ['body.manifest.routes.1.route_key', 'route_key "web" appears more than once'],
        ['body.manifest.resources.0.metadata.namespace', 'must not be set'],
        ['body.input_schema', 'unknown keyword "colour"'],
        ['body.semver', 'must be a SemVer 2.0 version'],
        ['body/manifest/routes', 'must be array'],
        ['body', 'must NOT have additional properties'],
        ['body.manifesto', 'not ours'],
      ]),
    );
    assert.deepEqual(errors, {
      manifest: 'routes.1.route_key: route_key "web" appears more than once; resources.0.metadata.namespace: must not be set',
      input_schema: 'unknown keyword "colour"',
      semver: 'must be a SemVer 2.0 version',
    });
    assert.deepEqual(shown, ['body.manifest.routes.1.route_key', 'body.manifest.resources.0.metadata.namespace', 'body.input_schema', 'body.semver']);
  });
});

describe('web lib: the install form', () => {
  const versions = [
    { semver: '1.1.0-rc.1', prerelease: true },
    { semver: '1.0.0', prerelease: false },
    { semver: '0.9.0', prerelease: false },
  ];

  test('"latest release" comes first when there is one, then every version newest first', () => {
    assert.deepEqual(versionOptions(versions, '1.0.0'), [
      [LATEST, 'Latest release (now 1.0.0)'],
      ['1.1.0-rc.1', '1.1.0-rc.1 (prerelease)'],
      ['1.0.0', '1.0.0'],
      ['0.9.0', '0.9.0'],
    ]);
    assert.deepEqual(versionOptions([versions[0]!], null), [['1.1.0-rc.1', '1.1.0-rc.1 (prerelease)']]);
  });

  test('a choice becomes the pin the API takes, and names the version whose schema the form shows', () => {
    assert.deepEqual(pinOf(LATEST), { kind: 'latest' });
    assert.deepEqual(pinOf('0.9.0'), { kind: 'pinned', version: '0.9.0' });
    assert.equal(chosenVersion(versions, LATEST, '1.0.0')?.semver, '1.0.0');
    assert.equal(chosenVersion(versions, '0.9.0', '1.0.0')?.semver, '0.9.0');
    assert.equal(chosenVersion(versions, LATEST, null), undefined);
  });

  test('a link may preselect a version the package has; otherwise the latest release, or the newest version', () => {
    assert.equal(initialChoice(versions, '1.0.0', '0.9.0'), '0.9.0');
    assert.equal(initialChoice(versions, '1.0.0', '3.0.0'), LATEST);
    assert.equal(initialChoice(versions, '1.0.0', undefined), LATEST);
    assert.equal(initialChoice(versions, null, LATEST), '1.1.0-rc.1');
    assert.equal(initialChoice([], null, undefined), '');
  });

  test("an install's health reads as a sentence", () => {
    assert.match(healthOf({ state: 'healthy', reconciling: false }), /^Running/);
    assert.match(healthOf({ state: 'degraded', reconciling: true }), /previous render still runs\. An operation is acting on it now\.$/);
    assert.match(healthOf({ state: 'syncing', reconciling: true }), /^Deploying: syncing\./);
  });

  test('idempotency keys are fresh, and fit the header (at most 64 characters)', () => {
    const a = idempotencyKey();
    assert.match(a, /^[0-9a-f]{32}$/);
    assert.notEqual(a, idempotencyKey());
  });
});
