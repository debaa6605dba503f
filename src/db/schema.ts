// Table types for Kysely. Timestamps are integer Unix seconds; booleans are 0/1 integers and
// JSON is text, so one set of statements runs unchanged on SQLite and PostgreSQL.

export interface UsersTable {
  id: string;
  email: string;
  password_hash: string;
  name: string | null;
  created_at: number;
  updated_at: number;
  /** set while the operator has disabled the account: none of its credentials works */
  disabled_at: number | null;
  /** set while the account is an instance admin by `svc admin users grant-admin` */
  admin_granted_at: number | null;
  /** which notifications are also e-mailed */
  notification_email: 'none' | 'important' | 'all';
}

export interface MailMessagesTable {
  id: string;
  job_id: string;
  to_address: string;
  user_id: string | null;
  kind: 'password_reset' | 'notification' | 'invitation';
  subject: string;
  body: string | null;
  state: 'queued' | 'sent' | 'failed';
  driver: string | null;
  attempts: number;
  last_error: string | null;
  created_at: number;
  sent_at: number | null;
}

export interface PasswordResetsTable {
  id: string;
  user_id: string;
  token_hash: string;
  origin: 'email' | 'operator';
  created_at: number;
  expires_at: number;
  ended_at: number | null;
}

/** an OpenID provider's account linked to a user (migration 022) */
export interface OidcIdentitiesTable {
  issuer: string;
  subject: string;
  user_id: string;
  /** lowercased, as the provider last gave it (verified) */
  email: string;
  created_at: number;
  last_sign_in_at: number;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: number;
  last_used_at: number;
  expires_at: number;
}

export interface WorkspacesTable {
  id: string;
  name: string;
  slug: string;
  plan_tier: string;
  billed_by: string;
  created_at: number;
  updated_at: number;
  revision: number;
  /** active | deleting */
  state: string;
  /** 1: members without an active second factor are refused in the workspace (migration 019) */
  require_two_factor: number;
}

export interface WorkspaceMembersTable {
  id: string;
  workspace_id: string;
  user_id: string;
  role: string;
  joined_at: number;
  updated_at: number;
}

export interface WorkspaceInvitationsTable {
  id: string;
  workspace_id: string;
  email: string;
  role: string;
  token_hash: string;
  state: string;
  invited_by: string;
  created_at: number;
  expires_at: number;
  resolved_at: number | null;
  accepted_by: string | null;
}

/** A raise of a workspace's plan waiting for its payment (SVC_BILLING=payments; migration 021). */
export interface PlanCheckoutsTable {
  id: string;
  workspace_id: string;
  tier: string;
  previous_tier: string;
  /** creating | open | paid | expired | canceled | refunded */
  state: string;
  status_reason: string | null;
  /** local | stripe */
  provider: string;
  provider_session_id: string | null;
  url: string | null;
  amount: number;
  currency: string;
  expires_at: number;
  created_by: string;
  created_at: number;
  completed_at: number | null;
  change_request_id: string | null;
  payment_ref: string | null;
  subscription_id: string | null;
  refunded_at: number | null;
}

/** A workspace's paid plan subscription at the payment provider (migration 023). */
export interface PlanSubscriptionsTable {
  id: string;
  workspace_id: string;
  provider: string;
  provider_subscription_id: string;
  plan_checkout_id: string;
  tier: string;
  /** active | ending | ended */
  state: string;
  cancel_at_period_end: number;
  next_tier: string | null;
  current_period_start: number;
  current_period_end: number;
  renewals: number;
  end_reason: string | null;
  desired_revision: number;
  synced_revision: number;
  sync_job_id: string | null;
  sync_attempts: number;
  last_error: string | null;
  failure_notified: number;
  created_at: number;
  ended_at: number | null;
}

export interface ApiTokensTable {
  id: string;
  workspace_id: string;
  name: string;
  prefix: string;
  token_hash: string;
  role: string;
  created_by: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
}

export interface IdempotencyKeysTable {
  scope: string;
  key: string;
  fingerprint: string;
  state: string;
  /** random token of the request that owns an in-flight key */
  claim: string;
  status_code: number | null;
  resource_id: string | null;
  created_at: number;
  expires_at: number;
  /** the instance running the request of an in-flight key (null: written before migration 009) */
  instance_id: string | null;
  /** the caller's role in the workspace at the first request (null outside a workspace) */
  role: string | null;
}

/** A running process that holds in-flight idempotency keys; it renews heartbeat_at meanwhile. */
export interface InstancesTable {
  id: string;
  host: string | null;
  pid: number;
  /** milliseconds */
  heartbeat_at: number;
  /** milliseconds */
  started_at: number;
}

export interface DeviceCodesTable {
  id: string;
  device_code_hash: string;
  user_code: string;
  client_id: string;
  status: string;
  user_id: string | null;
  interval_s: number;
  last_polled_at: number | null;
  created_at: number;
  expires_at: number;
}

export interface OAuthClientsTable {
  id: string;
  workspace_id: string;
  name: string;
  secret_hash: string;
  role: string;
  created_by: string;
  created_at: number;
  last_used_at: number | null;
}

export interface SigningKeysTable {
  id: string;
  algorithm: string;
  public_jwk: string;
  private_jwk_sealed: string;
  created_at: number;
}

/** Sign-in failures per throttle key (sign-in-throttle.ts). */
/** A TOTP factor of an account (migration 019); confirmed_at null while it is being set up. */
export interface UserTotpTable {
  id: string;
  user_id: string;
  /** the base32 secret, sealed by the keyring (TOTP_SEAL) */
  secret_sealed: string;
  created_at: number;
  confirmed_at: number | null;
  /** the 30-second step of the last code accepted: a code is used once */
  last_used_step: number | null;
}

/** A one-time recovery code of an account's second factor, stored as a salted SHA-256 hash. */
export interface UserRecoveryCodesTable {
  id: string;
  user_id: string;
  code_hash: string;
  created_at: number;
  used_at: number | null;
}

export interface SignInThrottlesTable {
  key: string;
  failures: number;
  last_failure_at: number;
}


export interface OperationsTable {
  id: string;
  workspace_id: string;
  type: string;
  owner_type: string;
  owner_id: string;
  parent_operation_id: string | null;
  state: string;
  cancel_requested: number;
  /** workflow input (JSON) */
  input: string;
  metadata: string;
  response: string | null;
  error: string | null;
  last_error: string | null;
  /** actor id (usr_, tok_ or oac_) */
  requested_by: string;
  /** the user behind the request, when a user asked: may still read it after the workspace is gone */
  requested_by_user: string | null;
  started_at: number;
  completed_at: number | null;
  updated_at: number;
  /** metadata.cluster_id as a column: the operations/running quota counts by it */
  cluster_id: string | null;
}

export interface OperationStepsTable {
  operation_id: string;
  position: number;
  name: string;
  /** pending | running | completed | failed | skipped */
  status: string;
  attempts: number;
  retryable: number;
  skippable: number;
  started_at: number | null;
  completed_at: number | null;
  error_message: string | null;
  /** the step's result (JSON), read by later steps */
  result: string | null;
}

export interface JobsTable {
  id: string;
  kind: string;
  operation_id: string | null;
  /** milliseconds */
  run_at: number;
  claims: number;
  lease_token: string | null;
  locked_by: string | null;
  /** milliseconds */
  locked_until: number | null;
  created_at: number;
  /** set for a job that runs an agent turn (kind agent_turn) */
  agent_turn_id: string | null;
  /** set for a job that runs an event's subscriber (kind `event:<subscriber>`) */
  event_id: string | null;
}

/** A domain event (API.md 8.11), written in the transaction of the change it reports. */
export interface EventsTable {
  id: string;
  type: string;
  workspace_id: string;
  /** JSON */
  data: string;
  created_at: number;
}

export interface ClustersTable {
  id: string;
  workspace_id: string;
  name: string;
  state: string;
  provider: string;
  reconciling: number;
  options: string;
  kubeconfig_sealed: string | null;
  capabilities: string | null;
  capabilities_observed_at: number | null;
  /** kubernetes clusters: the http(s) URL of the cluster's gateway the preview router proxies to (null: through the API server's service proxy) */
  gateway_url: string | null;
  /** nodes in the last capabilities observation (the compute/machines quota) */
  node_count: number;
  created_at: number;
  updated_at: number;
  revision: number;
}

export interface LocalClustersTable {
  cluster_id: string;
  node_count: number;
  created_at: number;
}

export interface PackagesTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string;
  created_at: number;
  updated_at: number;
  revision: number;
}

export interface PackageVersionsTable {
  id: string;
  package_id: string;
  workspace_id: string;
  semver: string;
  /** zero-padded major.minor.patch: text order is release precedence */
  sort_key: string;
  /** 1 for a prerelease (1.0.0-rc.1): never "latest" */
  prerelease: number;
  /** JSON Schema of the install values (JSON) */
  input_schema: string;
  /** { routes, resources } (JSON) */
  manifest: string;
  created_at: number;
}

export interface InstallsTable {
  id: string;
  workspace_id: string;
  cluster_id: string;
  package_id: string;
  package_version_id: string;
  pin_kind: string;
  pin_version: string | null;
  values: string;
  state: string;
  reconciling: number;
  current_render_id: string | null;
  created_at: number;
  updated_at: number;
  revision: number;
  /** the workspace that owns the package when it is not the install's own (an install an order delivered); null: its own */
  package_workspace_id?: string | null;
}

export interface InstallRendersTable {
  id: string;
  install_id: string;
  workspace_id: string;
  package_version_id: string;
  semver: string;
  content_hash: string;
  manifest: string;
  created_at: number;
  replaced_at: number | null;
}

export interface InstallUrlsTable {
  install_id: string;
  route_key: string;
  hostname: string;
  url: string;
  protocol: string;
  error: string;
  updated_at: number;
  last_observed_at: number;
}

export interface PreviewHostnamesTable {
  id: string;
  workspace_id: string;
  install_id: string;
  hostname: string;
  binding_kind: string;
  track: string;
  render_id: string;
  protocol: string;
  routing_mode: string;
  state: string;
  pending_operation_id: string | null;
  pending_render_id: string | null;
  last_seen_at: number;
  created_at: number;
  updated_at: number;
  revision: number;
}

export interface LocalDeploymentsTable {
  cluster_id: string;
  install_id: string;
  render_id: string;
  resource_count: number;
  deployed_at: number;
  /** HMAC-SHA256 of the secret data the deploy applied; null without secrets */
  secret_digest: string | null;
}

/** A line the local (simulated) cluster logged for an install's pods (migration 024). */
export interface LocalLogLinesTable {
  cluster_id: string;
  install_id: string;
  /** per install, 1, 2, ...: the order lines were written */
  seq: number;
  /** Unix milliseconds */
  at_ms: number;
  pod: string;
  container: string;
  line: string;
}

export interface SecretsTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  kind: string;
  /** JSON object */
  labels: string;
  /** JSON object alias -> version number */
  version_aliases: string;
  /** active | soft_deleted */
  state: string;
  /** highest version number handed out (never decreases) */
  version_count: number;
  enabled_version_count: number;
  created_at: number;
  updated_at: number;
  deleted_at: number | null;
  purge_at: number | null;
  revision: number;
}

export interface SecretVersionsTable {
  id: string;
  secret_id: string;
  workspace_id: string;
  version_number: number;
  /** enabled | disabled | destroyed */
  state: string;
  comment: string | null;
  /** the envelope of platform/keyring.ts; null once destroyed */
  key_id: string | null;
  wrapped_key: string | null;
  ciphertext: string | null;
  created_at: number;
  updated_at: number;
  destroyed_at: number | null;
  revision: number;
}

export interface AuditEventsTable {
  id: string;
  workspace_id: string;
  actor_type: string;
  actor_id: string;
  action: string;
  resource_type: string;
  resource_id: string;
  request_id: string | null;
  /** JSON object of strings */
  metadata: string;
  created_at: number;
  /** the secret an event about a secret or one of its versions concerns (its sec_ id); null for other events */
  secret_id: string | null;
  /** the actor's display name when the event was recorded (user, API token, OAuth client or machine name); null for system or unnamed (020) */
  actor_name: string | null;
  /** the acting user's e-mail when the event was recorded; null for other actors (020) */
  actor_email: string | null;
  /** the resource's name when the event was recorded (a cluster's or package's name, "wiki on dev" for an install); null when it has none (020) */
  resource_name: string | null;
}

export interface SubscriptionsTable {
  workspace_id: string;
  /** active | canceling */
  status: string;
  created_at: number;
  updated_at: number;
  revision: number;
}

export interface SubscriptionChangeRequestsTable {
  id: string;
  workspace_id: string;
  /** upgrade | downgrade | cancel */
  kind: string;
  previous_tier: string;
  requested_tier: string;
  /** pending | applied | canceled | rejected */
  status: string;
  status_reason: string | null;
  effective_at: number;
  resolved_at: number | null;
  operation_id: string | null;
  /** actor id (usr_, tok_ or oac_) */
  requested_by: string;
  created_at: number;
}

export interface NotificationsTable {
  id: string;
  user_id: string;
  workspace_id: string | null;
  type: string;
  resource_type: string;
  resource_id: string;
  title: string;
  body: string;
  severity: string;
  /** string map (JSON) */
  context: string;
  dedup_key: string;
  read_at: number | null;
  created_at: number;
}

export interface UsageCountersTable {
  workspace_id: string;
  metric: string;
  window_start: number;
  count: number;
}

export interface SnippetsTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  code: string;
  display_type: string;
  /** JSON array of input declarations */
  inputs: string;
  visibility: string;
  origin: string;
  purpose: string;
  agent_session_id: string | null;
  agent_turn_id: string | null;
  created_by: string;
  /** usr_, tok_ or oac_ id of whoever last changed code or inputs (migration 008); null only before it ran */
  writer_id: string | null;
  writer_user_id: string | null;
  writer_role_cap: string | null;
  created_at: number;
  updated_at: number;
  archived_at: number | null;
  revision: number;
}

export interface SnippetRunsTable {
  id: string;
  workspace_id: string;
  snippet_id: string;
  agent_session_id: string | null;
  agent_turn_id: string | null;
  state: string;
  source: string;
  run_by: string;
  snippet_revision: number;
  inputs: string;
  overrides: string;
  output: string | null;
  error: string | null;
  logs: string;
  cpu_time_ms: number;
  wall_time_ms: number;
  heap_used_bytes: number;
  request_count: number;
  /** 1 when the run read a secret value: its output and logs are shown only to roles that may read secret values */
  secret_derived: number;
  created_at: number;
}

export interface Database {
  users: UsersTable;
  sessions: SessionsTable;
  workspaces: WorkspacesTable;
  workspace_members: WorkspaceMembersTable;
  workspace_invitations: WorkspaceInvitationsTable;
  oidc_identities: OidcIdentitiesTable;
  api_tokens: ApiTokensTable;
  idempotency_keys: IdempotencyKeysTable;
  instances: InstancesTable;
  device_codes: DeviceCodesTable;
  oauth_clients: OAuthClientsTable;
  signing_keys: SigningKeysTable;
  sign_in_throttles: SignInThrottlesTable;
  user_totp: UserTotpTable;
  user_recovery_codes: UserRecoveryCodesTable;
  operations: OperationsTable;
  operation_steps: OperationStepsTable;
  jobs: JobsTable;
  mail_messages: MailMessagesTable;
  password_resets: PasswordResetsTable;
  events: EventsTable;
  clusters: ClustersTable;
  local_clusters: LocalClustersTable;
  packages: PackagesTable;
  package_versions: PackageVersionsTable;
  installs: InstallsTable;
  install_renders: InstallRendersTable;
  install_urls: InstallUrlsTable;
  preview_hostnames: PreviewHostnamesTable;
  local_deployments: LocalDeploymentsTable;
  local_log_lines: LocalLogLinesTable;
  secrets: SecretsTable;
  secret_versions: SecretVersionsTable;
  audit_events: AuditEventsTable;
  subscriptions: SubscriptionsTable;
  subscription_change_requests: SubscriptionChangeRequestsTable;
  plan_checkouts: PlanCheckoutsTable;
  plan_subscriptions: PlanSubscriptionsTable;
  notifications: NotificationsTable;
  usage_counters: UsageCountersTable;
  snippets: SnippetsTable;
  snippet_runs: SnippetRunsTable;
  machines: MachinesTable;
  agents: AgentsTable;
  agent_sessions: AgentSessionsTable;
  agent_turns: AgentTurnsTable;
  agent_turn_steps: AgentTurnStepsTable;
  agent_approval_requests: AgentApprovalRequestsTable;
  agent_events: AgentEventsTable;
  worker_bootstraps: WorkerBootstrapsTable;
  machine_credentials: MachineCredentialsTable;
  local_servers: LocalServersTable;
  offers: OffersTable;
  order_drafts: OrderDraftsTable;
  checkout_sessions: CheckoutSessionsTable;
  orders: OrdersTable;
  payment_events: PaymentEventsTable;
  local_checkouts: LocalCheckoutsTable;
  local_payment_events: LocalPaymentEventsTable;
}

export interface MachinesTable {
  id: string;
  workspace_id: string;
  cluster_id: string;
  name: string | null;
  origin: string;
  provider: string;
  instance_type: string | null;
  state: string;
  node_name: string | null;
  /** JSON */
  facts: string | null;
  last_heartbeat_at: number | null;
  expires_at: number | null;
  reconciling: number;
  provider_server_id: string | null;
  created_by: string;
  created_at: number;
  updated_at: number;
  revision: number;
}

export interface WorkerBootstrapsTable {
  id: string;
  workspace_id: string;
  cluster_id: string;
  token_hash: string;
  status: string;
  expires_at: number;
  for_machine_id: string | null;
  used_by_machine_id: string | null;
  used_at: number | null;
  created_by: string;
  created_at: number;
  updated_at: number;
  revision: number;
}

export interface MachineCredentialsTable {
  id: string;
  workspace_id: string;
  machine_id: string;
  token_hash: string;
  created_at: number;
  revoked_at: number | null;
  revoked_reason: string | null;
}

export interface LocalServersTable {
  id: string;
  machine_id: string;
  name: string;
  instance_type: string;
  power: string;
  user_data_sealed: string;
  credential_sealed: string | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  created_at: number;
}

export interface AgentsTable {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  instructions: string;
  capabilities: string;
  model_policy: string;
  tool_policy: string;
  state: string;
  origin: string;
  created_by: string;
  created_at: number;
  updated_at: number;
  archived_at: number | null;
  revision: number;
}

export interface AgentSessionsTable {
  id: string;
  workspace_id: string;
  agent_id: string;
  state: string;
  archived: number;
  origin: string;
  title: string | null;
  created_by: string;
  event_seq: number;
  created_at: number;
  updated_at: number;
  revision: number;
}

export interface AgentTurnsTable {
  id: string;
  workspace_id: string;
  agent_id: string;
  session_id: string;
  state: string;
  origin: string;
  input_content: string;
  runtime_hint: string;
  model: string | null;
  provider: string | null;
  created_by: string;
  writer_user_id: string | null;
  writer_role_cap: string | null;
  started_at: number | null;
  completed_at: number | null;
  runtime_decision: string | null;
  decision_reason: string | null;
  resolved_execution_mode: string | null;
  admission_error_code: string | null;
  admission_error_message: string | null;
  failure_code: string | null;
  failure_message: string | null;
  cost_microcents: number;
  token_count: number;
  compute_ms: number;
  api_call_count: number;
  /** the estimate of the model call the turn is making, held against its agent's budget (0 between calls) */
  reserved_microcents: number;
  /** the cents of that estimate held on the workspace's agents/cost_cents counter, and the counter's window */
  reserved_quota_cents: number;
  reserved_quota_window: number | null;
  output_text: string | null;
  cancel_requested: number;
  created_at: number;
  updated_at: number;
  revision: number;
}

export interface AgentTurnStepsTable {
  id: string;
  turn_id: string;
  position: number;
  kind: string;
  call_id: string | null;
  tool: string | null;
  state: string;
  request: string | null;
  result: string | null;
  started_at: number;
  completed_at: number | null;
}

export interface AgentApprovalRequestsTable {
  id: string;
  workspace_id: string;
  agent_id: string;
  session_id: string;
  turn_id: string;
  step_id: string | null;
  kind: string;
  code: string | null;
  summary: string;
  state: string;
  reason: string | null;
  resolved_by: string | null;
  resolved_at: number | null;
  created_by: string;
  created_at: number;
  updated_at: number;
  revision: number;
}

export interface AgentEventsTable {
  id: string;
  workspace_id: string;
  agent_id: string;
  session_id: string;
  turn_id: string;
  sequence: number;
  type: string;
  data: string;
  created_at: number;
}

/** Columns described in migration 014_commerce.ts. */
export interface OffersTable {
  id: string;
  workspace_id: string;
  package_id: string;
  package_version_id: string | null;
  title: string;
  currency: string;
  unit_amount: number;
  interval: string;
  commercial_mode: string;
  compute_mode: string;
  field_values: string;
  allowed_emails: string | null;
  expires_at: number | null;
  max_uses: number | null;
  uses_held: number;
  orders_count: number;
  drafts_count: number;
  order_ttl_minutes: number;
  customer_display_name: string | null;
  customer_external_id: string | null;
  notes: string | null;
  internal_note: string | null;
  short_hash: string;
  created_by: string;
  created_at: number;
  updated_at: number;
  archived_at: number | null;
  revision: number;
}

export interface OrderDraftsTable {
  id: string;
  offer_id: string;
  seller_workspace_id: string;
  status: string;
  termination_reason: string | null;
  cluster_ready: number;
  server_joined: number;
  payment_completed: number;
  user_id: string | null;
  customer_email: string | null;
  claim_token_hash: string | null;
  workspace_id: string | null;
  workspace_created: number;
  cluster_id: string | null;
  cluster_allocated: number;
  bootstrap_id: string | null;
  package_id: string | null;
  package_version_id: string | null;
  field_values: string | null;
  content_revision: number;
  holds_use: number;
  compute_operation_id: string | null;
  install_operation_id: string | null;
  cleanup_operation_id: string | null;
  expiry_notified_at: number | null;
  created_at: number;
  updated_at: number;
  ttl_expires_at: number;
  revision: number;
}

export interface CheckoutSessionsTable {
  id: string;
  draft_id: string;
  provider: string;
  provider_session_id: string;
  draft_revision: number;
  url: string;
  status: string;
  amount: number;
  currency: string;
  interval: string;
  expires_at: number;
  created_at: number;
  completed_at: number | null;
  payment_ref: string | null;
  subscription_id: string | null;
  refunded_at: number | null;
}

export interface OrdersTable {
  id: string;
  offer_id: string;
  order_draft_id: string;
  seller_workspace_id: string;
  customer_user_id: string;
  customer_workspace_id: string;
  amount: number;
  currency: string;
  interval: string;
  status: string;
  payment_provider: string;
  payment_provider_checkout_id: string | null;
  draft_revision: number;
  committed_at: number;
  subscription_id: string | null;
  next_renewal_at: number | null;
  renewals: number;
  delivery_id: string;
  install_id: string | null;
  install_operation_id: string | null;
  delivery_started_at: number | null;
  delivery_completed_at: number | null;
  created_at: number;
  updated_at: number;
  revision: number;
}

export interface PaymentEventsTable {
  provider: string;
  event_id: string;
  type: string;
  provider_session_id: string | null;
  outcome: string;
  created_at: number;
  received_at: number;
}

export interface LocalCheckoutsTable {
  id: string;
  idempotency_key: string;
  client_reference_id: string;
  metadata: string;
  title: string;
  amount: number;
  currency: string;
  interval: string;
  customer_email: string | null;
  status: string;
  success_url: string;
  cancel_url: string;
  expires_at: number;
  created_at: number;
  completed_at: number | null;
  card_last4: string | null;
  declines: number;
  payment_ref: string | null;
  refunded_at: number | null;
  subscription_id: string | null;
  current_period_end: number | null;
  subscription_canceled_at: number | null;
  /** 1: the subscription ends at its period end instead of renewing (migration 023) */
  cancel_at_period_end: number;
}

export interface LocalPaymentEventsTable {
  id: string;
  type: string;
  body: string;
  created_at: number;
  delivered_at: number | null;
  attempts: number;
  next_attempt_at: number;
}
