// Issue 36, deploys that serve: the address of a kubernetes cluster's gateway, when the operator
// gives one (an http(s) URL of the Gateway's or ingress controller's load balancer). The preview
// router then sends an install's traffic there with the original Host header; without one it goes
// through the Kubernetes API server's service proxy. Null for local clusters and until set.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('clusters').addColumn('gateway_url', 'text').execute();
}
