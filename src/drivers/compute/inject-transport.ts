// The local compute provider's transport: the in-process machine agents' calls served by the app
// itself through an inject (the in-process API, or app.inject: routing, validation and auth as over
// a socket), so the agents need no listening socket and work in tests. Only the path is used: the agents' server URL is the
// public one, which may sit behind a proxy that strips a path prefix.
import type { AgentFetch } from '../../machine-agent/agent.js';
import type { InProcessApi } from '../../platform/in-process-api.js';

export function injectTransport(app: InProcessApi): { fetch: AgentFetch } {
  return {
    async fetch(url, init) {
      const { pathname, search } = new URL(url);
      const at = pathname.indexOf('/v1/');
      const res = await app.inject({ method: init.method, url: `${at >= 0 ? pathname.slice(at) : pathname}${search}`, headers: init.headers, payload: init.body });
      return {
        status: res.statusCode,
        headers: {
          get: (name: string) => {
            const value = res.headers[name.toLowerCase()];
            return value === undefined ? null : Array.isArray(value) ? value.join(', ') : String(value);
          },
        },
        text: async () => res.body,
      };
    },
  };
}
