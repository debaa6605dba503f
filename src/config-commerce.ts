// The commerce settings (API.md 8.7), read by loadConfig (src/config.ts) and nowhere else: which
// payment provider checkout sessions go to, Stripe's keys and address, and the draft expiry notice.
// Keys are non-enumerable properties, so a config that reaches a log line or JSON.stringify shows
// none; no message here quotes a key.
import { ConfigError } from './config.js';

export const PAYMENT_PROVIDERS = ['local', 'stripe'] as const;
export type PaymentProviderName = (typeof PAYMENT_PROVIDERS)[number];

export interface StripeSettings {
  /** SVC_STRIPE_SECRET_KEY (sk_live_…, sk_test_… or rk_…); required with SVC_PAYMENT_PROVIDER=stripe */
  secretKey: string;
  /** SVC_STRIPE_WEBHOOK_SECRET (whsec_…): the signing secret of the endpoint registered for /v1/payment_webhooks/stripe */
  webhookSecret: string;
  /**
   * SVC_STRIPE_API_URL (default https://api.stripe.com): where the stripe package sends its calls;
   * tests point it at a local stand-in server
   */
  apiUrl: string;
}

export interface CommerceConfig {
  /** SVC_PAYMENT_PROVIDER: local (default; the service's own checkout page) or stripe */
  paymentProvider: PaymentProviderName;
  /** present when paymentProvider is stripe */
  stripe: StripeSettings | null;
  /** checkout sessions stay open this long, capped by the draft's ttl (SVC_CHECKOUT_TTL_S, default 1800; Stripe's minimum is 1800) */
  checkoutTtlSeconds: number;
  /** the customer is told a draft is about to expire this long before (SVC_ORDER_DRAFT_EXPIRY_NOTICE_S, default 900) */
  draftExpiryNoticeSeconds: number;
  /** the local provider's subscriptions renew after this many seconds per interval month (SVC_LOCAL_PAYMENTS_MONTH_S, default 30 days) */
  localMonthSeconds: number;
}

type NumberSetting = (name: string, fallback: number, min: number, max: number) => number;

function stripeSettings(env: NodeJS.ProcessEnv): StripeSettings {
  const secretKey = (env.SVC_STRIPE_SECRET_KEY ?? '').trim();
  const webhookSecret = (env.SVC_STRIPE_WEBHOOK_SECRET ?? '').trim();
  if (!/^(sk|rk)_(test|live)_[A-Za-z0-9]+$/.test(secretKey)) {
    throw new ConfigError('SVC_PAYMENT_PROVIDER=stripe needs SVC_STRIPE_SECRET_KEY (sk_test_…, sk_live_… or rk_…; its value is not shown)');
  }
  if (!/^whsec_[A-Za-z0-9+/=]+$/.test(webhookSecret)) {
    throw new ConfigError('SVC_PAYMENT_PROVIDER=stripe needs SVC_STRIPE_WEBHOOK_SECRET (whsec_…, the signing secret of the webhook endpoint; its value is not shown)');
  }
  const apiUrl = (env.SVC_STRIPE_API_URL || 'https://api.stripe.com').replace(/\/+$/, '');
  const url = URL.canParse(apiUrl) ? new URL(apiUrl) : null;
  if (!url || !/^https?:$/.test(url.protocol) || url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    throw new ConfigError(`SVC_STRIPE_API_URL must be an http(s) origin without path, credentials or query, got "${apiUrl}"`);
  }
  const settings: StripeSettings = { secretKey, webhookSecret, apiUrl };
  Object.defineProperty(settings, 'secretKey', { enumerable: false });
  Object.defineProperty(settings, 'webhookSecret', { enumerable: false });
  return settings;
}

export function parseCommerce(env: NodeJS.ProcessEnv, numberSetting: NumberSetting): CommerceConfig {
  const provider = env.SVC_PAYMENT_PROVIDER || 'local';
  if (!(PAYMENT_PROVIDERS as readonly string[]).includes(provider)) {
    throw new ConfigError(`SVC_PAYMENT_PROVIDER must be one of ${PAYMENT_PROVIDERS.join(', ')}, got "${provider}"`);
  }
  return {
    paymentProvider: provider as PaymentProviderName,
    stripe: provider === 'stripe' ? stripeSettings(env) : null,
    checkoutTtlSeconds: numberSetting('SVC_CHECKOUT_TTL_S', 1800, 60, 24 * 3600),
    draftExpiryNoticeSeconds: numberSetting('SVC_ORDER_DRAFT_EXPIRY_NOTICE_S', 900, 0, 24 * 3600),
    localMonthSeconds: numberSetting('SVC_LOCAL_PAYMENTS_MONTH_S', 30 * 24 * 3600, 1, 366 * 24 * 3600),
  };
}
