// The payment providers of this service, built once from config (API.md 8.7) into the orders
// module's map by name. The local provider always exists, whichever one is configured: sessions
// made before a switch to Stripe keep their hosted page and their webhooks (and the return page
// can still re-read them). Its periodic work (expiring, renewing, delivering) becomes the orders
// sweep's provider chores.
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { deriveKey } from '../../platform/crypto.js';
import type { PaymentProvider } from './driver.js';
import type { DeliverEvent } from './local-events.js';
import { createLocalPaymentProvider, type LocalPaymentProvider } from './local.js';
import { createStripePaymentProvider } from './stripe.js';

/** The key the local provider signs its events with (and verifies them with at its webhook route). */
export function localPaymentsSigningKey(config: Config): Buffer {
  return deriveKey(config.secretKey, 'local-payments-webhook');
}

/**
 * Puts `local` (always) and `stripe` (when configured) into `providers`, and the local provider's
 * sweep into `chores`; answers the local provider (its hosted page needs it).
 */
export function installPaymentProviders(deps: {
  db: Db;
  config: Config;
  deliver: DeliverEvent;
  providers: Map<string, PaymentProvider>;
  chores: { run: () => Promise<void> };
}): LocalPaymentProvider {
  const { db, config } = deps;
  const local = createLocalPaymentProvider({
    db, publicUrl: config.publicUrl, signingKey: localPaymentsSigningKey(config), deliver: deps.deliver, monthSeconds: config.commerce.localMonthSeconds,
  });
  deps.providers.set('local', local);
  if (config.commerce.stripe) deps.providers.set('stripe', createStripePaymentProvider(config.commerce.stripe));
  deps.chores.run = async () => {
    await local.expireDue();
    await local.renewDue();
    await local.deliverDue();
  };
  return local;
}
