// Orders (API.md 8.7): read by the seller's members (svc-context or a workspace token) and by their
// customer (a user credential without svc-context); anyone else gets 404.
import type { Db } from '../../db/database.js';
import { notFound } from '../../platform/errors.js';
import { isId } from '../../platform/ids.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import type { UrlEntryT } from '../installs/installs.schemas.js';
import * as repo from './order-drafts.repo.js';
import type { DraftViewer } from './order-drafts.service.js';
import { toOrder, toUrls } from './order-drafts.view.js';
import type { OrderT } from './orders.schemas.js';

export function createOrderService(deps: { db: Db; cursors: CursorCodec; publicUrl: string }) {
  const { db, cursors, publicUrl } = deps;

  async function urlsByInstall(rows: repo.OrderRow[]): Promise<Map<string, UrlEntryT[]>> {
    const out = new Map<string, UrlEntryT[]>();
    const ids = rows.map((r) => r.install_id).filter((i): i is string => i !== null);
    for (const r of await repo.urlsOfInstalls(db, ids)) out.set(r.install_id, [...(out.get(r.install_id) ?? []), ...toUrls([r])]);
    return out;
  }

  async function getOrder(viewer: DraftViewer, id: string): Promise<OrderT> {
    const row = isId('order', id) ? await repo.findOrder(db, id) : undefined;
    const sees = row && (viewer.kind === 'customer' ? row.customer_user_id === viewer.userId : row.seller_workspace_id === viewer.scope.workspaceId);
    if (!row || !sees) throw notFound('order');
    return toOrder(row, (await urlsByInstall([row])).get(row.install_id ?? '') ?? [], publicUrl);
  }

  async function listOrders(viewer: DraftViewer, query: { cursor?: string; limit?: number; offer?: string; status?: string }): Promise<Page<OrderT>> {
    const filters = { offer: query.offer, status: query.status };
    const bound = Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined));
    const scopeKey = viewer.kind === 'customer' ? viewer.userId : viewer.scope.workspaceId;
    const page = cursors.request(query, scopeKey, bound);
    const rows = viewer.kind === 'customer'
      ? await repo.listCustomerOrders(db, viewer.userId, filters, page)
      : await repo.listSellerOrders(db, viewer.scope.workspaceId, filters, page);
    const urls = await urlsByInstall(rows.slice(0, page.limit));
    return cursors.page(rows, page, scopeKey, bound, (row) => toOrder(row, urls.get(row.install_id ?? '') ?? [], publicUrl));
  }

  return { getOrder, listOrders };
}

export type OrderService = ReturnType<typeof createOrderService>;
