// Orders (API.md 8.7): read by the seller's members (svc-context or a workspace token) and by their
// customer (a user credential without svc-context); anyone else gets 404.
import type { Db } from '../../db/database.js';
import { notFound } from '../../platform/errors.js';
import { isId } from '../../platform/ids.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import * as repo from './order-drafts.repo.js';
import { ownerOf, type DraftViewer } from './order-drafts.service.js';
import { toOrder } from './order-drafts.view.js';
import type { OrderT } from './orders.schemas.js';

export function createOrderService(deps: { db: Db; cursors: CursorCodec; publicUrl: string }) {
  const { db, cursors, publicUrl } = deps;

  async function getOrder(viewer: DraftViewer, id: string): Promise<OrderT> {
    const row = isId('order', id) ? await repo.findOrder(db, id) : undefined;
    const sees = row && (viewer.kind === 'customer' ? row.customer_user_id === viewer.userId : row.seller_workspace_id === viewer.scope.workspaceId);
    if (!row || !sees) throw notFound('order');
    return toOrder(row, (await repo.urlsByInstall(db, [row.install_id])).get(row.install_id ?? '') ?? [], publicUrl);
  }

  async function listOrders(viewer: DraftViewer, query: { cursor?: string; limit?: number; offer?: string; status?: string }): Promise<Page<OrderT>> {
    const filters = { offer: query.offer, status: query.status };
    const bound = Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined));
    const scopeKey = viewer.kind === 'customer' ? viewer.userId : viewer.scope.workspaceId;
    const page = cursors.request(query, scopeKey, bound);
    const rows = await repo.listOrders(db, ownerOf(viewer), filters, page);
    const urls = await repo.urlsByInstall(db, rows.slice(0, page.limit).map((r) => r.install_id));
    return cursors.page(rows, page, scopeKey, bound, (row) => toOrder(row, urls.get(row.install_id ?? '') ?? [], publicUrl));
  }

  return { getOrder, listOrders };
}

export type OrderService = ReturnType<typeof createOrderService>;
