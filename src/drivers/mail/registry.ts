// The configured mail driver (SVC_MAIL).
import type { Logger } from 'pino';
import type { MailConfig } from '../../config-people.js';
import type { MailDriver } from './driver.js';
import { createLocalMailDriver } from './local.js';
import { createSmtpMailDriver } from './smtp.js';

export function createMailDriver(config: MailConfig, logger: Pick<Logger, 'info'>): MailDriver {
  return config.driver === 'smtp' ? createSmtpMailDriver({ url: config.smtpUrl!, from: config.from }) : createLocalMailDriver(logger);
}
