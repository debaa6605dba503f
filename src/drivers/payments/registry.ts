// The payment providers of this service, built once from config (API.md 8.7). The local provider
// always exists, whichever one is configured: sessions made before a switch to Stripe keep their
// hosted page and their webhooks (and the return page can still re-read them). New checkout
// sessions go to `current`.
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { deriveKey } from '../../platform/crypto.js';
import type { PaymentProvider } from './driver.js';
import type { DeliverEvent } from './local-events.js';
import { createLocalPaymentProvider, type LocalPaymentProvider } from './local.js';
import { createStripePaymentProvider } from './stripe.js';

export interface PaymentProviders {
  /** the built-in provider (its page, its sweep: deliverDue, renewDue, expireDue) */
  local: LocalPaymentProvider;
  /** the configured provider (SVC_PAYMENT_PROVIDER): new checkout sessions go here */
  current: PaymentProvider;
  /** a provider by the name stored with a session or in a webhook path; undefined when not set up */
  get(name: string): PaymentProvider | undefined;
}

/** The key the local provider signs its events with (and its webhook route verifies). */
export function localPaymentsSigningKey(config: Config): Buffer {
  return deriveKey(config.secretKey, 'local-payments-webhook');
}

export function createPaymentProviders(deps: { db: Db; config: Config; deliver: DeliverEvent }): PaymentProviders {
  const { db, config } = deps;
  const local = createLocalPaymentProvider({
    db, publicUrl: config.publicUrl, signingKey: localPaymentsSigningKey(config), deliver: deps.deliver, monthSeconds: config.commerce.localMonthSeconds,
  });
  const byName = new Map<string, PaymentProvider>([['local', local]]);
  if (config.commerce.stripe) byName.set('stripe', createStripePaymentProvider(config.commerce.stripe));
  const current = byName.get(config.commerce.paymentProvider);
  if (!current) throw new Error(`payment provider ${config.commerce.paymentProvider} is not set up`);
  return { local, current, get: (name) => byName.get(name) };
}
