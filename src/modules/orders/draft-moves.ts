// The order draft's phases and every move between them, in one place (API.md 8.7; the agent turn's
// turn-moves.ts is the model). Each move is one conditional UPDATE (order-drafts.repo.ts moveDraft)
// from the phases this table allows it from, to the phases it allows it to; a draft no longer in one
// of those phases is not moved (another request, a webhook or a worker won). Moves that record a
// fact and stay in their phase (an operation started, a cluster registered) are listed too: every
// change of a draft row goes through the table.
//
// The phases, in the order a draft goes through them:
//   auth               begun signed out; waits for :claim with its token
//   workspace          claimed or begun signed in; waits for :selectWorkspace
//   compute            order_draft.compute registers a cluster in the customer's workspace
//   compute_bootstrap  bring your own server: waits for a machine to join the cluster
//   configure          waits for :submitConfiguration
//   payment            waits for a paid checkout session (the configuration may still change)
//   install            paid (or free): the order is committed; order_draft.deliver installs it
//   done               delivered (final)
//   cleaning_up        ending: order_draft.cleanup releases what the draft allocated
//   terminated         ended, with a termination_reason (final)
export const DRAFT_PHASES = [
  'auth', 'workspace', 'compute', 'compute_bootstrap', 'configure', 'payment', 'install', 'done', 'cleaning_up', 'terminated',
] as const;
export type DraftStatus = (typeof DRAFT_PHASES)[number];

/** Where a draft starts: begun signed out (POST /v1/order_drafts:begin), or by a signed-in customer. */
export const FIRST_PHASE = { signedOut: 'auth', signedIn: 'workspace' } as const satisfies Record<string, DraftStatus>;

/** The phases a draft can still be ended in (revoked by :cancel, timeout, offer_expired, a failed compute): before it is paid. */
export const ENDABLE_PHASES = ['auth', 'workspace', 'compute', 'compute_bootstrap', 'configure', 'payment'] as const satisfies readonly DraftStatus[];

interface DraftMove {
  readonly from: readonly DraftStatus[];
  readonly to: readonly DraftStatus[];
  /** the verb, step or event that makes it */
  readonly by: string;
}

export const DRAFT_MOVES = {
  claim: { from: ['auth'], to: ['workspace'], by: ':claim (the customer signs in with the claim token)' },
  selectWorkspace: { from: ['workspace'], to: ['compute'], by: ':selectWorkspace' },
  computeStarted: { from: ['compute'], to: ['compute'], by: ':selectWorkspace starting order_draft.compute' },
  clusterRegistered: { from: ['compute'], to: ['compute'], by: 'order_draft.compute step register_cluster' },
  clusterReady: { from: ['compute'], to: ['configure', 'compute_bootstrap'], by: 'order_draft.compute step wait_cluster (compute_bootstrap: bring your own server)' },
  bootstrapIssued: { from: ['compute_bootstrap'], to: ['compute_bootstrap'], by: ':createWorkerBootstrap' },
  serverJoined: { from: ['compute_bootstrap'], to: ['configure'], by: 'a machine joining the draft\'s cluster' },
  submitConfiguration: { from: ['configure', 'payment'], to: ['payment', 'install'], by: ':submitConfiguration (install when nothing is to be paid)' },
  checkoutOpened: { from: ['payment'], to: ['payment'], by: 'POST /v1/order_drafts/{id}/checkout_sessions' },
  paid: { from: ['payment'], to: ['install'], by: 'a paid checkout session (webhook, return page or an expiry that found it paid)' },
  orderCommitted: { from: ['install'], to: ['install'], by: 'the order committed: the offer\'s use becomes the order\'s' },
  installStarted: { from: ['install'], to: ['install'], by: 'order_draft.deliver step start_install' },
  delivered: { from: ['install'], to: ['done'], by: 'order_draft.deliver step wait_install' },
  end: { from: ENDABLE_PHASES, to: ['cleaning_up'], by: ':cancel, the ttl sweep, an offer withdrawn, order_draft.compute failing' },
  deliveryFailed: { from: ['install'], to: ['cleaning_up'], by: 'order_draft.deliver failing (install_failed, quota_exceeded)' },
  cleanupStarted: { from: ['cleaning_up'], to: ['cleaning_up'], by: 'order_draft.cleanup started' },
  terminate: { from: ['cleaning_up'], to: ['terminated'], by: 'order_draft.cleanup step finish' },
} as const satisfies Record<string, DraftMove>;

export type DraftMoveName = keyof typeof DRAFT_MOVES;
/** The phases a move may go to. */
export type MoveTarget<M extends DraftMoveName> = (typeof DRAFT_MOVES)[M]['to'][number];

/** The phases a verb or step is allowed in: the `from` of its move. */
export const phasesOf = (move: DraftMoveName): readonly DraftStatus[] => DRAFT_MOVES[move].from;

/** Whether `move` is allowed from `status`. */
export const allows = (move: DraftMoveName, status: string): boolean => (DRAFT_MOVES[move].from as readonly string[]).includes(status);

// ---- named predicates ----

/** No move leaves it: delivered, or ended. */
export const isFinal = (status: string): boolean => status === 'done' || status === 'terminated';

/** Ending or ended: a repeated :cancel answers the draft as it is. */
export const isEnding = (status: string): boolean => status === 'cleaning_up' || status === 'terminated';

/** Whether the draft can still be ended (revoked, timed out, its offer withdrawn): a phase before payment, and not paid. */
export const canEnd = (draft: { status: string; payment_completed: number }): boolean =>
  allows('end', draft.status) && draft.payment_completed === 0;

/** :cancel by its customer or a seller member: the same as any ending. */
export const canCancel = canEnd;

/** Whether a paid checkout session of `contentRevision` commits the order now. */
export const isPayable = (draft: { status: string; payment_completed: number; content_revision: number }, contentRevision: number): boolean =>
  allows('paid', draft.status) && draft.payment_completed === 0 && draft.content_revision === contentRevision;
