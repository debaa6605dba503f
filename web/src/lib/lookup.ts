// The workspace a record belongs to, when the signed-in person may read it (GET /v1/lookup/{id}):
// null for an unknown id, one they may not read, or one of no workspace.
import { client, ok } from './api.ts';

export async function findWorkspaceOf(id: string): Promise<string | null> {
  try {
    const found = await ok(client.GET('/v1/lookup/{id}', { params: { path: { id } } }));
    return found.workspace_id;
  } catch {
    return null;
  }
}
