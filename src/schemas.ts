// Every named schema (a TypeBox object with `$id`): registered once on the app, referenced as
// `$ref: '<$id>#'` by the routes (platform/http.ts `refTo`, `responses`, `pageOf`), and listed under
// `components.schemas` of the OpenAPI document, so client generators emit one type per resource.
import type { TSchema } from 'typebox';
import { ErrorBody } from './platform/errors.js';
import { OPERATION_SCHEMAS } from './modules/operations/operations.schemas.js';
import { AcceptedInvitation, Invitation, InvitationPreview, Workspace, Member } from './modules/workspaces/workspaces.schemas.js';
import { ApiTokenItem, CreatedApiToken } from './modules/tokens/tokens.schemas.js';
import { CreatedOAuthClient, Jwks, OAuthClientItem } from './modules/oauth/clients.schemas.js';
import { TOKEN_SCHEMAS } from './modules/oauth/token.routes.js';
import { DeviceAuthorizationResponse } from './modules/device/device.routes.js';
import { AuthSettings, BrowserSession, CreatedUser, IssuedSession, Me, PasswordChanged } from './modules/sessions/sessions.routes.js';
import { RecoveryCodes, TotpEnrollment, TwoFactorStatus } from './modules/sessions/two-factor.routes.js';
import { OpenApiDocument, Status } from './modules/system/system.routes.js';
import { Cluster, ClusterCapabilitiesView } from './modules/clusters/clusters.schemas.js';
import { MACHINE_SCHEMAS } from './modules/machines/machines.schemas.js';
import { Package, PackageVersion } from './modules/packages/packages.schemas.js';
import { Install, InstallDetail, InstallLogLine, InstallLogs, Render, RenderDetail } from './modules/installs/installs.schemas.js';
import { PreviewHostname } from './modules/preview-hostnames/preview-hostnames.schemas.js';
import { ACCOUNT_SCHEMAS } from './modules/account/account-schemas.js';
import { SNIPPET_SCHEMAS } from './modules/snippets/snippets.schemas.js';
import { AGENT_SCHEMAS } from './modules/agents/agents.schemas.js';
import { OFFER_SCHEMAS } from './modules/offers/offers.schemas.js';
import { ORDER_SCHEMAS } from './modules/orders/orders.schemas.js';
import { WebhookAnswer } from './modules/orders/payments.routes.js';
import { IdLookup } from './modules/lookup/lookup.routes.js';
import { ResetPreview, ResetRequested } from './modules/sessions/password-resets.routes.js';
import { AdminUser, Deleted, MailMessage, ResetLink } from './modules/admin/admin.routes.js';

export const NAMED_SCHEMAS: TSchema[] = [
  ErrorBody,
  ...OPERATION_SCHEMAS,
  Status, OpenApiDocument,
  IssuedSession, BrowserSession, Me, CreatedUser, AuthSettings, PasswordChanged, TwoFactorStatus, TotpEnrollment, RecoveryCodes, IdLookup,
  ResetRequested, ResetPreview, AdminUser, ResetLink, MailMessage, Deleted,
  Workspace, Member, Invitation, InvitationPreview, AcceptedInvitation,
  ApiTokenItem, CreatedApiToken,
  OAuthClientItem, CreatedOAuthClient, Jwks, ...TOKEN_SCHEMAS, DeviceAuthorizationResponse,
  Cluster, ClusterCapabilitiesView, ...MACHINE_SCHEMAS,
  Package, PackageVersion,
  Install, InstallDetail, Render, RenderDetail, InstallLogLine, InstallLogs,
  PreviewHostname,
  ...ACCOUNT_SCHEMAS,
  ...SNIPPET_SCHEMAS,
  ...AGENT_SCHEMAS,
  ...OFFER_SCHEMAS,
  ...ORDER_SCHEMAS, WebhookAnswer,
];
