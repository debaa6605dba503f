// The one keyset-pagination step for list queries: rows after the cursor's id, newest first,
// one more than the page so the caller knows whether another page exists.
import type { ReferenceExpression, SelectQueryBuilder } from 'kysely';
import type { PageRequest } from '../platform/pagination.js';

export function keysetPage<DB, TB extends keyof DB, O>(
  query: SelectQueryBuilder<DB, TB, O>,
  idColumn: ReferenceExpression<DB, TB>,
  page: PageRequest,
): SelectQueryBuilder<DB, TB, O> {
  // Kysely cannot type a comparison on a column chosen by the caller; ids are strings.
  const column = idColumn as ReferenceExpression<DB, TB> & string;
  const after = page.afterId ? query.where(column, '<', page.afterId as never) : query;
  return after.orderBy(column as never, 'desc').limit(page.limit + 1);
}
