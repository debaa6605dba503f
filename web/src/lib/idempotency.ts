// A fresh idempotency-key for a write the API requires or accepts one for (API.md section 3): one
// per action the person takes, so a retried request is not applied twice. crypto.randomUUID
// exists only in secure contexts (https, localhost); getRandomValues everywhere.
export function idempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}
