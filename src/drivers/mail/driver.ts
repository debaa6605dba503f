// E-mail leaves the service through one of these (SVC_MAIL): `local` keeps messages in the
// database's outbox for `svc admin mail list` (a laptop needs no mail server), `smtp` hands them to
// a mail server. Delivery is the mail module's job (queued in the change's transaction, sent after
// commit, retried); a driver only sends one message.

export interface OutgoingMail {
  to: string;
  subject: string;
  /** plain text */
  text: string;
}

export interface MailDriver {
  readonly name: 'local' | 'smtp';
  /**
   * Whether the outbox keeps a message's body once sent: the local driver's outbox is where it is
   * read; a message handed to a mail server is dropped from the database (it may hold a link that
   * works for a while).
   */
  readonly keepsBody: boolean;
  /** Sends one message; throws MailDeliveryError. */
  send(mail: OutgoingMail): Promise<void>;
  close(): Promise<void>;
}

export class MailDeliveryError extends Error {
  /** the server refused this message for good (a 5xx answer): sending again would not help */
  readonly permanent: boolean;
  constructor(message: string, permanent: boolean) {
    super(message);
    this.name = 'MailDeliveryError';
    this.permanent = permanent;
  }
}
