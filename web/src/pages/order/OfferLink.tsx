// An offer's link, /i/{short_hash} (API.md 8.7): what the seller offers, read without a credential
// (GET /v1/offers:resolve), for anyone holding the link. Signed out, the visitor signs in or makes
// an account here and stays on this page; signed in, "Order" resumes their open draft of the offer
// (GET /v1/order_drafts?offer=, as the customer: no svc-context) or starts one (idempotency-key),
// then opens the wizard at /order_drafts/{id}.
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ok, personalClient } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { idempotencyKey } from '../../lib/idempotency.ts';
import { priceWords, type ResolvedOffer } from '../../lib/commerce.ts';
import { Page, Section } from '../../components/Page.tsx';
import { Fields } from '../../components/Fields.tsx';
import { Time } from '../../components/Time.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { useAction } from '../../components/Form.tsx';
import { SignInForm } from '../SignIn.tsx';
import { SignUpForm } from './SignUp.tsx';

const ENDED = ['cleaning_up', 'terminated'];

/** The customer's draft of the offer to go on with, or a new one. */
async function draftFor(offerId: string, key: string): Promise<string> {
  const mine = await ok(personalClient.GET('/v1/order_drafts', { params: { query: { offer: offerId, limit: 20 } } }));
  const open = mine.data.find((d) => !ENDED.includes(d.status));
  if (open) return open.id;
  const created = await ok(personalClient.POST('/v1/offers/{id}/order_drafts', { params: { path: { id: offerId }, header: { 'idempotency-key': key } } }));
  return created.id;
}

function OfferFacts(props: { offer: ResolvedOffer }) {
  const o = props.offer;
  const free = o.commercial_mode === 'non_billable_test';
  return (
    <Section title="The offer">
      <Fields
        rows={[
          ['Seller', o.seller.workspace_name],
          ['Price', priceWords(o.pricing, free)],
          ['Package', `${o.package.name} ${o.package.version}`],
          ['For', o.customer_display_name ?? undefined],
          ['Your server', o.compute_mode === 'bring_your_own' ? 'You join a server of your own to run it' : undefined],
          ['Link works until', o.expires_at ? <Time at={o.expires_at} until /> : undefined],
        ]}
      />
      {free && <p class="muted">A test order: nothing is charged.</p>}
      {o.notes && <p class="offer-notes">{o.notes}</p>}
      {o.restricted && <p class="muted small">Only some email addresses may order.</p>}
    </Section>
  );
}

export function OfferLink(props: { hash: string; signedIn: boolean; onSignedIn?: () => Promise<void> }) {
  const offer = useApi(() => ok(personalClient.GET('/v1/offers:resolve', { params: { query: { short_hash: props.hash } } })), [props.hash]);
  const [mode, setMode] = useState<'sign-in' | 'sign-up'>('sign-up');
  const [key] = useState(idempotencyKey);
  const action = useAction();
  const { route } = useLocation();
  const o = offer.data;

  if (offer.error) {
    const gone = offer.error.code === 'NOT_FOUND';
    return (
      <Page title={gone ? 'This offer is not available' : 'Offer'}>
        {gone ? <p>The link is unknown, or the offer was withdrawn or has expired. Ask the seller for a new link.</p> : <ErrorNotice error={offer.error} title="The offer could not be loaded." />}
      </Page>
    );
  }
  if (!o) return <p aria-busy="true">Loading…</p>;

  async function order() {
    const id = await action.run(() => draftFor(o!.offer_id, key));
    if (id) route(`/order_drafts/${id}`);
  }

  return (
    <Page title={o.title} subtitle={<>Offered by {o.seller.workspace_name}</>}>
      <OfferFacts offer={o} />
      {props.signedIn ? (
        <div class="card">
          <ErrorNotice error={action.error} title="The order could not be started." />
          {!o.redeemable && <p class="muted">Every order this offer allows is taken. If you started one, Order takes you back to it.</p>}
          <button type="button" class="primary" disabled={action.busy} onClick={() => void order()}>
            {action.busy ? 'Starting your order…' : 'Order'}
          </button>
        </div>
      ) : (
        <>
          <p>To order, sign in or create an account. You come back to this page afterwards.</p>
          <div class="actions" role="group" aria-label="Account">
            <button type="button" aria-pressed={mode === 'sign-up'} onClick={() => setMode('sign-up')}>
              I am new here
            </button>
            <button type="button" aria-pressed={mode === 'sign-in'} onClick={() => setMode('sign-in')}>
              I have an account
            </button>
          </div>
          {mode === 'sign-up' ? <SignUpForm onSignedIn={props.onSignedIn!} offer={props.hash} /> : <SignInForm onSignedIn={props.onSignedIn!} title="Sign in" headingLevel={2} />}
        </>
      )}
    </Page>
  );
}

/** The route of a signed-in person (inside the app's frame). */
export function OfferLinkPage(props: { hash?: string; path?: string }) {
  return <OfferLink hash={props.hash!} signedIn />;
}
