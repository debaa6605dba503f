// The conversation of a chat, turn by turn: the person's message, the agent's text as it is
// written, each tool call as a compact row that opens to show its code and result (a question and
// an approval as cards to act on), then how the turn ended and what it used. It is not itself a
// live region: the page announces whole messages separately (useChat's `said`).
import type { ChatTurn, Conversation as Conv, Item } from '../../lib/chat.ts';
import { isTerminal, toolLine, toolOutcome } from '../../lib/chat.ts';
import { STATE_WORDS, usageWords } from '../../lib/agents.ts';
import { StateBadge } from '../../components/StateBadge.tsx';
import { RevealedText } from '../../components/RevealedText.tsx';
import { ApprovalCard, QuestionCard, type Deciders } from './Decisions.tsx';

export interface Viewer extends Deciders {
  meId: string;
  /** what the person who wrote the messages is called ("You", or their e-mail for an admin reading) */
  person: string;
  agentName: string;
}

function pretty(value: unknown): string {
  if (typeof value === 'string') {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2) ?? '';
}

type ToolItem = Extract<Item, { kind: 'tool' }>;

function ToolDetails(props: { item: ToolItem }) {
  const { item } = props;
  const code = typeof item.arguments.code === 'string' ? item.arguments.code : null;
  const rest = Object.fromEntries(Object.entries(item.arguments).filter(([k]) => k !== 'code' && k !== 'summary'));
  return (
    <>
      {code !== null && (
        <>
          <h4>Code</h4>
          <pre class="code-block" tabIndex={0}>
            <RevealedText text={code} />
          </pre>
        </>
      )}
      {code === null && Object.keys(rest).length > 0 && (
        <>
          <h4>Arguments</h4>
          <pre class="code-block" tabIndex={0}>
            {pretty(rest)}
          </pre>
        </>
      )}
      {item.done && (
        <>
          <h4>Result</h4>
          <pre class="code-block" tabIndex={0}>
            {pretty(item.result)}
          </pre>
        </>
      )}
    </>
  );
}

function ToolRow(props: { item: ToolItem }) {
  const { item } = props;
  const outcome = item.done ? toolOutcome(item.result) : null;
  const status = outcome ? (outcome.ok ? 'Done' : outcome.words) : 'Running…';
  return (
    <details class={`tool ${outcome ? (outcome.ok ? 'tool-ok' : 'tool-failed') : 'tool-running'}`}>
      <summary>
        <span class="tool-line">{toolLine(item)}</span> <span class="tool-status">{status}</span>
      </summary>
      <div class="tool-body">
        <ToolDetails item={item} />
      </div>
    </details>
  );
}

function ItemView(props: { item: Item; turn: ChatTurn; viewer: Viewer }) {
  const { item, turn, viewer } = props;
  const ended = isTerminal(turn.state);
  if (item.kind === 'text') {
    return (
      <div class="msg msg-agent" aria-busy={item.streaming || undefined}>
        <span class="speaker">{viewer.agentName}</span>
        <p class="prose">{item.content}</p>
      </div>
    );
  }
  if (item.kind === 'approval') {
    return <ApprovalCard approval={item.approval} pending={turn.state === 'WAITING_FOR_PERMISSION'} ended={ended} deciders={viewer} meId={viewer.meId} />;
  }
  if (item.question) {
    return <QuestionCard turnId={turn.id} callId={item.callId} question={item.question} pending={turn.state === 'WAITING_FOR_INPUT'} ended={ended} mine={viewer.mine} />;
  }
  if (item.approval) {
    const outcome = item.done ? toolOutcome(item.result) : null;
    return (
      <ApprovalCard approval={item.approval} pending={turn.state === 'WAITING_FOR_PERMISSION'} ended={ended} deciders={viewer} meId={viewer.meId}>
        {item.done && (
          <details class="tool">
            <summary>
              <span class="tool-line">What it did</span> <span class="tool-status">{outcome!.ok ? 'Done' : outcome!.words}</span>
            </summary>
            <pre class="code-block" tabIndex={0}>
              {pretty(item.result)}
            </pre>
          </details>
        )}
      </ApprovalCard>
    );
  }
  return <ToolRow item={item} />;
}

function TurnEnd(props: { turn: ChatTurn }) {
  const t = props.turn;
  return (
    <>
      {t.failure && (
        <div class="notice notice-error">
          <p>
            <strong>The turn failed{t.failure.code ? ` (${t.failure.code})` : ''}.</strong> {t.failure.message}
          </p>
        </div>
      )}
      <p class="turn-meta small muted">
        {t.state !== 'COMPLETED' && !t.failure && (
          <>
            <StateBadge state={t.state} label={STATE_WORDS[t.state]} />{' '}
          </>
        )}
        {t.usage && <span>This turn: {usageWords(t.usage).join(' · ')}</span>}
      </p>
    </>
  );
}

export function Conversation(props: { conversation: Conv; viewer: Viewer }) {
  const { turns } = props.conversation;
  return (
    <ol class="chat" aria-label="Conversation">
      {turns.map((t) => (
        <li key={t.id} class="turn">
          <div class="msg msg-person">
            <span class="speaker">{props.viewer.person}</span>
            <p class="prose">{t.message}</p>
          </div>
          {t.items.map((item) => (
            <ItemView key={item.key} item={item} turn={t} viewer={props.viewer} />
          ))}
          <TurnEnd turn={t} />
        </li>
      ))}
    </ol>
  );
}
