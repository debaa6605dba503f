// Table types for Kysely. Timestamps are integer Unix seconds; booleans are 0/1 integers and
// JSON is text, so one set of statements runs unchanged on SQLite and PostgreSQL.

export interface UsersTable {
  id: string;
  email: string;
  password_hash: string;
  name: string | null;
  created_at: number;
  updated_at: number;
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
}

export interface WorkspaceMembersTable {
  id: string;
  workspace_id: string;
  user_id: string;
  role: string;
  joined_at: number;
  updated_at: number;
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

export interface LoginAttemptsTable {
  email: string;
  window_start: number;
  failures: number;
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
  created_at: number;
  updated_at: number;
  revision: number;
}

export interface LocalClustersTable {
  cluster_id: string;
  node_count: number;
  created_at: number;
}

export interface Database {
  users: UsersTable;
  sessions: SessionsTable;
  workspaces: WorkspacesTable;
  workspace_members: WorkspaceMembersTable;
  api_tokens: ApiTokensTable;
  idempotency_keys: IdempotencyKeysTable;
  device_codes: DeviceCodesTable;
  oauth_clients: OAuthClientsTable;
  signing_keys: SigningKeysTable;
  login_attempts: LoginAttemptsTable;
  operations: OperationsTable;
  operation_steps: OperationStepsTable;
  jobs: JobsTable;
  clusters: ClustersTable;
  local_clusters: LocalClustersTable;
}
