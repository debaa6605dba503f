// The app in this process on a free port, and one headless Debian Chromium driven by
// playwright-core to browse it: for the server-rendered pages' browser tests (/device, /checkout).
// The public URL is the listening address, so links and redirects the pages make are followable.
import type { Browser } from 'playwright-core';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import type { Services } from '../src/services.js';
import { createSystem, type SystemOptions } from '../src/system.js';
import { createTestDatabase, freePort, testConfig } from './harness.js';
import { chromiumMissing, openBrowser } from './chromium.js';

/** Why the browser tests skip here, or null when Chromium is installed (.ci/run installs it). */
export const chromiumSkipReason = chromiumMissing;

export interface ChromiumApp {
  base: string;
  services: Services;
  browser: Browser;
  close(): Promise<void>;
}

/** Starts the app (no job runtime) and a browser (see test/chromium.ts). */
export async function startChromiumApp(opts: Pick<SystemOptions, 'paymentDelivery'> = {}): Promise<ChromiumApp> {
  const database = await createTestDatabase({ migrated: true });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const config = testConfig(database, { SVC_PUBLIC_URL: base, HOST: '127.0.0.1', PORT: String(port) });
  const handle = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 5 });
  await migrateToLatest(handle.db);
  const { app, services } = await createSystem(config, { database: handle, runtime: false, ...opts });
  await app.listen({ port, host: '127.0.0.1' });
  const browser = await openBrowser();
  return {
    base, services, browser,
    close: async () => {
      await browser.close();
      await app.close();
      await handle.close();
      await database.drop();
    },
  };
}
