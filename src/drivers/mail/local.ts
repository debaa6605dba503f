// The default mail driver: nothing leaves the machine. The message stays in the outbox table (the
// mail module keeps its body for this driver) and the log says where to read it; the log line
// carries neither the body nor its links, which may be one-time credentials.
import type { Logger } from 'pino';
import type { MailDriver, OutgoingMail } from './driver.js';

export function createLocalMailDriver(logger: Pick<Logger, 'info'>): MailDriver {
  return {
    name: 'local',
    keepsBody: true,
    async send(mail: OutgoingMail) {
      logger.info({ to: mail.to, subject: mail.subject }, 'mail kept in the local outbox (SVC_MAIL=local): read it with `svc admin mail list`');
    },
    async close() {},
  };
}
