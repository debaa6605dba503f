// The API served in-process, through the app's own routes (routing, validation and auth as over a
// socket, no listening socket needed): what the local machine agents, the local payment provider's
// webhook deliveries and agent tool calls call. Services are built before the app that serves them,
// so the composition root (src/system.ts) creates this first and binds it once the app is built;
// until then a call fails with a clear error instead of reading a slot that is still empty.
import lightMyRequest, { type InjectOptions, type Response } from 'light-my-request';
import type { App } from './http.js';

export interface InProcessApi {
  /** one request through the app's routes, as app.inject makes it */
  inject(options: InjectOptions): Promise<Response>;
}

/** The API and the one function that binds it to the app; only the composition root holds `bind`. */
export interface InProcessApiBinding {
  api: InProcessApi;
  bind(app: App): void;
}

export function createInProcessApi(): InProcessApiBinding {
  let routing: App['routing'] | null = null;
  return {
    api: {
      inject(options) {
        if (!routing) return Promise.reject(new Error('the in-process API is not served yet: createSystem binds it once the app is built'));
        return lightMyRequest(routing, options);
      },
    },
    bind(app) {
      if (routing) throw new Error('the in-process API is bound already');
      routing = app.routing;
    },
  };
}
