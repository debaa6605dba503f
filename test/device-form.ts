// The /device pages driven over plain HTTP, as a browser without JavaScript would: sign in, then
// approve or deny a user code. Used by the tests that complete `svc login`'s device grant.
import assert from 'node:assert/strict';

/** A cookie-keeping browser speaking plain HTTP to the /device pages. */
export class FormBrowser {
  private cookies = new Map<string, string>();
  constructor(private readonly base: string, private readonly email: string, private readonly password: string) {}
  private remember(res: Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const i = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, i), pair!.slice(i + 1));
    }
  }
  private cookie() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  async get(path: string): Promise<string> {
    const res = await fetch(this.base + path, { headers: { cookie: this.cookie() }, redirect: 'manual' });
    this.remember(res);
    return res.text();
  }
  async post(path: string, form: Record<string, string>): Promise<{ status: number; html: string }> {
    const res = await fetch(this.base + path, {
      method: 'POST', redirect: 'manual',
      headers: { cookie: this.cookie(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
    this.remember(res);
    return { status: res.status, html: await res.text() };
  }
  static csrf(html: string): string {
    const m = /name="csrf" value="([^"]+)"/.exec(html);
    assert.ok(m, 'the page has a csrf field');
    return m[1]!;
  }
  async decide(userCode: string, action: 'approve' | 'deny'): Promise<{ status: number; html: string }> {
    const signInPage = await this.get(`/device?user_code=${encodeURIComponent(userCode)}`);
    const signedIn = await this.post('/device/sign-in', { email: this.email, password: this.password, user_code: userCode, csrf: FormBrowser.csrf(signInPage) });
    assert.ok(signedIn.status < 400, `sign-in answered ${signedIn.status}`);
    const page = await this.get(`/device?user_code=${encodeURIComponent(userCode)}`);
    return this.post(`/device/${action}`, { user_code: userCode, csrf: FormBrowser.csrf(page) });
  }
}
