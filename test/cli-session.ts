// What the CLI tests that talk to one `svc serve` as one owner in one workspace share: `svc` run as a
// child process with that server, token and workspace, and the API called directly. The server and
// workspace are made in `before()`, so `at` is read at each call.
import assert from 'node:assert/strict';
import { runSvc, type Finished } from './processes.js';

export interface CliTarget {
  url: string;
  token: string;
  ws: string;
  /** XDG_CONFIG_HOME of the child processes */
  configHome: string;
}

export function cliSession(at: () => CliTarget) {
  const cli = (args: string[], input?: string): Promise<Finished> => {
    const t = at();
    return runSvc(args, { XDG_CONFIG_HOME: t.configHome, SVC_API_URL: t.url, SVC_TOKEN: t.token, SVC_CONTEXT: t.ws }, 120_000, input);
  };
  const ok = (r: Finished) => {
    assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}`);
    return r;
  };
  const json = (r: Finished) => JSON.parse(ok(r).stdout);
  /** The API as the owner in the workspace: status, the body's text exactly, and parsed (null when empty). */
  const api = async (method: string, path: string, body?: unknown) => {
    const t = at();
    const res = await fetch(`${t.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${t.token}`, 'svc-context': t.ws, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, text, body: text ? JSON.parse(text) : null };
  };
  return { cli, ok, json, api };
}
