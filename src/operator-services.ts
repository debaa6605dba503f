// The services over config's database for one operator command (`svc admin users`, `mail`,
// `workspaces set-plan`): stages 1 and 2 of the composition root (src/system.ts) without the app
// and the runtime. Such a command serves no request and runs no job, and building the app (and
// loading its routes) was more than half of what each one cost. The in-process API stays unbound:
// a service that called it would fail with that API's own clear error; none of these does.
import type { Config } from './config.js';
import { loadStripeProvider } from './drivers/payments/registry.js';
import { createInProcessApi } from './platform/in-process-api.js';
import { createLogger } from './platform/logging.js';
import { createServices, type Services } from './services.js';
import { openSystemDatabase } from './system-database.js';

export async function openOperatorServices(config: Config): Promise<{ services: Services; close(): Promise<void> }> {
  const logger = createLogger(config.logLevel, undefined, { format: config.observability.logFormat });
  const database = await openSystemDatabase(config, logger, undefined);
  try {
    const services = createServices({
      db: database.db, dialect: database.dialect, config, logger, api: createInProcessApi().api, stripe: await loadStripeProvider(config),
    });
    return {
      services,
      async close() {
        await services.localCompute.stop();
        await database.close();
      },
    };
  } catch (err) {
    await database.close();
    throw err;
  }
}
