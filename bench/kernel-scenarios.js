// The scenarios of the kernel benchmark (bench/run.js), each a route of the real server that the
// benchmark holds against a bare Fastify route answering the same bytes (same method and body).
// Setup goes through the real API of a running server, with the bootstrap owner's token.
import { randomBytes } from 'node:crypto';
import { buildScenario, call, MEMBER_COUNT } from './members.js';

export const SECRET_COUNT = 30;
// 1 KiB of printable text, as a password file or a PEM would be (bench/secrets.js reads the same size).
const SECRET_VALUE = randomBytes(768).toString('base64');

/** A package of one Deployment and one Service behind one route: what an install read shows. */
const MANIFEST = {
  routes: [{ route_key: 'web', protocol: 'http', service: { name: 'web', port: 80 } }],
  resources: [
    {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' },
      spec: {
        replicas: '{{ values.replicas }}', selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] } },
      },
    },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } },
  ],
};
const INPUT_SCHEMA = {
  type: 'object',
  properties: { replicas: { type: 'integer', minimum: 1, maximum: 10, default: 2 } },
  additionalProperties: false,
};

/**
 * The table of scenarios: `budget` is the least req/s ratio svc / bare of the median round.
 * `setup(base, ownerToken, userIds)` returns { method, path, token }; the body the bare route
 * serves is the one the real route answered to that request during setup.
 */
export const SCENARIOS = [
  {
    name: 'members',
    describe: `GET /v1/workspaces/{id}/members (${MEMBER_COUNT} members)`,
    budget: 0.5,
    async setup(base, ownerToken, userIds) {
      const s = await buildScenario(base, ownerToken, userIds);
      return { method: 'GET', path: s.path, token: s.apiToken };
    },
  },
  {
    name: 'secrets',
    describe: `GET /v1/secrets?limit=50 (${SECRET_COUNT} secrets)`,
    budget: 0.5,
    async setup(base, ownerToken) {
      const { as, token } = await workspaceWithToken(base, ownerToken, 'Bench secrets');
      for (let i = 0; i < SECRET_COUNT; i++) {
        await as('POST', '/v1/secrets', { name: `bench-${i}`, kind: i % 2 ? 'api_key' : 'oci_registry', value: `${SECRET_VALUE.slice(0, 64)}-${i}`, labels: { team: 'bench', n: String(i) } });
      }
      return { method: 'GET', path: '/v1/secrets?limit=50', token };
    },
  },
  {
    name: 'quotas',
    describe: 'GET /v1/quotas (a workspace with a cluster, an install and a secret)',
    budget: 0.5,
    async setup(base, ownerToken) {
      const { as, token } = await workspaceWithToken(base, ownerToken, 'Bench quotas');
      await installIn(as);
      await as('POST', '/v1/secrets', { name: 'one', kind: 'api_key', value: 'x'.repeat(32) });
      return { method: 'GET', path: '/v1/quotas', token };
    },
  },
  {
    name: 'install',
    describe: 'GET /v1/installs/{id} (an install on a local cluster)',
    budget: 0.5,
    async setup(base, ownerToken) {
      const { as, token } = await workspaceWithToken(base, ownerToken, 'Bench install');
      const installId = await installIn(as);
      return { method: 'GET', path: `/v1/installs/${installId}`, token };
    },
  },
  {
    name: 'access',
    describe: 'POST /v1/secrets/{id}/versions/latest:access (a 1 KiB value; an audit event per access)',
    budget: 0.4,
    async setup(base, ownerToken) {
      const { as, token } = await workspaceWithToken(base, ownerToken, 'Bench access', 'admin');
      const secret = (await as('POST', '/v1/secrets', { name: 'bench-1k', kind: 'api_key', value: SECRET_VALUE })).body;
      for (let v = 2; v <= 3; v++) await as('POST', `/v1/secrets/${secret.id}/versions`, { value: `${SECRET_VALUE.slice(0, 1000)}-${v}` });
      return { method: 'POST', path: `/v1/secrets/${secret.id}/versions/latest:access`, token };
    },
  },
];

async function workspaceWithToken(base, ownerToken, name, role = 'member') {
  const ws = (await call(base, 'POST', '/v1/workspaces', ownerToken, { name })).body.id;
  const token = (await call(base, 'POST', '/v1/api_tokens', ownerToken, { name: 'bench', role }, { 'svc-context': ws })).body.token;
  // Setup writes need more than a member's rights: they go with the owner's token in the workspace.
  const as = (method, path, body) => call(base, method, path, ownerToken, body, { 'svc-context': ws });
  return { ws, token, as };
}

/** A local cluster, a package and one install of it, waited for; returns the install's id. */
async function installIn(as) {
  const clusterOp = (await as('POST', '/v1/clusters', { name: 'bench' })).body;
  const cluster = await as('POST', `/v1/operations/${clusterOp.id}:wait?timeout=30`);
  if (cluster.body.state !== 'SUCCEEDED') throw new Error(`cluster.create ended ${cluster.body.state}`);
  const pkg = (await as('POST', '/v1/packages', { name: 'bench-app', description: 'benchmark package' })).body;
  await as('POST', `/v1/packages/${pkg.id}/versions`, { semver: '1.0.0', input_schema: INPUT_SCHEMA, manifest: MANIFEST });
  const op = (await as('POST', '/v1/installs', { package_id: pkg.id, package_version_pin: { kind: 'latest' }, cluster_id: clusterOp.owner_id, initial_values: { replicas: 2 } })).body;
  const done = await as('POST', `/v1/operations/${op.id}:wait?timeout=30`);
  if (done.body.state !== 'SUCCEEDED') throw new Error(`install.create ended ${done.body.state}: ${JSON.stringify(done.body.error)}`);
  return op.owner_id;
}
