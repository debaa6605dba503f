// Issue 36: the local (simulated) cluster's logs. Its "pods" run nothing, so what they log is what
// its driver did for them (objects applied, containers "started", readiness checks): lines numbered
// per install (`seq`, one more than the install's last), the last 500 kept. They go with the
// simulated cluster (cascade) and with the install's undeploy, as a namespace's pods' logs do.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('local_log_lines')
    .addColumn('cluster_id', 'text', (c) => c.notNull().references('local_clusters.cluster_id').onDelete('cascade'))
    .addColumn('install_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    /** when it was written, Unix milliseconds */
    .addColumn('at_ms', 'bigint', (c) => c.notNull())
    .addColumn('pod', 'text', (c) => c.notNull())
    .addColumn('container', 'text', (c) => c.notNull())
    .addColumn('line', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('local_log_lines_pk', ['install_id', 'seq'])
    .execute();
  await db.schema.createIndex('local_log_lines_cluster_idx').on('local_log_lines').column('cluster_id').execute();
}
