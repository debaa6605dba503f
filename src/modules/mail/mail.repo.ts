// The mail outbox: every query of mail_messages.
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { MailMessagesTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type MailRow = MailMessagesTable;

export async function insertMail(tx: Executor, row: MailRow): Promise<void> {
  await tx.insertInto('mail_messages').values(row).execute();
}

export function findMailByJob(db: Executor, jobId: string): Promise<MailRow | undefined> {
  return db.selectFrom('mail_messages').selectAll().where('job_id', '=', jobId).executeTakeFirst();
}

/** A delivery's end: sent (the body dropped unless the driver's outbox keeps it). */
export async function markMailSent(tx: Executor, id: string, e: { driver: string; keepBody: boolean; at: number; attempts: number }): Promise<void> {
  await tx.updateTable('mail_messages')
    .set({ state: 'sent', driver: e.driver, sent_at: e.at, attempts: e.attempts, last_error: null, ...(e.keepBody ? {} : { body: null }) })
    .where('id', '=', id).where('state', '=', 'queued').execute();
}

/** A failed attempt; `final` ends the message as failed (its body dropped: nobody will send it). */
export async function markMailAttemptFailed(tx: Executor, id: string, e: { driver: string; attempts: number; error: string; final: boolean }): Promise<void> {
  await tx.updateTable('mail_messages')
    .set({ driver: e.driver, attempts: e.attempts, last_error: e.error, ...(e.final ? { state: 'failed', body: null } : {}) })
    .where('id', '=', id).where('state', '=', 'queued').execute();
}

/** Newest first, optionally to one address. */
export function listMail(db: Executor, filter: { to: string | null }, page: PageRequest): Promise<MailRow[]> {
  let q = db.selectFrom('mail_messages').selectAll();
  if (filter.to !== null) q = q.where('to_address', '=', filter.to);
  return keysetPage(q, 'id', page).execute();
}
