// The payment providers of this service, built once from config (API.md 8.7), by name, for the
// orders module. The local provider always exists, whichever one is configured: sessions
// made before a switch to Stripe keep their hosted page and their webhooks (and the return page
// can still re-read them). Its periodic work (expiring, renewing, delivering) becomes the orders
// sweep's provider chores.
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { deriveKey } from '../../platform/crypto.js';
import type { PaymentProvider } from './driver.js';
import type { DeliverEvent } from './local-events.js';
import { createLocalPaymentProvider, type LocalPaymentProvider } from './local.js';

/** The key the local provider signs its events with (and verifies them with at its webhook route). */
export function localPaymentsSigningKey(config: Config): Buffer {
  return deriveKey(config.secretKey, 'local-payments-webhook');
}

/** The payment providers by name, the local one (its hosted page needs it) and its periodic work. */
export interface PaymentProviders {
  /** `local` (always) and `stripe` (when configured); tests may replace one */
  providers: Map<string, PaymentProvider>;
  local: LocalPaymentProvider;
  /** the local provider's sweep: expiring, renewing and delivering (the orders sweep runs it) */
  runChores(): Promise<void>;
}

/**
 * The Stripe provider when Stripe is configured, else null. The `stripe` package (over 200 modules)
 * is imported only then: a service without it, and every test, starts without loading it.
 */
export async function loadStripeProvider(config: Config): Promise<PaymentProvider | null> {
  if (!config.commerce.stripe) return null;
  const { createStripePaymentProvider } = await import('./stripe.js');
  return createStripePaymentProvider(config.commerce.stripe);
}

export function createPaymentProviders(deps: { db: Db; config: Config; deliver: DeliverEvent; stripe: PaymentProvider | null }): PaymentProviders {
  const { db, config } = deps;
  const local = createLocalPaymentProvider({
    db, publicUrl: config.publicUrl, signingKey: localPaymentsSigningKey(config), deliver: deps.deliver, monthSeconds: config.commerce.localMonthSeconds,
  });
  const providers = new Map<string, PaymentProvider>([['local', local]]);
  if (deps.stripe) providers.set('stripe', deps.stripe);
  return {
    providers,
    local,
    async runChores() {
      await local.expireDue();
      await local.renewDue();
      await local.deliverDue();
    },
  };
}
