// POST /oauth/device/code (RFC 8628 section 3.1-3.2) and the device_code grant of POST /oauth/token.
import { Type } from 'typebox';
import { refTo, type App } from '../../platform/http.js';
import type { Services } from '../../services.js';
import { OAuthError, oauthErrorBody, oauthErrorHandler } from '../oauth/oauth.errors.js';
import { DEFAULT_DEVICE_CLIENT_ID, DEVICE_CODE_TTL_SECONDS, DEVICE_POLL_INTERVAL_SECONDS } from './device.service.js';

const DeviceCodeBody = Type.Object(
  {
    client_id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: '^[A-Za-z0-9._:-]+$',
        description: `the public client asking; default \`${DEFAULT_DEVICE_CLIENT_ID}\`. Shown to the user on the approval page and must match on the token request when sent there.`,
      }),
    ),
    scope: Type.Optional(
      Type.String({ maxLength: 1000, description: 'accepted for compatibility and ignored: the token is a full session of the approving user' }),
    ),
  },
  { additionalProperties: false, description: 'Optional: which client asks. The body may also be empty.', examples: [{ client_id: 'svc-cli' }] },
);

export const DeviceAuthorizationResponse = Type.Object(
  {
    device_code: Type.String({ description: 'secret for the polling client; send it to POST /oauth/token. Stored only as a hash.' }),
    user_code: Type.String({ pattern: '^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$', description: 'the code the user confirms in the browser, `XXXX-XXXX`' }),
    verification_uri: Type.String({ format: 'uri', description: '`{public_url}/device`: where the user signs in and approves' }),
    verification_uri_complete: Type.String({ format: 'uri', description: 'verification_uri with the user code filled in (for a link or QR code)' }),
    expires_in: Type.Integer({ description: `seconds until device_code and user_code expire (${DEVICE_CODE_TTL_SECONDS})` }),
    interval: Type.Integer({ description: `minimum seconds between polls (${DEVICE_POLL_INTERVAL_SECONDS}); each slow_down adds 5` }),
  },
  {
    $id: 'DeviceAuthorization',
    description: 'Device authorization response (RFC 8628 section 3.2).',
    examples: [{
      device_code: 'GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS', user_code: 'WDJB-MJHT', verification_uri: 'https://svc.example.com/device',
      verification_uri_complete: 'https://svc.example.com/device?user_code=WDJB-MJHT', expires_in: 600, interval: 5,
    }],
  },
);

const OAuthErrorBody = oauthErrorBody('here `invalid_request`');

export function deviceRoutes(app: App, s: Pick<Services, 'device'>): void {
  app.post('/oauth/device/code', {
    config: { auth: 'none' },
    // OAuth clients get OAuth-shaped errors, including for validation failures.
    attachValidation: true,
    errorHandler: oauthErrorHandler,
    schema: {
      tags: ['oauth'], operationId: 'oauthDeviceAuthorization', summary: 'Start the device authorization grant (RFC 8628)',
      description:
        'For the CLI and other input-constrained clients. Form-encoded (or JSON, or no body). Returns a `device_code` to poll ' +
        '`POST /oauth/token` with `grant_type=urn:ietf:params:oauth:grant-type:device_code` every `interval` seconds, and a ' +
        '`user_code` (8 letters from BCDFGHJKLMNPQRSTVWXZ, shown as XXXX-XXXX) that the user confirms at `verification_uri` after ' +
        'signing in. Polling answers `authorization_pending` until then, `slow_down` (the interval grows by 5 s for good) when ' +
        'polling faster, `access_denied` when the user denies, `expired_token` after `expires_in` seconds, and on approval a ' +
        '32-character session token (a broad user credential), once: any later exchange of the same code is `invalid_grant`. ' +
        'Responses carry `cache-control: no-store`. A body over 16 KiB is 413 `invalid_request`; the connection stays open.',
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      body: DeviceCodeBody,
      response: { 200: refTo(DeviceAuthorizationResponse), 400: OAuthErrorBody, 413: OAuthErrorBody },
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    // A bodyless POST is a valid request for the default client, not a validation failure.
    if (request.validationError && request.body !== undefined && request.body !== null) {
      const err = new OAuthError('invalid_request', request.validationError.message);
      return reply.code(400).send({ error: err.error, error_description: err.description });
    }
    const clientId = request.body?.client_id ?? DEFAULT_DEVICE_CLIENT_ID;
    return s.device.issueDeviceCode(clientId);
  });
}
