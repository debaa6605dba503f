// Placeholder replaced below by the home page of the workspace.
export function Home(_props: { path?: string }) {
  return null;
}
