// The signed-in frame: header (workspace switcher, notifications bell, account), the navigation
// of every area, and the page. Later areas (machines, agents, offers) add a line to NAV.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok } from '../lib/api.ts';
import { useSession } from '../lib/session.tsx';
import { Page } from './Page.tsx';

interface NavItem {
  href: string;
  label: string;
  /** shown only to the instance's admins */
  instanceAdmin?: boolean;
}

/** The areas of a workspace, in the order of the sidebar. */
export const NAV: { title: string; items: NavItem[] }[] = [
  {
    title: 'Deploy',
    items: [
      { href: '/', label: 'Home' },
      { href: '/installs', label: 'Installs' },
      { href: '/packages', label: 'Packages' },
      { href: '/clusters', label: 'Clusters' },
      { href: '/machines', label: 'Machines' },
      { href: '/operations', label: 'Operations' },
    ],
  },
  {
    title: 'Sell',
    items: [
      { href: '/offers', label: 'Offers' },
      { href: '/orders', label: 'Orders' },
    ],
  },
  {
    title: 'Build',
    items: [
      { href: '/secrets', label: 'Secrets' },
      { href: '/snippets', label: 'Snippets' },
    ],
  },
  {
    title: 'Assist',
    items: [
      { href: '/agents', label: 'Agents' },
      { href: '/agent_sessions', label: 'Chats' },
    ],
  },
  {
    title: 'Workspace',
    items: [
      { href: '/settings/workspace', label: 'Settings' },
      { href: '/settings/members', label: 'Members' },
      { href: '/settings/tokens', label: 'API tokens' },
      { href: '/settings/oauth-clients', label: 'OAuth clients' },
      { href: '/settings/plan', label: 'Plan and quotas' },
      { href: '/audit', label: 'Audit log' },
    ],
  },
  {
    // the person's own, across workspaces (the header's e-mail links here too, on wide screens)
    title: 'You',
    items: [{ href: '/account', label: 'Your account' }, { href: '/users', label: 'Users', instanceAdmin: true }],
  },
];

function isCurrent(href: string, path: string): boolean {
  return href === '/' ? path === '/' : path === href || path.startsWith(`${href}/`);
}

/** Unread notifications of the current workspace, read again on every navigation and each minute. */
function useUnread(path: string, workspaceId: string | undefined): number | null {
  const [count, setCount] = useState<number | null>(null);
  useEffect(() => {
    if (!workspaceId) return;
    let live = true;
    const read = () =>
      ok(client.GET('/v1/notifications:unreadCount', {}))
        .then((r) => live && setCount(r.unread_count))
        .catch(() => live && setCount(null));
    void read();
    const t = setInterval(read, 60_000);
    const onChange = () => void read();
    window.addEventListener('svc:notifications', onChange);
    return () => {
      live = false;
      clearInterval(t);
      window.removeEventListener('svc:notifications', onChange);
    };
  }, [path, workspaceId]);
  return count;
}

/**
 * Pages a person uses without a workspace: creating one, and a customer's order (an offer's link,
 * the order wizard, their order), which a new customer reaches before they have any.
 */
const PERSONAL = /^\/(workspaces\/new|account$|users$|invite$|reset-password$|i\/|order_drafts\/|orders\/)/;

/** Every page but those acts in a workspace: a person in none is asked to make one. */
function NoWorkspace() {
  return (
    <Page title="No workspace yet">
      <p>You are not a member of any workspace. Create one, or ask someone to add you to theirs.</p>
      <a class="button primary" href="/workspaces/new">
        Create a workspace
      </a>
    </Page>
  );
}

/** A workspace that requires two factors, for a person without one: what to do, instead of pages the API refuses. */
function TwoFactorNeeded(props: { name: string }) {
  return (
    <Page title="Two-factor sign-in required">
      <p>
        {props.name} requires two-factor sign-in of its members. Turn it on for your account (an authenticator app on your phone), then come back:
        everything here opens again at once.
      </p>
      <a class="button primary" href="/account">
        Set up two-factor sign-in
      </a>
    </Page>
  );
}

export function Layout(props: { children: ComponentChildren }) {
  const { me, workspaces, workspace, switchTo, signOut } = useSession();
  const { path, route } = useLocation();
  const unread = useUnread(path, workspace?.id);
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => setMenuOpen(false), [path]);

  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <button type="button" class="menu-toggle" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
        <a class="brand" href="/">
          svc
        </a>
        {workspaces.length > 0 && (
          <label class="switcher">
            <span class="visually-hidden">Workspace</span>
            <select
              value={workspace?.id}
              onChange={(e) => {
                switchTo(e.currentTarget.value);
                route('/');
              }}
            >
              {workspaces.map((w) => (
                <option key={w.id} value={w.id}>
                  {w.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <a class="button" href="/workspaces/new">
          New workspace
        </a>
        <span class="spacer" />
        {workspace && (
          <a class="bell" href="/notifications" aria-label={unread ? `Notifications, ${unread} unread` : 'Notifications'}>
            <svg aria-hidden="true" viewBox="0 0 24 24" width="22" height="22" class="icon">
              <path d="M12 22a2.5 2.5 0 0 0 2.45-2h-4.9A2.5 2.5 0 0 0 12 22Zm7-6V11a7 7 0 0 0-5.5-6.84V3a1.5 1.5 0 0 0-3 0v1.16A7 7 0 0 0 5 11v5l-2 2v1h18v-1l-2-2Z" />
            </svg>
            {unread ? <span class="count">{unread > 99 ? '99+' : unread}</span> : null}
          </a>
        )}
        <a class="who muted" href="/account">
          <span class="visually-hidden">Your account: </span>
          {me.email}
        </a>
        <button type="button" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <nav id="nav" class={`sidebar${menuOpen ? ' open' : ''}`} aria-label="Main">
        {NAV.map((group) => (
          <div key={group.title}>
            <h2 class="nav-title">{group.title}</h2>
            <ul>
              {group.items.filter((item) => !item.instanceAdmin || me.instance_admin).map((item) => (
                <li key={item.href}>
                  <a href={item.href} aria-current={isCurrent(item.href, path) ? 'page' : undefined}>
                    {item.label}
                  </a>
                </li>
              ))}
            </ul>
          </div>
        ))}
      </nav>
      <main id="main" class="content" tabIndex={-1}>
        {PERSONAL.test(path) ? props.children : !workspace ? <NoWorkspace /> : workspace.require_two_factor && !me.two_factor ? <TwoFactorNeeded name={workspace.name} /> : props.children}
      </main>
    </div>
  );
}
