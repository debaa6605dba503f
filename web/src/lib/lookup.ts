// The workspace a record belongs to, when the signed-in person may read it (GET /v1/lookup/{id}).
// Until the lookup route exists on the server this answers null, and a record of another
// workspace shows as not found in the current one.
export async function findWorkspaceOf(_id: string): Promise<string | null> {
  return null;
}
