// A minimal browser for the server-rendered pages (a cookie jar over app.inject, form posts),
// used by the /device page tests.
import assert from 'node:assert/strict';
import type { TestApp, TestUser } from './harness.js';

export interface Page {
  status: number;
  html: string;
  headers: Record<string, string | string[] | number | undefined>;
}

/** A minimal browser: a cookie jar over app.inject, with form posts. */
export class Browser {
  readonly cookies = new Map<string, string>();
  constructor(private readonly t: TestApp) {}

  private cookieHeader(): Record<string, string> {
    return this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {};
  }

  private remember(setCookie: string | string[] | number | undefined): void {
    for (const line of ([] as string[]).concat((setCookie as string | string[] | undefined) ?? [])) {
      const [pair] = line.split(';');
      const i = pair!.indexOf('=');
      const name = pair!.slice(0, i);
      const value = pair!.slice(i + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async get(url: string): Promise<Page> {
    const res = await this.t.app.inject({ method: 'GET', url, headers: this.cookieHeader() });
    this.remember(res.headers['set-cookie']);
    return { status: res.statusCode, html: res.body, headers: res.headers };
  }

  async post(url: string, form: Record<string, string>): Promise<Page> {
    const res = await this.t.app.inject({
      method: 'POST',
      url,
      headers: { ...this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(form).toString(),
    });
    this.remember(res.headers['set-cookie']);
    return { status: res.statusCode, html: res.body, headers: res.headers };
  }

  async signIn(user: TestUser, userCode?: string): Promise<Page> {
    const page = await this.get(userCode ? `/device?user_code=${encodeURIComponent(userCode)}` : '/device');
    const res = await this.post('/device/sign-in', { email: user.email, password: user.password, csrf: csrfOf(page.html), ...(userCode ? { user_code: userCode } : {}) });
    assert.equal(res.status, 303, res.html);
    return res;
  }

  /** Opens the code's page and presses Approve or Deny. */
  async decide(userCode: string, action: 'approve' | 'deny'): Promise<Page> {
    const page = await this.get(`/device?user_code=${encodeURIComponent(userCode)}`);
    assert.equal(page.status, 200, page.html);
    return this.post(`/device/${action}`, { user_code: userCode, csrf: csrfOf(page.html) });
  }
}

export function csrfOf(html: string): string {
  const m = /name="csrf" value="([^"]+)"/.exec(html);
  assert.ok(m, 'page has a csrf field');
  return m[1]!;
}
