// The people settings (issue 34), read by loadConfig (src/config.ts) and nowhere else: how e-mail
// leaves the service and who administers the instance. The SMTP URL may carry a password: it is a
// non-enumerable property, so a config that reaches a log line or JSON.stringify shows none, and no
// message here quotes it.
import { ConfigError } from './config.js';

export const MAIL_DRIVERS = ['local', 'smtp'] as const;
export type MailDriverName = (typeof MAIL_DRIVERS)[number];

export interface MailConfig {
  /**
   * SVC_MAIL: `local` (the default: messages stay in the database, the log says one was queued,
   * `svc admin mail list` shows them) or `smtp` (sent through SVC_SMTP_URL)
   */
  driver: MailDriverName;
  /** SVC_SMTP_URL: smtp://user:password@host:587 (STARTTLS when offered) or smtps://…:465; required with smtp */
  smtpUrl: string | null;
  /** SVC_MAIL_FROM: the From address (default `svc <svc@localhost>`) */
  from: string;
}

export interface PeopleConfig {
  mail: MailConfig;
  /**
   * SVC_ADMIN_EMAILS: comma-separated e-mails of the instance's admins (lowercased), besides the
   * accounts given the role with `svc admin users grant-admin`
   */
  adminEmails: readonly string[];
}

const ADDRESS = /^[^\s@<>,]+@[^\s@<>,]+$/;

function parseFrom(raw: string | undefined): string {
  const value = raw?.trim() || 'svc <svc@localhost>';
  const m = /^(?:[^<>\r\n"]{0,100}<([^<>\s]+)>|([^<>\s]+))$/.exec(value);
  const address = m?.[1] ?? m?.[2];
  if (!address || !ADDRESS.test(address) || value.length > 200) {
    throw new ConfigError(`SVC_MAIL_FROM must be an address such as "svc@example.com" or "Example <svc@example.com>", got "${value}"`);
  }
  return value;
}

function parseSmtpUrl(raw: string | undefined): string {
  const value = (raw ?? '').trim();
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || !url.hostname) {
    throw new ConfigError('SVC_MAIL=smtp needs SVC_SMTP_URL, such as smtp://user:password@mail.example.com:587 or smtps://user:password@mail.example.com:465');
  }
  return value;
}

function parseAdminEmails(raw: string | undefined): string[] {
  const emails = (raw ?? '').split(',').map((e) => e.trim().toLowerCase()).filter(Boolean);
  for (const e of emails) if (!ADDRESS.test(e) || e.length > 254) throw new ConfigError(`SVC_ADMIN_EMAILS must list e-mail addresses separated by commas; "${e}" is not one`);
  if (emails.length > 100) throw new ConfigError('SVC_ADMIN_EMAILS lists at most 100 addresses');
  return emails;
}

export function parsePeople(env: NodeJS.ProcessEnv): PeopleConfig {
  const raw = env.SVC_MAIL?.trim() || 'local';
  if (!(MAIL_DRIVERS as readonly string[]).includes(raw)) throw new ConfigError(`SVC_MAIL must be one of ${MAIL_DRIVERS.join(', ')}, got "${raw}"`);
  const driver = raw as MailDriverName;
  const mail = { driver, from: parseFrom(env.SVC_MAIL_FROM) } as MailConfig;
  Object.defineProperty(mail, 'smtpUrl', { value: driver === 'smtp' ? parseSmtpUrl(env.SVC_SMTP_URL) : null, enumerable: false });
  return { mail, adminEmails: parseAdminEmails(env.SVC_ADMIN_EMAILS) };
}
