// What a turn waits on a person for, in the chat: an approval card (the exact code that would run,
// Approve, or Reject with a reason) and the agent's question (its choices as buttons, or a free
// answer). A pending card reads its record first (GET the approval request, GET the turn) and sends
// the etag read there in if-match; a 409 reads it again and offers to send the same decision again.
// The outcome arrives as events (approval.resolved, input.received): the card shows it from there.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { client, ok } from '../../lib/api.ts';
import { idempotencyKey } from '../../lib/idempotency.ts';
import { useApi } from '../../lib/useApi.ts';
import type { Approval, Question } from '../../lib/chat.ts';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { TextArea, TextField, useAction } from '../../components/Form.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';
import { RevealedText } from '../../components/RevealedText.tsx';

/** Who may decide: `mine` (the session is the viewer's) for a CHANGE; `admin` for a member's TURN. */
export interface Deciders {
  mine: boolean;
  admin: boolean;
}

function decidedWords(a: Approval, meId: string): string {
  const who = a.resolvedBy === meId ? 'you' : a.resolvedBy ?? 'someone';
  if (a.decision === 'APPROVE') return `Approved by ${who}.`;
  return `Rejected by ${who}${a.reason ? `: “${a.reason}”` : '.'}`;
}

export function ApprovalCard(props: { approval: Approval; pending: boolean; ended: boolean; deciders: Deciders; meId: string; children?: ComponentChildren }) {
  const a = props.approval;
  const canDecide = a.kind === 'TURN' ? props.deciders.admin : props.deciders.mine;
  const live = props.pending && canDecide;
  const request = useApi(() => (live ? ok(client.GET('/v1/approval_requests/{id}', { params: { path: { id: a.id } } })) : Promise.resolve(undefined)), [a.id, live]);
  const action = useAction();
  const [rejecting, setRejecting] = useState(false);
  const [reason, setReason] = useState('');
  const [last, setLast] = useState<'APPROVE' | 'REJECT' | null>(null);
  const [sent, setSent] = useState(false);
  const headingId = `approval-${a.id}`;

  async function decide(decision: 'APPROVE' | 'REJECT') {
    const current = request.data;
    if (!current) return;
    setLast(decision);
    const body = decision === 'REJECT' && reason.trim() ? { decision, reason: reason.trim() } : { decision };
    const done = await action.run(() =>
      ok(client.POST('/v1/approval_requests/{id}:resolve', { params: { path: { id: a.id }, header: { 'if-match': current.etag, 'idempotency-key': idempotencyKey() } }, body })),
    );
    if (done) setSent(true);
  }

  const code = request.data?.code ?? a.code;
  return (
    <section class={`decision card ${a.decision ? 'decided' : ''}`} aria-labelledby={headingId}>
      <h3 id={headingId}>{a.kind === 'TURN' ? 'This turn needs an owner’s or admin’s approval' : <>Approve this change? <RevealedText text={a.summary} /></>}</h3>
      {a.kind === 'TURN' ? (
        <p class="muted">The agent may change things without asking, so a member’s message waits for an owner or admin before it runs.</p>
      ) : (
        <>
          <p class="muted small">
            This exact code runs, as {props.deciders.mine ? 'you' : 'the person who started the chat'}, only if it is approved (invisible characters are shown as
            markers like <span class="invisible-char">⟨U+202E⟩</span>):
          </p>
          <pre class="code-block" tabIndex={0} aria-label="Code of the change">
            <RevealedText text={code ?? ''} />
          </pre>
        </>
      )}
      {a.decision ? (
        <p class={a.decision === 'APPROVE' ? 'outcome good' : 'outcome bad'}>{decidedWords(a, props.meId)}</p>
      ) : props.ended ? (
        <p class="outcome muted">Not decided: the turn ended first.</p>
      ) : !canDecide ? (
        <p class="outcome muted">Waiting for {a.kind === 'TURN' ? 'an owner or admin' : 'the person who started this chat'} to decide.</p>
      ) : sent ? (
        <p class="outcome muted">Sent; the agent goes on…</p>
      ) : (
        <>
          <Conflict error={action.error} what="The approval request" onReload={() => request.reload()} onReapply={() => last && void decide(last)} busy={action.busy} />
          {!isConflict(action.error) && <ErrorNotice error={action.error ?? request.error} title="The decision was not recorded." />}
          {rejecting && <TextArea label="Why (told to the agent)" rows={2} value={reason} onValue={setReason} hint="Optional, at most 2,000 characters." />}
          <div class="actions">
            {!rejecting && (
              <button type="button" class="primary" disabled={action.busy || !request.data} onClick={() => void decide('APPROVE')}>
                Approve
              </button>
            )}
            {rejecting ? (
              <>
                <button type="button" class="danger" disabled={action.busy || !request.data} onClick={() => void decide('REJECT')}>
                  Reject change
                </button>
                <button type="button" onClick={() => setRejecting(false)}>
                  Back
                </button>
              </>
            ) : (
              <button type="button" class="danger" disabled={action.busy} onClick={() => setRejecting(true)}>
                Reject…
              </button>
            )}
          </div>
        </>
      )}
      {props.children}
    </section>
  );
}

export function QuestionCard(props: { turnId: string; callId: string; question: Question; pending: boolean; ended: boolean; mine: boolean }) {
  const q = props.question;
  const live = props.pending && props.mine;
  const turn = useApi(() => (live ? ok(client.GET('/v1/agent_turns/{id}', { params: { path: { id: props.turnId } } })) : Promise.resolve(undefined)), [props.turnId, live]);
  const action = useAction();
  const [text, setText] = useState('');
  const [last, setLast] = useState<string | null>(null);
  const [sent, setSent] = useState(false);
  const headingId = `question-${props.turnId}-${props.callId}`;

  async function answer(content: string) {
    const current = turn.data;
    if (!current || !content.trim()) return;
    setLast(content);
    const done = await action.run(() => ok(client.POST('/v1/agent_turns/{id}:respond', { params: { path: { id: props.turnId }, header: { 'if-match': current.etag } }, body: { content } })));
    if (done) setSent(true);
  }

  return (
    <section class="decision card" aria-labelledby={headingId}>
      <h3 id={headingId}>The agent asks: {q.question}</h3>
      {q.answer !== undefined ? (
        <p class="outcome">
          Answered: <strong>{q.answer}</strong>
        </p>
      ) : props.ended ? (
        <p class="outcome muted">Not answered: the turn ended first.</p>
      ) : !props.mine ? (
        <p class="outcome muted">Waiting for the person who started this chat to answer.</p>
      ) : sent ? (
        <p class="outcome muted">Sent; the agent goes on…</p>
      ) : (
        <>
          <Conflict error={action.error} what="The turn" onReload={() => turn.reload()} onReapply={() => last && void answer(last)} busy={action.busy} />
          {!isConflict(action.error) && <ErrorNotice error={action.error ?? turn.error} title="The answer was not sent." />}
          {q.choices.length > 0 && (
            <div class="actions choices" role="group" aria-label="Choices">
              {q.choices.map((c) => (
                <button key={c} type="button" disabled={action.busy || !turn.data} onClick={() => void answer(c)}>
                  {c}
                </button>
              ))}
            </div>
          )}
          <form
            class="answer"
            onSubmit={(e) => {
              e.preventDefault();
              void answer(text);
            }}
          >
            <TextField label={q.choices.length ? 'Or answer in your words' : 'Your answer'} maxLength={50_000} value={text} onValue={setText} />
            <button type="submit" disabled={action.busy || !turn.data || !text.trim()}>
              Send answer
            </button>
          </form>
        </>
      )}
    </section>
  );
}
