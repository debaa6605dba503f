// E-mail (issue 34): `queueMail(tx, …)` puts a message in the outbox inside the transaction of the
// change that sends it, with a job that delivers it after commit through the configured driver
// (src/drivers/mail/). A failed attempt is retried with growing, jittered delays; a server's final
// refusal (5xx), or the last attempt, ends the message as failed. A process dying mid-send leaves
// the job to another worker, which sends it again: at least once, as mail always is.
import type { Logger } from 'pino';
import type { Db, Dialect, Executor } from '../../db/database.js';
import type { MailDriver } from '../../drivers/mail/driver.js';
import { completeJob, enqueueJob, holdsJob, rescheduleJob, type ClaimedJob } from '../../jobs/queue.js';
import type { JobHandler } from '../../jobs/worker.js';
import { clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { findMailByJob, insertMail, listMail, markMailAttemptFailed, markMailSent, type MailRow } from './mail.repo.js';

export const MAIL_JOB_KIND = 'mail';
/** attempts before a message is given up: the delays below add up to about a day */
export const MAIL_MAX_ATTEMPTS = 10;

/** The delay after failed attempt `n` (1-based): 30 s growing fourfold, at most 4 h, ±20%. */
export function mailRetryDelayMs(n: number, random = Math.random): number {
  const base = Math.min(4 * 3600_000, 30_000 * 4 ** Math.max(0, n - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
}

export interface QueuedMail {
  to: string;
  userId: string | null;
  kind: MailRow['kind'];
  subject: string;
  body: string;
}

/** Queues one message in the caller's transaction; it is sent after commit. Returns its mail_ id. */
export async function queueMail(tx: Executor, mail: QueuedMail): Promise<string> {
  const id = newId('mailMessage');
  const jobId = await enqueueJob(tx, { kind: MAIL_JOB_KIND, operationId: null });
  await insertMail(tx, {
    id, job_id: jobId, to_address: mail.to, user_id: mail.userId, kind: mail.kind, subject: mail.subject.slice(0, 200), body: mail.body,
    state: 'queued', driver: null, attempts: 0, last_error: null, created_at: clock.now(), sent_at: null,
  });
  return id;
}

export interface MailMessage {
  id: string;
  to: string;
  user_id: string | null;
  kind: MailRow['kind'];
  subject: string;
  body: string | null;
  state: MailRow['state'];
  driver: string | null;
  attempts: number;
  last_error: string | null;
  created_at: number;
  sent_at: number | null;
}

const toMessage = (r: MailRow): MailMessage => ({
  id: r.id, to: r.to_address, user_id: r.user_id, kind: r.kind, subject: r.subject, body: r.body, state: r.state, driver: r.driver,
  attempts: r.attempts, last_error: r.last_error, created_at: r.created_at, sent_at: r.sent_at,
});

/** `backoffScale`: SVC_RETRY_BACKOFF_SCALE, which scales every retry's delay (tests shrink it). */
export function createMailService(deps: { db: Db; dialect: Dialect; driver: MailDriver; cursors: CursorCodec; backoffScale: number }) {
  const { db, dialect, driver } = deps;

  /** In the transaction that ends the job, unless another worker has taken it over. */
  const settle = (job: ClaimedJob, fn: (tx: Executor) => Promise<void>) =>
    db.transaction().execute(async (tx) => {
      if (await holdsJob(tx, dialect, job)) await fn(tx);
    });

  /** The worker pool's handler of `mail` jobs. */
  const deliver: JobHandler = async (job, _signal, logger: Logger) => {
    const mail = await findMailByJob(db, job.id);
    if (!mail || mail.state !== 'queued' || mail.body === null) {
      await settle(job, async (tx) => { await completeJob(tx, job); });
      return;
    }
    const attempts = mail.attempts + 1;
    try {
      await driver.send({ to: mail.to_address, subject: mail.subject, text: mail.body });
    } catch (err) {
      const permanent = (err as { permanent?: unknown }).permanent === true;
      const final = permanent || attempts >= MAIL_MAX_ATTEMPTS;
      const error = ((err as Error).message ?? String(err)).slice(0, 500);
      await settle(job, async (tx) => {
        await markMailAttemptFailed(tx, mail.id, { driver: driver.name, attempts, error, final });
        if (final) await completeJob(tx, job);
        else await rescheduleJob(tx, job, clock.nowMs() + Math.round(mailRetryDelayMs(attempts) * deps.backoffScale));
      });
      logger.warn({ mail_id: mail.id, kind: mail.kind, attempts, final, error }, final ? 'mail not delivered: given up' : 'mail not delivered: will retry');
      return;
    }
    await settle(job, async (tx) => {
      await markMailSent(tx, mail.id, { driver: driver.name, keepBody: driver.keepsBody, at: clock.now(), attempts });
      await completeJob(tx, job);
    });
  };

  /** The outbox, newest first (instance admins; `svc admin mail list`). */
  async function list(query: PageQueryT & { to?: string }): Promise<Page<MailMessage>> {
    const to = query.to?.trim().toLowerCase() || null;
    const page = deps.cursors.request(query, 'mail', { to });
    return deps.cursors.page(await listMail(db, { to }, page), page, 'mail', { to }, toMessage);
  }

  return { deliver, list, driverName: driver.name, close: () => driver.close() };
}

export type MailService = ReturnType<typeof createMailService>;
