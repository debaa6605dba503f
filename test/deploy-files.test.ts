// The production files of API.md 8.12 held to their rules without a container runtime or a cluster
// (no base image can be pulled here): the Dockerfile linted (dockerfile-utils) and its rules checked
// on its syntax tree; each Kustomize overlay rendered with `kubectl kustomize` and every object
// validated against the Kubernetes schemas (kubernetes-models) and for fields Kubernetes does not
// know (the API types of @kubernetes/client-node); deploy/compose.yaml parsed and checked; the
// systemd unit checked (and verified by systemd-analyze where there is one); the packed tarball's
// file list. Each rule check is also run on a broken copy, so a check that cannot fail fails here.
// svc-test: own process (spawns kubectl, npm and systemd-analyze)
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { describe, test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { DockerfileParser, Label, Env, type Instruction } from 'dockerfile-ast';
import { validate as lintDockerfile } from 'dockerfile-utils';
import yaml from 'js-yaml';
import { ROOT } from './paths.js';

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Names of settings that hold a secret: the key, credentials, tokens, URLs that carry a password. */
const SECRET_NAME = /(SECRET|SECRET_KEYS?|PASSWORD|TOKEN|API_KEY|SMTP_URL|DATABASE_URL)$/;

// ---------------------------------------------------------------------------------------------
// Dockerfile

interface Stage { name: string | null; image: string; instructions: Instruction[] }

function stagesOf(text: string): Stage[] {
  const stages: Stage[] = [];
  for (const instruction of DockerfileParser.parse(text).getInstructions()) {
    if (instruction.getKeyword() === 'FROM') {
      const args = instruction.getArguments().map((a) => a.getValue());
      const as = args.findIndex((a) => a.toUpperCase() === 'AS');
      stages.push({ name: as >= 0 ? args[as + 1]! : null, image: args.find((a) => !a.startsWith('--'))!, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push(instruction);
    }
  }
  return stages;
}

const argsOf = (i: Instruction) => i.getArgumentsContent() ?? '';
/** The exec form's words (`["a", "b"]`), or null for the shell form. */
const jsonOf = (i: Instruction | string) => {
  const args = typeof i === 'string' ? i : argsOf(i);
  try {
    const words: unknown = args.trim().startsWith('[') ? JSON.parse(args) : null;
    return Array.isArray(words) && words.every((w) => typeof w === 'string') ? (words as string[]) : null;
  } catch {
    return null;
  }
};
const flagOf = (i: Instruction, name: string) => (i as Instruction & { getFlags?(): { getName(): string; getValue(): string | null }[] })
  .getFlags?.().find((f) => f.getName() === name)?.getValue() ?? null;
const propertiesOf = (instructions: Instruction[], keyword: 'LABEL' | 'ENV') => {
  const out = new Map<string, string>();
  for (const i of instructions) {
    if (i.getKeyword() !== keyword || !(i instanceof Label || i instanceof Env)) continue;
    for (const p of i.getProperties()) out.set(p.getName(), p.getUnescapedValue() ?? '');
  }
  return out;
};

/** The pinned base: an exact node 20 version on bookworm-slim, or a digest. */
const PINNED_BASE = /^(docker\.io\/library\/)?node:20\.\d+\.\d+-bookworm-slim(@sha256:[0-9a-f]{64})?$|^(docker\.io\/library\/)?node(:[\w.-]+)?@sha256:[0-9a-f]{64}$/;
const REQUIRED_LABELS = ['org.opencontainers.image.title', 'org.opencontainers.image.description', 'org.opencontainers.image.version',
  'org.opencontainers.image.revision', 'org.opencontainers.image.licenses'];

/** Every rule of API.md 8.12 the Dockerfile breaks, one line each (empty: it keeps them all). */
function dockerfileProblems(text: string): string[] {
  const problems: string[] = [];
  for (const d of lintDockerfile(text)) problems.push(`lint: line ${d.range.start.line + 1}: ${d.message}`);
  const stages = stagesOf(text);
  if (stages.length === 0) return [...problems, 'no FROM'];
  const names = new Set<string>();
  for (const stage of stages) {
    if (!names.has(stage.image) && !PINNED_BASE.test(stage.image)) problems.push(`base not pinned to an exact node:20.x.y-bookworm-slim or a digest: FROM ${stage.image}`);
    if (stage.name) names.add(stage.name);
  }
  const all = stages.flatMap((s) => s.instructions);
  for (const i of all) {
    if (i.getKeyword() === 'ADD' && /(^|\s)(https?:\/\/|git@|[\w.-]+\.git\b)/.test(argsOf(i))) problems.push(`ADD of a URL: ADD ${argsOf(i)}`);
    if (i.getKeyword() === 'RUN' && /\bnpm (install|i)\b/.test(argsOf(i))) problems.push(`npm install instead of npm ci (the lockfile): RUN ${argsOf(i)}`);
    if (i.getKeyword() === 'RUN' && /\b(curl|wget)\b[^|]*\|\s*(ba|)sh\b/.test(argsOf(i))) problems.push('a script piped from the network');
  }

  const final = stages.at(-1)!;
  // The stage chain the final image starts from (FROM base, FROM build...): its instructions count too.
  const chain: Stage[] = [final];
  for (let s = final; names.has(s.image);) {
    s = stages.find((x) => x.name === s.image)!;
    chain.unshift(s);
  }
  const finalInstructions = chain.flatMap((s) => s.instructions);
  const of = (keyword: string) => finalInstructions.filter((i) => i.getKeyword() === keyword);

  const user = of('USER').at(-1);
  if (!user) problems.push('no USER: the image would run as root');
  else if (!/^\d+(:\d+)?$/.test(argsOf(user)) || /^0(:|$)/.test(argsOf(user))) problems.push(`USER must be a numeric non-root uid[:gid], got USER ${argsOf(user)}`);

  const health = of('HEALTHCHECK').at(-1);
  const healthArgs = health ? argsOf(health).replace(/^(--\S+\s+)*CMD\s+/, '') : '';
  const healthCmd = health ? jsonOf(healthArgs) ?? healthArgs.split(/\s+/) : null;
  if (!health || /^NONE$/i.test(argsOf(health))) problems.push('no HEALTHCHECK');
  else if (!healthCmd || healthCmd[0] !== 'node' || !healthCmd[1]) problems.push(`HEALTHCHECK must run a Node script: ${argsOf(health)}`);
  else {
    const workdir = of('WORKDIR').map(argsOf).at(-1) ?? '/';
    const copy = of('COPY').find((c) => posix.resolve(workdir, argsOf(c).split(/\s+/).at(-1)!) === healthCmd[1]);
    const source = copy?.getArguments().map((a) => a.getValue()).filter((a) => !a.startsWith('--')).at(0);
    if (!source || !existsSync(join(ROOT, source))) problems.push(`the HEALTHCHECK script ${healthCmd[1]} is not copied from a file of the repository`);
    else if (!readFileSync(join(ROOT, source), 'utf8').includes('/readyz')) problems.push(`the HEALTHCHECK script ${source} does not ask /readyz`);
  }

  // Production dependencies only: node_modules comes from a stage that installed them with
  // `npm ci --omit=dev`, and nothing in the final stage installs development ones.
  const modules = of('COPY').filter((c) => /node_modules/.test(argsOf(c)));
  if (modules.length === 0) problems.push('no node_modules copied into the final image');
  for (const copy of modules) {
    const from = flagOf(copy, 'from');
    const stage = stages.find((s) => s.name === from);
    const ci = stage?.instructions.filter((i) => i.getKeyword() === 'RUN' && /\bnpm ci\b/.test(argsOf(i))) ?? [];
    if (!stage || ci.length === 0 || !ci.every((i) => /--omit=dev\b/.test(argsOf(i)))) {
      problems.push(`node_modules must come from a stage that runs npm ci --omit=dev: COPY ${argsOf(copy)}`);
    }
  }
  for (const run of of('RUN')) {
    if (/\bnpm (ci|install)\b/.test(argsOf(run)) && !/--omit=dev\b/.test(argsOf(run))) problems.push(`development dependencies installed in the final image: RUN ${argsOf(run)}`);
  }
  if (!of('COPY').some((c) => flagOf(c, 'from') && /^\S*\bdist\/?\s/.test(argsOf(c)))) problems.push('the built dist/ is not copied from a build stage');

  const installs = of('RUN').map(argsOf).filter((a) => /apt-get install/.test(a)).join(' ');
  for (const pkg of ['git', 'tini']) if (!new RegExp(`\\b${pkg}\\b`).test(installs)) problems.push(`${pkg} is not installed in the final image`);

  const entrypoint = of('ENTRYPOINT').at(-1);
  const entry = entrypoint ? jsonOf(entrypoint) : null;
  if (!entry || !/(^|\/)tini$/.test(entry[0] ?? '') || entry[1] !== '--') problems.push('ENTRYPOINT must be tini (exec form: ["/usr/bin/tini", "--", ...])');
  else if (!/(^|\/)svc(\.js)?$/.test(entry.at(-1) ?? '')) problems.push(`ENTRYPOINT must run svc, got ${entry.join(' ')}`);
  const cmd = of('CMD').at(-1);
  if (!cmd || JSON.stringify(jsonOf(cmd)) !== '["serve"]') problems.push('CMD must be ["serve"] (svc serve)');

  const labels = propertiesOf(finalInstructions, 'LABEL');
  for (const label of REQUIRED_LABELS) if (!labels.get(label)) problems.push(`OCI label ${label} missing`);

  // Writes only under /data: the data dir, the git dir and HOME are there, and /data is the volume.
  const env = propertiesOf(finalInstructions, 'ENV');
  for (const name of ['SVC_DATA_DIR', 'SVC_GIT_DIR', 'HOME']) {
    const value = env.get(name);
    if (!value || !/^\/data(\/|$)/.test(value)) problems.push(`${name} must be under /data, got ${value ?? 'unset'}`);
  }
  if (!of('VOLUME').some((v) => (jsonOf(v) ?? argsOf(v).split(/\s+/)).includes('/data'))) problems.push('VOLUME /data missing');
  if (env.get('HOST') !== '0.0.0.0') problems.push('HOST must be 0.0.0.0 in a container (the default listens on 127.0.0.1 only)');
  return problems;
}

describe('Dockerfile', () => {
  const text = read('Dockerfile');

  test('lints clean and keeps every rule', () => {
    assert.deepEqual(dockerfileProblems(text), []);
  });

  test('each rule fails on a Dockerfile that breaks it', () => {
    const broken: [string, RegExp, string | ((s: string) => string), RegExp][] = [
      ['a named user', /^USER .*$/m, 'USER svc', /USER must be a numeric non-root/],
      ['root', /^USER .*$/m, 'USER 0:0', /USER must be a numeric non-root/],
      ['no USER', /^USER .*$/m, '', /no USER/],
      ['a floating base', /^FROM node:\S+ AS base$/m, 'FROM node:20-bookworm-slim AS base', /base not pinned/],
      ['latest', /^FROM node:\S+ AS base$/m, 'FROM node:latest AS base', /base not pinned/],
      ['no HEALTHCHECK', /^HEALTHCHECK .*$/m, '', /no HEALTHCHECK/],
      ['a shell HEALTHCHECK', /^HEALTHCHECK .*$/m, 'HEALTHCHECK CMD curl -f http://127.0.0.1:8080/readyz', /HEALTHCHECK must run a Node script/],
      ['dev dependencies', /npm ci --omit=dev --ignore-scripts/, 'npm ci --ignore-scripts', /node_modules must come from a stage that runs npm ci --omit=dev/],
      ['npm install', /npm ci --omit=dev --ignore-scripts/, 'npm install --omit=dev', /npm install instead of npm ci/],
      ['ADD of a URL', /^COPY package\.json \.\/$/m, 'ADD https://example.com/package.json ./', /ADD of a URL/],
      ['no OCI version label', /org\.opencontainers\.image\.version=/, 'org.example.version=', /OCI label org.opencontainers.image.version missing/],
      ['no tini', /\["\/usr\/bin\/tini", "--", /, '[', /ENTRYPOINT must be tini/],
      ['tini not installed', /git tini ca-certificates/, 'git ca-certificates', /tini is not installed/],
      ['git not installed', /git tini ca-certificates/, 'tini ca-certificates', /git is not installed/],
      ['another command', /^CMD \["serve"\]$/m, 'CMD ["serve", "--role", "api"]', /CMD must be \["serve"\]/],
      ['a data dir elsewhere', /SVC_DATA_DIR=\/data/, 'SVC_DATA_DIR=/var/lib/svc', /SVC_DATA_DIR must be under \/data/],
      ['a lint error', /^EXPOSE 8080 8081$/m, 'EXPOSE http', /lint: .*EXPOSE|lint: .*containerPort|lint:/],
    ];
    for (const [what, pattern, replacement, expected] of broken) {
      assert.match(text, pattern, `the Dockerfile no longer has what "${what}" breaks`);
      const copy = typeof replacement === 'string' ? text.replace(pattern, replacement) : replacement(text);
      const problems = dockerfileProblems(copy);
      assert.ok(problems.some((p) => expected.test(p)), `${what}: expected a problem matching ${expected}, got ${JSON.stringify(problems)}`);
    }
  });

  test('the image commands are the server commands svc has', () => {
    const usage = read('src/server-commands.ts');
    for (const command of ['serve', 'migrate']) assert.match(usage, new RegExp(`case '${command}':`));
    const compose = read('deploy/compose.yaml');
    assert.match(compose, /command: \["migrate"\]/);
    assert.match(compose, /command: \["serve"\]/);
    // compose checks the svc container's health with the image's own script
    const health = stagesOf(text).at(-1)!.instructions.find((i) => i.getKeyword() === 'HEALTHCHECK')!;
    const script = /"(\/[^"]+\.js)"/.exec(argsOf(health))![1]!;
    assert.deepEqual((yaml.load(compose) as any).services.svc.healthcheck.test, ['CMD', 'node', script]);
    // what is copied from the repository exists, and .dockerignore lets it through
    const ignore = read('.dockerignore');
    for (const c of stagesOf(text).flatMap((s) => s.instructions).filter((i) => i.getKeyword() === 'COPY' && !flagOf(i, 'from'))) {
      for (const source of c.getArguments().map((a) => a.getValue()).slice(0, -1)) {
        assert.ok(existsSync(join(ROOT, source)), `COPY ${source}: no such file`);
        assert.ok(ignore.includes(`!${source}`) || ignore.split('\n').some((l) => l.startsWith('!') && source.startsWith(l.slice(1).replace(/\/$/, '') + '/')) || ignore.includes(`!${source}/`),
          `.dockerignore keeps ${source} out of the build context`);
      }
    }
    for (const kept of ['**/node_modules', '**/.env']) assert.ok(ignore.split('\n').includes(kept), `.dockerignore lets ${kept} in`);
    assert.match(ignore, /^\*$/m, '.dockerignore starts from nothing (an allow list)');
  });

  test('the healthcheck script exits 0 on a ready service and 1 otherwise', async () => {
    const { createServer } = await import('node:http');
    for (const [status, code] of [[200, 0], [503, 1]] as const) {
      const server = createServer((req, res) => {
        res.statusCode = req.url === '/readyz' ? status : 404;
        res.end('{}');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as { port: number }).port;
      // spawned, not spawnSync: the stand-in answers on this process's event loop
      const run = await new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, [join(ROOT, 'deploy/docker/healthcheck.js')], { env: { PORT: String(port) }, stdio: 'ignore' });
        child.on('close', resolve);
      });
      server.close();
      assert.equal(run, code, `readyz answering ${status}`);
    }
    const refused = spawnSync(process.execPath, [join(ROOT, 'deploy/docker/healthcheck.js')], { env: { PORT: '1' }, encoding: 'utf8' });
    assert.equal(refused.status, 1, 'nothing listening');
  });
});

// ---------------------------------------------------------------------------------------------
// Kubernetes

/** kubectl on the PATH (or in /usr/bin, /usr/local/bin): a recent one, or Debian 12's 1.20 whose kustomize is 2.0 (the overlays use what both know). */
const KUBECTL = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0 ? 'kubectl'
  : ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((p) => existsSync(p)) ?? null;
const kubectlSkip = KUBECTL ? false : 'kubectl is not installed (.ci/run installs Debian\'s kubernetes-client)';

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; spec?: any; data?: Record<string, string> };

function render(overlay: string): Obj[] {
  const out = spawnSync(KUBECTL!, ['kustomize', join(ROOT, 'deploy/kubernetes/overlays', overlay)], { encoding: 'utf8' });
  assert.equal(out.status, 0, `kubectl kustomize ${overlay}: ${out.stderr}`);
  return yaml.loadAll(out.stdout).filter(Boolean) as Obj[];
}

/** Validates with kubernetes-models' schema for the object's apiVersion and kind (throws on a violation). */
async function validateSchema(o: Obj): Promise<void> {
  const [group, version] = o.apiVersion.includes('/') ? o.apiVersion.split('/') : [null, o.apiVersion];
  const models = await import(group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`);
  const Model = models[o.kind] as (new (data: unknown) => { validate(): void }) | undefined;
  assert.ok(Model, `no schema for ${o.apiVersion} ${o.kind}`);
  new Model(o).validate();
}

/**
 * The fields of `value` that its Kubernetes type does not have (kubernetes-models' schemas allow
 * unknown fields, which the API server drops or refuses: a misspelled securityContext field would
 * pass): walked with the attribute types of @kubernetes/client-node's models.
 */
function unknownFields(value: unknown, type: string, path: string): string[] {
  if (value === null || value === undefined) return [];
  const array = /^Array<(.+)>$/.exec(type);
  if (array) return (value as unknown[]).flatMap((v, i) => unknownFields(v, array[1]!, `${path}[${i}]`));
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) return Object.entries(value as object).flatMap(([k, v]) => unknownFields(v, map[1]!, `${path}.${k}`));
  const model = (k8s as unknown as Record<string, { getAttributeTypeMap?: () => { baseName: string; type: string }[] }>)[type];
  if (!model?.getAttributeTypeMap) return [];
  const attributes = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  return Object.entries(value as object).flatMap(([k, v]) =>
    attributes.has(k) ? unknownFields(v, attributes.get(k)!, `${path}.${k}`) : [`${path}.${k}`]);
}

const typeOf = (o: Obj) => `${/^v\d/.test(o.apiVersion.split('/').at(-1)!) ? o.apiVersion.split('/').at(-1)!.replace(/^v/, 'V') : ''}${o.kind}`;

const find = (objects: Obj[], kind: string, name?: string) => {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  assert.equal(found.length, 1, `one ${kind}${name ? ` ${name}` : ''} expected, found ${found.length}`);
  return found[0]!;
};

/** The rules both overlays keep, on one pod template: non-root, read-only root, writable mounts under /data and /tmp only. */
function podProblems(spec: any, what: string): string[] {
  const problems: string[] = [];
  const pod = spec.securityContext ?? {};
  if (!(pod.runAsNonRoot === true && pod.runAsUser > 0)) problems.push(`${what}: pod securityContext must be runAsNonRoot with a non-zero runAsUser`);
  if (spec.automountServiceAccountToken !== false) problems.push(`${what}: a service account token is mounted`);
  const volumes = new Map<string, any>((spec.volumes ?? []).map((v: any) => [v.name, v]));
  for (const c of spec.containers ?? []) {
    const sc = c.securityContext ?? {};
    if (sc.readOnlyRootFilesystem !== true) problems.push(`${what}/${c.name}: readOnlyRootFilesystem must be true`);
    if (sc.allowPrivilegeEscalation !== false) problems.push(`${what}/${c.name}: allowPrivilegeEscalation must be false`);
    if (sc.runAsNonRoot === false || sc.runAsUser === 0) problems.push(`${what}/${c.name}: runs as root`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) problems.push(`${what}/${c.name}: capabilities not dropped`);
    for (const m of c.volumeMounts ?? []) {
      if (!/^\/(data|tmp)(\/|$)/.test(m.mountPath)) problems.push(`${what}/${c.name}: writable mount outside /data and /tmp: ${m.mountPath}`);
      if (!volumes.has(m.name)) problems.push(`${what}/${c.name}: mount of an undeclared volume ${m.name}`);
    }
    if (!(c.volumeMounts ?? []).some((m: any) => m.mountPath === '/tmp')) problems.push(`${what}/${c.name}: no writable /tmp`);
  }
  return problems;
}

function serverProblems(objects: Obj[]): string[] {
  const problems: string[] = [];
  const deployment = find(objects, 'Deployment', 'svc');
  const spec = deployment.spec.template.spec;
  problems.push(...podProblems(spec, 'Deployment svc'));
  const c = spec.containers.find((x: any) => x.name === 'svc');
  if (JSON.stringify(c.args) !== '["serve"]') problems.push('the server container must run svc serve');
  if (c.livenessProbe?.httpGet?.path !== '/healthz') problems.push('liveness probe must be /healthz');
  if (c.readinessProbe?.httpGet?.path !== '/readyz') problems.push('readiness probe must be /readyz');
  const env = new Map<string, any>((c.env ?? []).map((e: any) => [e.name, e]));
  if (env.get('HOST')?.value !== '0.0.0.0') problems.push('HOST must be 0.0.0.0');
  if (!/^\/data(\/|$)/.test(env.get('SVC_DATA_DIR')?.value ?? '')) problems.push('SVC_DATA_DIR must be under /data');
  const labels = deployment.spec.template.metadata.labels;
  for (const service of objects.filter((o) => o.kind === 'Service')) {
    if (!Object.entries(service.spec.selector ?? {}).every(([k, v]) => labels[k] === v)) problems.push(`Service ${service.metadata.name} selects no server pod`);
  }
  for (const o of objects) {
    if (o.kind === 'Secret') problems.push(`a Secret with its values in the manifests: ${o.metadata.name}`);
    for (const key of Object.keys(o.kind === 'ConfigMap' ? o.data ?? {} : {})) if (SECRET_NAME.test(key)) problems.push(`a secret in the ConfigMap ${o.metadata.name}: ${key}`);
    if (o.kind !== 'Namespace' && o.metadata.namespace !== 'svc') problems.push(`${o.kind} ${o.metadata.name} is not in the namespace svc`);
  }
  for (const e of [...env.values()]) if (/SECRET|PASSWORD|TOKEN|DATABASE_URL/.test(e.name) && e.value !== undefined) problems.push(`${e.name} in clear`);
  return problems;
}

function singleProblems(objects: Obj[]): string[] {
  const problems = serverProblems(objects);
  const deployment = find(objects, 'Deployment', 'svc');
  if (deployment.spec.replicas !== 1) problems.push('single: one replica');
  if (deployment.spec.strategy?.type !== 'Recreate') problems.push('single: the Deployment must be recreated (one SQLite writer)');
  const spec = deployment.spec.template.spec;
  const data = spec.volumes.find((v: any) => v.name === spec.containers[0].volumeMounts.find((m: any) => m.mountPath === '/data')?.name);
  const claim = objects.find((o) => o.kind === 'PersistentVolumeClaim' && o.metadata.name === data?.persistentVolumeClaim?.claimName);
  if (!claim) problems.push('single: /data must be a PersistentVolumeClaim of the overlay');
  else if (!claim.spec.accessModes.includes('ReadWriteOnce')) problems.push('single: the data volume is ReadWriteOnce');
  if (spec.containers[0].env?.some((e: any) => e.name === 'DATABASE_URL')) problems.push('single: SQLite, no DATABASE_URL');
  return problems;
}

function haProblems(objects: Obj[]): string[] {
  const problems = serverProblems(objects);
  const deployment = find(objects, 'Deployment', 'svc');
  if (!(deployment.spec.replicas >= 2)) problems.push('ha: at least 2 replicas');
  const spec = deployment.spec.template.spec;
  const c = spec.containers.find((x: any) => x.name === 'svc');
  const env = new Map<string, any>((c.env ?? []).map((e: any) => [e.name, e]));
  for (const name of ['DATABASE_URL', 'SVC_SECRET_KEY']) {
    if (!env.get(name)?.valueFrom?.secretKeyRef) problems.push(`ha: ${name} must come from a Secret`);
  }
  const gitDir = env.get('SVC_GIT_DIR')?.value;
  const gitMount = c.volumeMounts.find((m: any) => m.mountPath === gitDir);
  const gitVolume = spec.volumes.find((v: any) => v.name === gitMount?.name);
  const gitClaim = objects.find((o) => o.kind === 'PersistentVolumeClaim' && o.metadata.name === gitVolume?.persistentVolumeClaim?.claimName);
  if (!gitClaim?.spec.accessModes.includes('ReadWriteMany')) problems.push('ha: SVC_GIT_DIR must be a shared ReadWriteMany volume');
  const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget');
  const labels = deployment.spec.template.metadata.labels;
  if (!pdb) problems.push('ha: no PodDisruptionBudget');
  else if (!Object.entries(pdb.spec.selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v)) problems.push('ha: the PodDisruptionBudget selects no server pod');
  const job = objects.find((o) => o.kind === 'Job');
  if (!job) problems.push('ha: no migration Job');
  else {
    const jobSpec = job.spec.template.spec;
    problems.push(...podProblems(jobSpec, 'Job'));
    if (JSON.stringify(jobSpec.containers[0].args) !== '["migrate"]') problems.push('ha: the Job must run svc migrate');
    if (jobSpec.containers[0].image !== c.image) problems.push('ha: the Job must run the image the Deployment runs');
    if (!jobSpec.containers[0].env?.some((e: any) => e.name === 'DATABASE_URL' && e.valueFrom?.secretKeyRef)) problems.push('ha: the Job needs DATABASE_URL from the Secret');
  }
  return problems;
}

describe('Kubernetes overlays', { skip: kubectlSkip }, () => {
  if (kubectlSkip) console.log(`# skipping the Kubernetes overlays: ${kubectlSkip}`);

  for (const [overlay, problems] of [['single', singleProblems], ['ha', haProblems]] as const) {
    test(`${overlay}: renders, every object validates, and keeps the rules`, async () => {
      const objects = render(overlay);
      assert.ok(objects.length >= 5, `${overlay} rendered ${objects.length} objects`);
      for (const o of objects) {
        await assert.doesNotReject(validateSchema(o), `${overlay}: ${o.kind} ${o.metadata.name}`);
        assert.deepEqual(unknownFields(o, typeOf(o), `${o.kind}/${o.metadata.name}`), [], `${overlay}: fields Kubernetes does not have`);
      }
      assert.deepEqual(problems(objects), []);
    });
  }

  test('the checks fail on manifests that break them', async () => {
    const ha = render('ha');
    const deployment = find(ha, 'Deployment', 'svc');
    const mutate = (change: (copy: Obj[]) => void) => {
      const copy = structuredClone(ha);
      change(copy);
      return copy;
    };
    const server = (copy: Obj[]) => find(copy, 'Deployment', 'svc').spec.template.spec;
    const cases: [string, Obj[], RegExp][] = [
      ['writable root', mutate((c) => { server(c).containers[0].securityContext.readOnlyRootFilesystem = false; }), /readOnlyRootFilesystem/],
      ['root', mutate((c) => { server(c).securityContext.runAsNonRoot = false; }), /runAsNonRoot/],
      ['no readiness on /readyz', mutate((c) => { server(c).containers[0].readinessProbe.httpGet.path = '/healthz'; }), /readiness probe/],
      ['no PDB', mutate((c) => c.splice(c.findIndex((o) => o.kind === 'PodDisruptionBudget'), 1)), /no PodDisruptionBudget/],
      ['no Job', mutate((c) => c.splice(c.findIndex((o) => o.kind === 'Job'), 1)), /no migration Job/],
      ['one replica', mutate((c) => { find(c, 'Deployment', 'svc').spec.replicas = 1; }), /at least 2 replicas/],
      ['git on RWO', mutate((c) => { find(c, 'PersistentVolumeClaim', 'svc-git').spec.accessModes = ['ReadWriteOnce']; }), /ReadWriteMany/],
      ['DATABASE_URL in clear', mutate((c) => { server(c).containers[0].env.find((e: any) => e.name === 'DATABASE_URL').valueFrom = undefined; server(c).containers[0].env.find((e: any) => e.name === 'DATABASE_URL').value = 'postgres://svc:pw@db/svc'; }), /DATABASE_URL/],
      ['a secret in the ConfigMap', mutate((c) => { find(c, 'ConfigMap', 'svc-config').data!.SVC_METRICS_TOKEN = 'x'.repeat(20); }), /a secret in the ConfigMap/],
      ['a mount outside /data', mutate((c) => { server(c).containers[0].volumeMounts.push({ name: 'tmp', mountPath: '/app/cache' }); }), /outside \/data/],
    ];
    for (const [what, objects, expected] of cases) {
      const found = haProblems(objects);
      assert.ok(found.some((p) => expected.test(p)), `${what}: expected ${expected}, got ${JSON.stringify(found)}`);
    }
    // the schema check and the unknown-field check each refuse a broken object
    const bad = structuredClone(deployment);
    bad.spec.replicas = 'three';
    await assert.rejects(validateSchema(bad), /replicas/);
    const typo = structuredClone(deployment);
    typo.spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem = true;
    assert.deepEqual(unknownFields(typo, typeOf(typo), 'Deployment'), ['Deployment.spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem']);
  });
});

// ---------------------------------------------------------------------------------------------
// compose

/** A value that is only `${VAR}` / `${VAR:?message}` / `${VAR:-default}` interpolation (no literal). */
const INTERPOLATED = /^\$\{[A-Z0-9_]+(:?[?-][^}]*)?\}$/;

function composeProblems(text: string): string[] {
  const problems: string[] = [];
  const doc = yaml.load(text) as { services?: Record<string, any>; volumes?: Record<string, unknown> };
  const services = doc.services ?? {};
  for (const name of ['svc', 'postgres', 'caddy']) if (!services[name]) problems.push(`no ${name} service`);
  const postgresImage = services.postgres?.image ?? '';
  if (!/^postgres:16\.\d+/.test(postgresImage)) problems.push(`postgres must be a pinned PostgreSQL 16 image, got ${postgresImage}`);
  for (const [name, service] of Object.entries(services)) {
    if (name !== 'migrate' && !service.healthcheck?.test) problems.push(`${name} has no health check`);
    for (const volume of service.volumes ?? []) {
      const source = String(typeof volume === 'string' ? volume.split(':')[0] : volume.source);
      if (!/^[./]/.test(source) && !(doc.volumes && source in doc.volumes)) problems.push(`${name} mounts ${source}, which is not a named volume`);
      if (/^[./]/.test(source) && !/:ro$/.test(String(volume))) problems.push(`${name} mounts the host path ${source} writable (named volumes only)`);
    }
    const environment: Record<string, unknown> = Array.isArray(service.environment)
      ? Object.fromEntries(service.environment.map((e: string) => [e.split('=')[0], e.split('=').slice(1).join('=')]))
      : service.environment ?? {};
    for (const [key, raw] of Object.entries(environment)) {
      const value = String(raw ?? '');
      if (SECRET_NAME.test(key)) {
        const password = /^[a-z]+:\/\/[^:/@]*:([^@]*)@/.exec(value)?.[1];
        if (password !== undefined ? !INTERPOLATED.test(password) : !INTERPOLATED.test(value)) problems.push(`${name}: ${key} has a value in clear (take it from .env: \${${key}})`);
      }
    }
  }
  if (!services.svc?.env_file) problems.push('svc takes no env_file (its secrets)');
  for (const v of ['pgdata', 'svcdata']) if (!doc.volumes || !(v in doc.volumes)) problems.push(`named volume ${v} missing`);
  if (!(services.svc?.volumes ?? []).some((v: unknown) => /:\/data$/.test(String(v)))) problems.push('svc keeps no volume at /data');
  if (services.svc?.depends_on?.postgres?.condition !== 'service_healthy') problems.push('svc must wait for a healthy postgres');
  for (const literal of [/sk_(live|test)_\w+/, /whsec_\w+/, /\b[0-9a-f]{64}\b/]) if (literal.test(text)) problems.push(`a secret-looking literal: ${literal}`);
  return problems;
}

/** Every setting in src/config*.ts whose name says it holds a secret. */
function secretSettings(): string[] {
  const names = new Set<string>();
  for (const file of readdirSync(join(ROOT, 'src')).filter((f) => /^config.*\.ts$/.test(f))) {
    for (const m of read(`src/${file}`).matchAll(/\b((?:SVC_[A-Z0-9_]+)|DATABASE_URL)\b/g)) if (SECRET_NAME.test(m[1]!) && !/^SVC_TEST_/.test(m[1]!)) names.add(m[1]!);
  }
  return [...names].sort();
}

describe('deploy/compose.yaml', () => {
  const text = read('deploy/compose.yaml');

  test('svc, PostgreSQL 16 and Caddy with health checks, named volumes, no secret in clear', () => {
    assert.deepEqual(composeProblems(text), []);
    assert.match(read('deploy/Caddyfile'), /reverse_proxy svc:8080/);
  });

  test('the checks fail on a compose file that breaks them', () => {
    const cases: [string, string, RegExp][] = [
      ['a password in clear', text.replace(/POSTGRES_PASSWORD: \$\{[^}]*\}/, 'POSTGRES_PASSWORD: hunter2'), /POSTGRES_PASSWORD has a value in clear/],
      ['a URL with a password', text.replace(/postgres:\/\/svc:\$\{[^}]*\}@/, 'postgres://svc:hunter2@'), /DATABASE_URL has a value in clear/],
      ['the key in clear', text.replace(/SVC_SECRET_KEY: \$\{[^}]*\}/, `SVC_SECRET_KEY: ${'ab'.repeat(32)}`), /SVC_SECRET_KEY has a value in clear|secret-looking/],
      ['no health check', text.replace(/(\n  caddy:[\s\S]*?)\n    healthcheck:\n(      .*\n)+/, '$1\n'), /caddy has no health check/],
      ['a bind mount', text.replace('svcdata:/data\n    depends_on:\n      postgres:\n        condition: service_healthy\n      migrate', './data:/data\n    depends_on:\n      postgres:\n        condition: service_healthy\n      migrate'), /host path/],
      ['PostgreSQL 15', text.replace(/image: postgres:16[^\n]*/, 'image: postgres:15'), /PostgreSQL 16/],
    ];
    for (const [what, broken, expected] of cases) {
      assert.notEqual(broken, text, `${what}: the compose file no longer has what this case breaks`);
      const found = composeProblems(broken);
      assert.ok(found.some((p) => expected.test(p)), `${what}: expected ${expected}, got ${JSON.stringify(found)}`);
    }
  });

  test('.env.example names every secret setting svc reads', () => {
    const example = read('deploy/.env.example');
    const named = new Set([...example.matchAll(/^#?\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!));
    const secrets = secretSettings();
    assert.ok(secrets.includes('SVC_SECRET_KEY') && secrets.includes('SVC_STRIPE_WEBHOOK_SECRET') && secrets.includes('SVC_OIDC_CLIENT_SECRET'), secrets.join(' '));
    // DATABASE_URL is made in compose.yaml from POSTGRES_PASSWORD (which .env.example names)
    assert.deepEqual(secrets.filter((s) => !named.has(s) && !(s === 'DATABASE_URL' && named.has('POSTGRES_PASSWORD') && example.includes('DATABASE_URL'))), []);
    for (const line of example.split('\n').filter((l) => /^[A-Z0-9_]+=/.test(l))) {
      const [name, value] = [line.split('=')[0]!, line.split('=').slice(1).join('=')];
      if (SECRET_NAME.test(name)) assert.equal(value, '', `${name} has a value in .env.example`);
    }
    // every ${VAR} compose.yaml needs is in the example
    for (const m of text.matchAll(/\$\{([A-Z0-9_]+)/g)) assert.ok(named.has(m[1]!), `.env.example lacks ${m[1]}`);
  });
});

// ---------------------------------------------------------------------------------------------
// systemd

describe('deploy/systemd/svc.service', () => {
  const unit = read('deploy/systemd/svc.service');
  const settings = (text: string) => {
    const out = new Map<string, string[]>();
    let section = '';
    for (const line of text.split('\n')) {
      const header = /^\[(\w+)\]$/.exec(line.trim());
      if (header) section = header[1]!;
      const kv = /^(\w+)=(.*)$/.exec(line);
      if (kv) out.set(`${section}.${kv[1]}`, [...(out.get(`${section}.${kv[1]}`) ?? []), kv[2]!]);
    }
    return out;
  };

  function unitProblems(text: string): string[] {
    const s = settings(text);
    const one = (k: string) => s.get(k)?.at(-1);
    const problems: string[] = [];
    if (!/\/svc serve$/.test(one('Service.ExecStart') ?? '')) problems.push('ExecStart must be svc serve');
    if (!one('Service.User') || one('Service.User') === 'root') problems.push('runs as root');
    if (!one('Service.EnvironmentFile')) problems.push('no EnvironmentFile (the secrets)');
    for (const e of s.get('Service.Environment') ?? []) if (/(SECRET|PASSWORD|TOKEN|API_KEY|DATABASE_URL)[A-Z_]*=/.test(e)) problems.push(`a secret in the unit: ${e.split('=')[0]}`);
    const dataDir = (s.get('Service.Environment') ?? []).map((e) => /^SVC_DATA_DIR=(.*)$/.exec(e)?.[1]).find(Boolean);
    if (dataDir !== `/var/lib/${one('Service.StateDirectory')}`) problems.push('SVC_DATA_DIR must be the StateDirectory');
    for (const [k, v] of [['NoNewPrivileges', 'yes'], ['ProtectSystem', 'strict'], ['ProtectHome', 'yes'], ['PrivateTmp', 'yes'], ['RestartPreventExitStatus', '2'], ['Restart', 'on-failure']]) {
      if (one(`Service.${k}`) !== v) problems.push(`${k}=${v} missing`);
    }
    if (one('Service.MemoryDenyWriteExecute') === 'yes') problems.push('MemoryDenyWriteExecute=yes stops V8');
    if (one('Install.WantedBy') !== 'multi-user.target') problems.push('not wanted by multi-user.target');
    return problems;
  }

  test('runs svc serve, hardened, its secrets in an EnvironmentFile', () => {
    assert.deepEqual(unitProblems(unit), []);
    assert.match(unitProblems(unit.replace('NoNewPrivileges=yes', 'NoNewPrivileges=no')).join(), /NoNewPrivileges/);
    assert.match(unitProblems(unit.replace('User=svc', 'User=root')).join(), /runs as root/);
    assert.match(unitProblems(unit.replace('Environment=SVC_GIT_DIR', 'Environment=SVC_SECRET_KEY=00\nEnvironment=SVC_GIT_DIR')).join(), /a secret in the unit/);
    // the agent's unit (cloud-init, src/modules/machines/join-tokens.ts) restarts the same way
    const agent = read('src/modules/machines/join-tokens.ts');
    for (const line of ['Restart=on-failure', 'RestartSec=5', 'EnvironmentFile=']) {
      assert.ok(agent.includes(line) && unit.includes(line), line);
    }
  });

  const analyze = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((p) => existsSync(p));
  test('systemd-analyze knows every section and key', { skip: analyze ? false : 'no systemd-analyze here' }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-unit-'));
    try {
      for (const [name, text] of [['svc.service', unit], ['broken.service', unit.replace('ProtectClock=yes', 'ProtectClok=yes')]] as const) {
        writeFileSync(join(dir, name), text);
      }
      const check = (name: string) => spawnSync(analyze!, ['verify', join(dir, name)], { encoding: 'utf8', timeout: 60_000 });
      const good = check('svc.service');
      assert.doesNotMatch(`${good.stdout}${good.stderr}`, /Unknown (key|section)|Invalid|Failed to parse/);
      const broken = check('broken.service');
      assert.match(`${broken.stdout}${broken.stderr}`, /Unknown key 'ProtectClok'/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------------------------------------
// the tarball

describe('npm pack', () => {
  test('the tarball holds dist/, the executable and npm-shrinkwrap.json (the lockfile), and leaves none in the checkout', () => {
    // A copy of the package without its `prepare` (the build: dist/ here is a stand-in), packed.
    const dir = mkdtempSync(join(tmpdir(), 'svc-pack-'));
    try {
      const pkg = JSON.parse(read('package.json'));
      assert.equal(pkg.scripts.prepack, 'node scripts/shrinkwrap.js');
      assert.equal(pkg.scripts.postpack, 'node scripts/shrinkwrap.js --remove');
      delete pkg.scripts.prepare;
      writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg));
      cpSync(join(ROOT, 'package-lock.json'), join(dir, 'package-lock.json'));
      for (const file of ['scripts/shrinkwrap.js', 'bin/svc.js', 'src/cli/generated/commands.json']) {
        mkdirSync(join(dir, file, '..'), { recursive: true });
        cpSync(join(ROOT, file), join(dir, file));
      }
      mkdirSync(join(dir, 'dist/app'), { recursive: true });
      for (const file of ['dist/main.js', 'dist/main.js.map', 'dist/app/index.html']) writeFileSync(join(dir, file), '//\n');
      const out = spawnSync('npm', ['pack', '--json', '--ignore-scripts=false'], { cwd: dir, encoding: 'utf8', env: { ...process.env, npm_config_loglevel: 'error' } });
      assert.equal(out.status, 0, out.stderr);
      const [packed] = JSON.parse(out.stdout) as { filename: string; files: { path: string }[] }[];
      const files = packed!.files.map((f) => f.path).sort();
      assert.deepEqual(files, ['bin/svc.js', 'dist/app/index.html', 'dist/main.js', 'npm-shrinkwrap.json', 'package.json', 'src/cli/generated/commands.json']);
      // the shrinkwrap in the tarball is the lockfile: `npm ci --omit=dev` there installs the locked production packages
      const shrinkwrap = spawnSync('tar', ['-xzOf', join(dir, packed!.filename), 'package/npm-shrinkwrap.json'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
      assert.equal(shrinkwrap.status, 0, shrinkwrap.stderr);
      assert.deepEqual(JSON.parse(shrinkwrap.stdout), JSON.parse(read('package-lock.json')));
      assert.ok(!existsSync(join(dir, 'npm-shrinkwrap.json')), 'postpack removes the shrinkwrap');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    assert.ok(read('.gitignore').split('\n').includes('npm-shrinkwrap.json'));
  });
});
