// The app: who is signed in decides between the sign-in page and the signed-in frame; inside it,
// the router picks the page for the path (every html_url the API hands out is one of them). An
// offer's link and an invitation's link are the pages a signed-out visitor sees besides sign-in.
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ErrorBoundary, LocationProvider, Router, useLocation } from 'preact-iso';
import { ApiError, client, ok } from './lib/api.ts';
import { loadWorkspaces, SessionProvider, type Me, type Workspace } from './lib/session.tsx';
import { toApiError } from './lib/useApi.ts';
import { Layout } from './components/Layout.tsx';
import { ErrorNotice } from './components/ErrorNotice.tsx';
import { SignIn } from './pages/SignIn.tsx';
import { NotFound } from './pages/NotFound.tsx';
import { OfferLink } from './pages/order/OfferLink.tsx';
import { Invite } from './pages/invite/Invite.tsx';
import { ResetPassword } from './pages/reset/ResetPassword.tsx';
import { ROUTES } from './routes.tsx';

/** An offer's link (/i/{short_hash}) is public: it shows the offer to a visitor who is signed out. */
const OFFER_LINK = /^\/i\/([0-9A-Za-z]{8})\/?$/;

function SignedOut(props: { onSignedIn: () => Promise<void> }) {
  const { path } = useLocation();
  if (path === '/invite') return <Invite />;
  if (path === '/reset-password') return <ResetPassword />;
  const hash = OFFER_LINK.exec(path)?.[1];
  if (!hash) return <SignIn onSignedIn={props.onSignedIn} />;
  return (
    <main class="public" id="main" tabIndex={-1}>
      <OfferLink hash={hash} signedIn={false} onSignedIn={props.onSignedIn} />
    </main>
  );
}

type State = { kind: 'loading' } | { kind: 'signed-out' } | { kind: 'signed-in'; me: Me; workspaces: Workspace[] } | { kind: 'error'; error: ApiError };

export function App() {
  const [state, setState] = useState<State>({ kind: 'loading' });
  const load = useCallback(async () => {
    try {
      const me = await ok(client.GET('/v1/me', {}));
      setState({ kind: 'signed-in', me, workspaces: await loadWorkspaces() });
    } catch (err) {
      const e = toApiError(err);
      setState(e.status === 401 ? { kind: 'signed-out' } : { kind: 'error', error: e });
    }
  }, []);
  useEffect(() => void load(), [load]);
  const signedOut = useCallback(() => setState({ kind: 'signed-out' }), []);

  if (state.kind === 'loading') return <p class="boot" aria-busy="true">Loading…</p>;
  if (state.kind === 'error') {
    return (
      <main class="boot">
        <ErrorNotice error={state.error} title="svc could not be reached." />
        <button type="button" onClick={() => void load()}>
          Try again
        </button>
      </main>
    );
  }
  return (
    <LocationProvider>
      {state.kind === 'signed-out' ? (
        <SignedOut onSignedIn={load} />
      ) : (
        <SessionProvider me={state.me} workspaces={state.workspaces} onSignedOut={signedOut}>
          <Layout>
            <ErrorBoundary>
              <Router>
                {ROUTES.map(([path, Component]) => (
                  <Component key={path} path={path} />
                ))}
                <NotFound default />
              </Router>
            </ErrorBoundary>
          </Layout>
        </SessionProvider>
      )}
    </LocationProvider>
  );
}
