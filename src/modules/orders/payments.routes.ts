// The payment providers' two ways in (API.md 8.7): their signed webhooks, verified on the raw body
// before anything parses it and taken in exactly once by event id; and the page the customer's
// browser returns to after paying, which re-reads the session at the provider (a redirect proves
// nothing) and then opens the draft in the web app. Both dispatch by purpose: a plan's session
// (SVC_BILLING=payments) goes to the subscriptions service, and its return opens the plan page.
import { Type } from 'typebox';
import { PAYMENT_PROVIDERS, type PaymentProviderName } from '../../config-commerce.js';
import { WebhookSignatureError } from '../../drivers/payments/driver.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { responses, StringEnum, type App } from '../../platform/http.js';
import { registerRawJsonBodies } from '../../platform/validation.js';
import type { Services } from '../../services.js';

const ProviderParams = Type.Object({ provider: StringEnum(PAYMENT_PROVIDERS, { description: 'local or stripe' }) });
const WEBHOOK_BODY_LIMIT = 512 * 1024;

export const WebhookAnswer = Type.Object(
  {
    received: Type.Boolean({ description: 'always true: the event was verified and recorded' }),
    outcome: Type.String({ description: 'applied, or why it changed nothing: duplicate (seen before), late (a state it cannot go back to), stale, refunded, unknown_session, ignored' }),
  },
  {
    $id: 'PaymentWebhookReceipt', description: 'The event was taken in (a 2xx tells the provider not to send it again).',
    examples: [{ received: true, outcome: 'applied' }],
  },
);

export async function paymentRoutes(app: App, s: Pick<Services, 'checkout' | 'payments' | 'planCheckouts'>): Promise<void> {
  await app.register(async (hooks: App) => {
    registerRawJsonBodies(hooks, WEBHOOK_BODY_LIMIT);
    hooks.post('/v1/payment_webhooks/:provider', {
      config: { auth: 'none' },
      bodyLimit: WEBHOOK_BODY_LIMIT,
      schema: {
        tags: ['payments'], operationId: 'receivePaymentWebhook', summary: 'Receive a payment provider\'s event',
        description:
          'Called by the payment provider, not by people. `stripe`: register `{public_url}/v1/payment_webhooks/stripe` in Stripe with ' +
          'the events checkout.session.completed, checkout.session.async_payment_succeeded, checkout.session.expired, invoice.paid, ' +
          'invoice.payment_failed and customer.subscription.deleted; its `Stripe-Signature` is checked on the raw body with SVC_STRIPE_WEBHOOK_SECRET ' +
          '(5 minutes of tolerance). `local`: the built-in provider posts here itself, signed with `svc-signature` the same way. A bad ' +
          'or missing signature, or an old timestamp, is 400 and changes nothing. Each event is taken in once by its id and forward ' +
          'only: a repeated, late or out-of-order event changes nothing and is answered 200 with its outcome. For a paid plan\'s ' +
          'subscription (SVC_BILLING=payments): invoice.paid of a renewal moves the paid period on, invoice.payment_failed notifies the ' +
          'workspace\'s owners and admins, and customer.subscription.deleted of a subscription the service did not end itself lowers the ' +
          'workspace to free at once.',
        params: ProviderParams,
        body: Type.String({
          maxLength: WEBHOOK_BODY_LIMIT, description: 'the provider\'s event, as JSON (verified on these exact bytes)',
          examples: ['{"id":"evt_1Q2w3E4r5T6y7U8i","object":"event","type":"checkout.session.completed","created":1767225900,"data":{"object":{"id":"cs_test_a1B2c3","object":"checkout.session","status":"complete","payment_status":"paid"}}}'],
        }),
        response: responses({ 200: WebhookAnswer }, [400]),
      },
    }, async (request) => {
      const name = request.params.provider as PaymentProviderName;
      const provider = s.payments.get(name);
      if (!provider) throw notFound(`payment provider ${name}`);
      let event;
      try {
        const headers: Record<string, string | undefined> = {};
        for (const [k, v] of Object.entries(request.headers)) headers[k.toLowerCase()] = Array.isArray(v) ? v[0] : v;
        event = provider.verifyWebhook(Buffer.from(request.body as string, 'utf8'), headers);
      } catch (err) {
        if (err instanceof WebhookSignatureError) throw new ApiError('INVALID_ARGUMENT', `webhook rejected: ${err.message}`, { reason: 'WEBHOOK_SIGNATURE_INVALID' });
        throw err;
      }
      const outcome = await s.checkout.takePaymentEvent(name, event);
      request.log.info({ provider: name, event_id: event.id, event_type: event.type, outcome }, 'payment event');
      return { received: true, outcome };
    });
  });

  app.get('/checkout/return/:provider', {
    config: { auth: 'none' },
    schema: {
      hide: true,
      params: ProviderParams,
      querystring: Type.Object({ session_id: Type.String({ minLength: 1, maxLength: 255 }) }, { additionalProperties: false }),
    },
  }, async (request, reply) => {
    const name = request.params.provider as PaymentProviderName;
    const provider = s.payments.get(name);
    const session = provider ? await s.checkout.findSession(name, request.query.session_id) : undefined;
    // A plan's session (SVC_BILLING=payments) is the subscriptions service's: re-read, taken there, back to the plan page.
    const plan = provider && !session ? await s.planCheckouts.findBySession(name, request.query.session_id) : undefined;
    if (provider && plan) {
      try {
        await s.planCheckouts.takeState(name, await provider.getCheckout(request.query.session_id));
      } catch (err) {
        request.log.warn({ err: (err as Error).message, provider: name }, 'return page could not re-read the plan checkout session');
      }
      return reply.code(303).header('location', `/settings/plan?checkout=${plan.id}`).send();
    }
    if (!provider || !session) throw notFound('checkout session');
    try {
      await s.checkout.takeCheckoutState(name, await provider.getCheckout(session.provider_session_id));
    } catch (err) {
      // The webhook still brings the payment; the draft's page shows where it stands.
      request.log.warn({ err: (err as Error).message, provider: name }, 'return page could not re-read the checkout session');
    }
    return reply.code(303).header('location', `/order_drafts/${session.draft_id}?checkout=returned`).send();
  });
}
