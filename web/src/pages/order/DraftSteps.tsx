// The customer's step of an order draft, by its phase (API.md 8.7): choose a workspace, wait for
// the cluster (or join a server of their own), configure, pay, wait for the install, then the
// delivered URLs. Every write goes through the page's Verb: the draft's etag in if-match, a 409
// reloaded and offered again. All calls are the person's own (personalClient: no svc-context).
import { useState } from 'preact/hooks';
import { ok, personalClient, type Schemas } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { usePoll } from '../../lib/usePoll.ts';
import { useSession } from '../../lib/session.tsx';
import { roleAtLeast } from '../../lib/roles.ts';
import { priceWords, type CustomerDraft } from '../../lib/commerce.ts';
import { Section } from '../../components/Page.tsx';
import { Fields } from '../../components/Fields.tsx';
import { CopyValue } from '../../components/CopyValue.tsx';
import { Time } from '../../components/Time.tsx';
import { OperationSteps } from '../../components/OperationLive.tsx';
import { SelectField, TextField, violationOf } from '../../components/Form.tsx';
import type { Verb } from './DraftPage.tsx';
import { ConfigureStep } from './ConfigureStep.tsx';

const NEW = 'new';

function WorkspaceStep(props: { draft: CustomerDraft; verb: Verb }) {
  const { workspaces, refreshWorkspaces } = useSession();
  const mine = workspaces.filter((w) => roleAtLeast(w.role, 'admin'));
  const [choice, setChoice] = useState(NEW);
  const [name, setName] = useState('');
  const id = props.draft.id;

  async function submit(e: Event) {
    e.preventDefault();
    const body = choice === NEW ? { kind: 'new' as const, name: name.trim() } : { kind: 'existing' as const, workspace_id: choice };
    await props.verb.run((etag) => ok(personalClient.POST('/v1/order_drafts/{id}:selectWorkspace', { params: { path: { id }, header: { 'if-match': etag } }, body })));
    if (choice === NEW) await refreshWorkspaces();
  }

  return (
    <Section title="Where should it run?">
      <form class="form" onSubmit={submit}>
        <p class="muted">The installation goes into a workspace of yours, where you are owner or admin. A new one is made for you if you like.</p>
        <SelectField label="Install in" value={choice} onValue={setChoice} options={[...mine.map((w) => [w.id, w.name] as [string, string]), [NEW, 'A new workspace…']]} />
        {choice === NEW && <TextField label="Name of the new workspace" required maxLength={100} value={name} onValue={setName} error={violationOf(props.verb.error, 'body.name')} />}
        <button class="primary" type="submit" disabled={props.verb.busy || (choice === NEW && !name.trim())}>
          Continue
        </button>
      </form>
    </Section>
  );
}

function Waiting(props: { title: string; children: string }) {
  return (
    <Section title={props.title}>
      <p aria-live="polite">{props.children}</p>
      <progress aria-label={props.title} />
    </Section>
  );
}

function BootstrapStep(props: { draft: CustomerDraft; verb: Verb }) {
  const [made, setMade] = useState<Schemas['CreatedWorkerBootstrap'] | null>(null);
  const id = props.draft.id;
  const create = () =>
    props.verb.run(async (etag) => {
      const r = await ok(personalClient.POST('/v1/order_drafts/{id}:createWorkerBootstrap', { params: { path: { id }, header: { 'if-match': etag } }, body: {} }));
      setMade(r.worker_bootstrap);
      return r.order_draft as CustomerDraft;
    });
  return (
    <Section title="Join your server">
      <p>This order runs on a server of your own. Create the join command, then run it on the server (Linux, with root).</p>
      {made ? (
        <CopyValue label="Command" value={made.command} once>
          <p>
            It works until <Time at={made.expires_at} until />.
          </p>
        </CopyValue>
      ) : null}
      <button type="button" class={made ? undefined : 'primary'} disabled={props.verb.busy} onClick={() => void create()}>
        {made ? 'Create a new command' : 'Create join command'}
      </button>
      <p class="muted" aria-live="polite">
        {props.draft.server_joined ? 'Your server joined.' : 'Waiting for your server to join…'}
      </p>
    </Section>
  );
}

function PaymentStep(props: { draft: CustomerDraft; verb: Verb; confirming: boolean }) {
  const d = props.draft;
  const id = d.id;
  const price = priceWords({ unit_amount: d.amount, currency: d.currency, interval: d.interval });
  if (props.confirming || d.payment_completed) return <Waiting title="Confirming your payment">Waiting for the payment provider to confirm your payment…</Waiting>;
  const pay = () =>
    props.verb.run(async (etag) => {
      const session = await ok(personalClient.POST('/v1/order_drafts/{id}/checkout_sessions', { params: { path: { id }, header: { 'if-match': etag } } }));
      location.assign(session.url);
      return undefined;
    });
  return (
    <Section title="Payment">
      <Fields rows={[['Amount', price]]} />
      <p class="muted">You pay on the payment provider's page and come back here afterwards.</p>
      <button type="button" class="primary" disabled={props.verb.busy} onClick={() => void pay()}>
        Pay {price}
      </button>
    </Section>
  );
}

/** The install operation's steps, read in the customer's workspace (svc-context named here). */
function InstallStep(props: { draft: CustomerDraft }) {
  const { install_operation_id: opId, workspace_id: ws } = props.draft;
  const op = useApi(
    () => (opId && ws ? ok(personalClient.GET('/v1/operations/{id}', { params: { path: { id: opId }, header: { 'svc-context': ws } } })) : Promise.resolve(undefined)),
    [opId, ws],
  );
  usePoll(op.reload, 1000, Boolean(opId && !op.data?.done));
  return (
    <Section title="Installing">
      <p aria-live="polite">Your order is paid. The package is being installed in your workspace.</p>
      <progress aria-label="Installing" />
      {op.data && <OperationSteps op={op.data} />}
    </Section>
  );
}

function DoneStep(props: { draft: CustomerDraft }) {
  const delivery = props.draft.delivery;
  const urls = delivery?.urls ?? [];
  return (
    <Section title="Delivered">
      <p>Your installation is running.</p>
      {urls.length > 0 ? (
        <ul class="plain-list" aria-label="URLs">
          {urls.map((u) => (
            <li key={u.route_key}>
              <a class="url" href={u.url} rel="noreferrer" target="_blank">
                {u.url}
              </a>
            </li>
          ))}
        </ul>
      ) : (
        <p class="muted">It has no URLs.</p>
      )}
      {delivery?.install_id && (
        <p>
          <a href={`/installs/${delivery.install_id}`}>Open the installation</a>
        </p>
      )}
    </Section>
  );
}

export function CustomerStep(props: { draft: CustomerDraft; verb: Verb; confirmingPayment: boolean }) {
  const { draft, verb } = props;
  switch (draft.status) {
    case 'workspace':
      return <WorkspaceStep draft={draft} verb={verb} />;
    case 'compute':
      return <Waiting title="Preparing your cluster">A cluster is being set up for your installation. This takes a moment.</Waiting>;
    case 'compute_bootstrap':
      return <BootstrapStep draft={draft} verb={verb} />;
    case 'configure':
      return <ConfigureStep draft={draft} verb={verb} />;
    case 'payment':
      return <PaymentStep draft={draft} verb={verb} confirming={props.confirmingPayment} />;
    case 'install':
      return <InstallStep draft={draft} />;
    case 'done':
      return <DoneStep draft={draft} />;
    default:
      return null;
  }
}
