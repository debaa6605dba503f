// Builds every service once from the database and config; routes and workers receive this.
import type { Config } from './config.js';
import type { Db, Dialect } from './db/database.js';
import { deriveKey } from './platform/crypto.js';
import { IdempotencyStore } from './platform/idempotency.js';
import { CursorCodec } from './platform/pagination.js';
import { createSessionService } from './modules/sessions/sessions.service.js';
import { createDeviceService } from './modules/device/device.service.js';
import { createApiTokenService } from './modules/tokens/tokens.service.js';
import { createUserService } from './modules/users/users.service.js';
import type { GrantHandler } from './modules/oauth/oauth.errors.js';
import { createOAuthService } from './modules/oauth/oauth.service.js';
import { createWorkspaceService } from './modules/workspaces/workspaces.service.js';

export function createServices(deps: { db: Db; dialect: Dialect; config: Config }) {
  const { db, config } = deps;
  const cursors = new CursorCodec(deriveKey(config.secretKey, 'cursor'));
  const sessions = createSessionService({ db });
  return {
    db,
    dialect: deps.dialect,
    config,
    cursors,
    idempotency: new IdempotencyStore(db),
    users: createUserService({ db }),
    sessions,
    device: createDeviceService({ db, config, sessions }),
    workspaces: createWorkspaceService({ db, cursors }),
    apiTokens: createApiTokenService({ db, cursors }),
    oauth: createOAuthService({ db, config, cursors }),
    /** POST /oauth/token handlers by grant_type; modules register theirs */
    grants: new Map<string, GrantHandler>(),
  };
}

export type Services = ReturnType<typeof createServices>;
