// `svc chat <agent> [message]` (API.md 8.6): a conversation with an agent in the terminal. The
// agent is found by id or name, the session is the newest one of yours with that agent that can
// take a turn (or --session, or a new one with --new), and each message is a turn followed on the
// event stream to its end (chat-turn.ts). With a message: one turn, and the exit code says how it
// ended. Without: each line of stdin is a turn, until Ctrl-D or the end of the pipe.
//
// This file is loaded with the program (for --help); what talks to the server is imported when the command runs.
import { CliError, EXIT } from './errors.js';
import { loadSettings } from './config.js';
import { terminalText, type Output } from './output.js';
import type { Api } from './http.js';
import type { TurnOutcome, TurnSettings } from './chat-turn.js';

export interface ChatFlags {
  session?: string;
  new?: boolean;
  approve?: boolean;
  reject?: boolean;
  json?: boolean;
  svcContext?: string;
}

export const CHAT_HELP = `
With a message, one turn; without, a conversation: each line you type is a
message, Ctrl-D ends it. The model's text is printed as it is written (stdout);
tool calls, approval requests and questions appear on stderr and are answered
at the prompt. Ctrl-C cancels the running turn on the server and exits 130.

Session: the newest session of yours with the agent that is not archived and
not waiting on a person (ACTIVE, COMPLETED, FAILED or CANCELLED) goes on, so the
agent remembers the conversation; --new starts another, --session picks one
(and when its latest turn waits for an approval or an answer, shows that turn
and asks first).

Without a terminal:
  - with a message, stdin is not read: --approve or --reject answers approval
    requests; without them, or when the agent asks a question, the command
    stops with exit 1 and the turn waits (answer it in the web app, or with
    svc approval-requests resolve / svc agent-turns respond)
  - without a message, stdin is the conversation: each line a message, and the
    line after a prompt its answer (y approves)

Exit codes: 0 the turn COMPLETED, 1 it FAILED or was cancelled elsewhere (or
waits for an answer the command could not give), 2 usage, 3-6 as every
command, 130 Ctrl-C (the turn is cancelled). Without a message: the last turn's.

Examples:
  svc chat ops "how many installs are there?"
  svc chat ops --new
  svc chat agt_… "create a secret named db-password with value …" --approve
  printf 'deploy web\\nstaging\\n' | svc chat ops --json`;

/** Session states a new turn can follow: not archived, and not a turn waiting on a person (a new turn would queue behind it). */
const REUSABLE = new Set(['ACTIVE', 'COMPLETED', 'FAILED', 'CANCELLED']);
/** How far back the sessions are searched for one of yours. */
const SESSION_PAGES = 5;

interface AgentBody {
  id: string;
  name: string;
  state: string;
}

/** The agent by id (agt_...), else by name: exact, else the one whose name differs only in case; an enabled one before an archived one. */
async function findAgent(api: Api, ref: string, header: Record<string, string>): Promise<AgentBody> {
  if (/^agt_/.test(ref)) return (await api.call('GET', '/v1/agents/{id}', { path: { id: ref }, header, auth: 'workspace' })).body as AgentBody;
  const all: AgentBody[] = [];
  let cursor: string | null = null;
  do {
    const page = (await api.call('GET', '/v1/agents', { query: { limit: 100, ...(cursor ? { cursor } : {}) }, header, auth: 'workspace' })).body as { data: AgentBody[]; next_cursor: string | null };
    all.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  const exact = all.filter((a) => a.name === ref);
  const named = exact.length ? exact : all.filter((a) => a.name.toLowerCase() === ref.toLowerCase());
  const enabled = named.filter((a) => a.state === 'ENABLED');
  const found = enabled.length ? enabled : named;
  if (found.length === 1) return found[0]!;
  if (found.length === 0) throw new CliError(`no agent named "${ref}" (\`svc agents list\` shows them)`, EXIT.ERROR);
  throw new CliError(`${found.length} agents are named "${ref}": ${found.map((a) => a.id).join(', ')}; give the id`, EXIT.USAGE);
}

/** The id sessions record as their creator for this credential: the user, or the API token; null when it cannot be told (an OAuth client). */
async function actorId(api: Api, header: Record<string, string>): Promise<string | null> {
  try {
    if (api.settings.tokenKind === 'api_token') {
      const tokens = (await api.call('GET', '/v1/api_tokens', { query: { limit: 100 }, header, auth: 'workspace' })).body as { data: { id: string; prefix: string }[] };
      return tokens.data.find((t) => api.settings.token!.startsWith(t.prefix))?.id ?? null;
    }
    return ((await api.call('GET', '/v1/me', { auth: 'user' })).body as { id: string }).id;
  } catch (err) {
    if (err instanceof CliError && err.exitCode === EXIT.PERMISSION_DENIED) return null;
    throw err;
  }
}

async function latestSession(api: Api, agentId: string, header: Record<string, string>): Promise<{ id: string; state: string } | null> {
  const me = await actorId(api, header);
  if (!me) return null;
  let cursor: string | null = null;
  for (let page = 0; page < SESSION_PAGES; page++) {
    const res = (await api.call('GET', '/v1/agent_sessions', { query: { agent_id: agentId, limit: 100, ...(cursor ? { cursor } : {}) }, header, auth: 'workspace' })).body as {
      data: { id: string; state: string; created_by: string }[];
      next_cursor: string | null;
    };
    // admins see every member's sessions: only one's own takes turns
    const mine = res.data.find((sess) => sess.created_by === me && REUSABLE.has(sess.state));
    if (mine) return mine;
    cursor = res.next_cursor;
    if (!cursor) return null;
  }
  return null;
}

/** The session the turns go to, said on stderr. */
async function chooseSession(api: Api, o: Output, agent: AgentBody, flags: ChatFlags, header: Record<string, string>, title: string): Promise<string> {
  const note = (text: string) => o.err.write(`${o.errColor.dim(text)}\n`);
  if (flags.session) {
    const sess = (await api.call('GET', '/v1/agent_sessions/{id}', { path: { id: flags.session }, header, auth: 'workspace' })).body as { id: string; agent_id: string; state: string };
    if (sess.agent_id !== agent.id) throw new CliError(`${sess.id} is a session with ${sess.agent_id}, not with ${agent.id}`, EXIT.USAGE);
    note(`session ${sess.id}`);
    return sess.id;
  }
  if (!flags.new) {
    const last = await latestSession(api, agent.id, header);
    if (last) {
      note(`session ${last.id} (goes on; --new starts another)`);
      return last.id;
    }
  }
  const created = await api.call('POST', '/v1/agent_sessions', {
    body: { agent_id: agent.id, ...(title ? { title: title.split('\n')[0]!.slice(0, 200) } : {}) }, header, auth: 'workspace',
  });
  const id = (created.body as { id: string }).id;
  note(`new session ${id}`);
  return id;
}

export async function chat(o: Output, agentRef: string, words: string[], flags: ChatFlags): Promise<number> {
  if (flags.approve && flags.reject) throw new CliError('--approve and --reject exclude each other', EXIT.USAGE);
  if (flags.session && flags.new) throw new CliError('--session and --new exclude each other', EXIT.USAGE);
  const message = words.join(' ').trim();
  const [{ createApi }, { lineInput }, { runTurn, attachWaiting }] = await Promise.all([import('./http.js'), import('./chat-input.js'), import('./chat-turn.js')]);
  const api = createApi(loadSettings());
  const header: Record<string, string> = flags.svcContext ? { 'svc-context': flags.svcContext } : {};

  // Ctrl-C: the first cancels the running turn (and ends the command), a second exits at once.
  const interrupt = new AbortController();
  const onInterrupt = () => {
    if (interrupt.signal.aborted) process.exit(EXIT.INTERRUPTED);
    interrupt.abort(new CliError('interrupted', EXIT.INTERRUPTED));
  };
  process.on('SIGINT', onInterrupt);
  const input = lineInput(o, onInterrupt);
  try {
    const agent = await findAgent(api, agentRef, header);
    if (agent.state !== 'ENABLED') throw new CliError(`agent ${agent.name} (${agent.id}) is ${agent.state}: it takes no turns (\`svc agents undelete ${agent.id}\`)`, EXIT.ERROR);
    const settings: TurnSettings = {
      api, o, input, header, signal: interrupt.signal, json: Boolean(flags.json),
      decision: flags.approve ? 'APPROVE' : flags.reject ? 'REJECT' : null,
      // with a message, a pipe is not read (a script's stdin may never end); without, it is the conversation
      canAsk: Boolean(process.stdin.isTTY) || !message,
      agentRef: /^[A-Za-z0-9_.-]+$/.test(agent.name) ? agent.name : agent.id,
    };
    let sessionId = flags.session ? await chooseSession(api, o, agent, flags, header, '') : null;
    const waited = sessionId ? await attachWaiting(settings, sessionId) : null;
    if (waited && waited !== 'COMPLETED') return exitCodeOf(waited);
    if (message) {
      sessionId ??= await chooseSession(api, o, agent, flags, header, message);
      return exitCodeOf(await runTurn(settings, sessionId, message));
    }
    const terminal = Boolean(process.stdin.isTTY);
    if (terminal) o.err.write(`${o.errColor.dim(`chatting with ${terminalText(agent.name)} (${agent.id}); Ctrl-D ends, Ctrl-C cancels a turn`)}\n`);
    let code: number = EXIT.OK;
    for (;;) {
      const line = await input.next(terminal ? `${o.errColor.bold('you')} › ` : '› ', interrupt.signal);
      if (line === null) return code;
      if (!line.trim()) continue;
      sessionId ??= await chooseSession(api, o, agent, flags, header, line.trim());
      code = exitCodeOf(await runTurn(settings, sessionId, line.trim()));
      if (code === EXIT.INTERRUPTED) return code;
    }
  } catch (err) {
    if (interrupt.signal.aborted) return EXIT.INTERRUPTED;
    throw err;
  } finally {
    process.removeListener('SIGINT', onInterrupt);
    input.close();
  }
}

function exitCodeOf(outcome: TurnOutcome): number {
  return outcome === 'COMPLETED' ? EXIT.OK : outcome === 'INTERRUPTED' ? EXIT.INTERRUPTED : EXIT.ERROR;
}
