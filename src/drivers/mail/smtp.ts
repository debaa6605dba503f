// SMTP through nodemailer (SVC_MAIL=smtp, SVC_SMTP_URL), loaded on the first message (a service
// that sends none never loads it). One pooled transport per process, with
// bounded connection, greeting and socket timeouts so a mail server that hangs holds a delivery job
// for seconds, not for its lease. STARTTLS is used whenever the server offers it (nodemailer's
// default); smtps:// speaks TLS from the start.
import type { Transporter } from 'nodemailer';
import { MailDeliveryError, type MailDriver, type OutgoingMail } from './driver.js';

export interface SmtpSettings {
  url: string;
  from: string;
  /** milliseconds for each of connecting, the greeting and any silence on the socket */
  timeoutMs?: number;
}

/** What the server's refusal tells: 5xx is final for this message (RFC 5321 4.2.1), the rest may pass later. */
function deliveryError(err: unknown): MailDeliveryError {
  const e = err as { responseCode?: number; code?: string; response?: string; message?: string };
  const code = typeof e.responseCode === 'number' ? e.responseCode : null;
  const permanent = code !== null && code >= 500 && code < 600 && e.code !== 'EAUTH';
  // The server's own words (never our credentials: nodemailer's messages quote the response, not the URL).
  const said = (e.response ?? e.message ?? 'unknown error').replace(/\s+/g, ' ').slice(0, 300);
  const what = e.code === 'EAUTH'
    ? 'the mail server refused our credentials (check SVC_SMTP_URL)'
    : e.code === 'ECONNECTION' || e.code === 'ETIMEDOUT' || e.code === 'ESOCKET' || e.code === 'EDNS'
      ? 'the mail server could not be reached'
      : 'the mail server refused the message';
  return new MailDeliveryError(`${what}: ${said}`, permanent);
}

export function createSmtpMailDriver(settings: SmtpSettings): MailDriver {
  const timeout = settings.timeoutMs ?? 15_000;
  let transport: Promise<Transporter> | null = null;
  const open = () => (transport ??= import('nodemailer').then(({ createTransport }) => createTransport({
    url: settings.url,
    pool: true,
    maxConnections: 2,
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
  })));
  return {
    name: 'smtp',
    keepsBody: false,
    async send(mail: OutgoingMail) {
      try {
        await (await open()).sendMail({ from: settings.from, to: mail.to, subject: mail.subject, text: mail.text });
      } catch (err) {
        throw deliveryError(err);
      }
    },
    async close() {
      if (transport) (await transport).close();
    },
  };
}
