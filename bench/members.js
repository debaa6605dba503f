// The scenario of the kernel benchmark: one workspace with 50 members and a workspace API token,
// built through the real API of a running server (users are created in the database first, as
// `svc admin create-user` does, because the kernel has no sign-up route).
import { randomBytes } from 'node:crypto';

export const MEMBER_COUNT = 50;

export async function call(base, method, path, token, body, headers = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${text}`);
  return { body: JSON.parse(text), text };
}

/** Creates `count` users directly through the services of the built app (dist/), before the server starts. */
export async function createUsers(env, count) {
  const { loadConfig } = await import('../dist/config.js');
  const { createSystem } = await import('../dist/system.js');
  const config = loadConfig({ ...env, LOG_LEVEL: 'silent' });
  const { services, close } = await createSystem(config, { runtime: false });
  try {
    const ids = [];
    for (let i = 0; i < count; i++) {
      const user = await services.users.createUser({ email: `member${i}-${randomBytes(3).toString('hex')}@bench.test`, password: 'bench password' });
      ids.push(user.id);
    }
    return ids;
  } finally {
    await close();
  }
}

/** Workspace of the bootstrap owner plus `userIds` as members, an API token, and the members page it reads. */
export async function buildScenario(base, ownerToken, userIds) {
  const ws = (await call(base, 'POST', '/v1/workspaces', ownerToken, { name: 'Bench' })).body;
  for (const id of userIds) await call(base, 'POST', `/v1/workspaces/${ws.id}/members`, ownerToken, { user_id: id, role: 'member' });
  const token = (await call(base, 'POST', '/v1/api_tokens', ownerToken, { name: 'bench' }, { 'svc-context': ws.id })).body.token;
  const path = `/v1/workspaces/${ws.id}/members`;
  const page = await call(base, 'GET', path, token);
  if (page.body.data.length !== userIds.length + 1) throw new Error(`expected ${userIds.length + 1} members, got ${page.body.data.length}`);
  return { workspaceId: ws.id, apiToken: token, path, bodyText: page.text };
}
