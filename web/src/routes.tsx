// Every page of the app by path (preact-iso patterns). Each area adds its lines in its block;
// the html_url paths the API hands out (/operations/{id}, /clusters/{id}, ...) must stay here.
import type { FunctionComponent } from 'preact';
import { Home } from './pages/Home.tsx';
import { NewWorkspace } from './pages/workspaces/NewWorkspace.tsx';
import { ClusterList, ClusterPage, NewCluster } from './pages/clusters/Clusters.tsx';
import { OperationList, OperationPage } from './pages/operations/Operations.tsx';
import { NewPackage, PackageList, PackagePage } from './pages/packages/Packages.tsx';
import { PublishVersion, VersionPage } from './pages/packages/Versions.tsx';
import { InstallList } from './pages/installs/Installs.tsx';
import { NewInstall } from './pages/installs/NewInstall.tsx';
import { InstallPage } from './pages/installs/InstallPage.tsx';
import { Members } from './pages/settings/Members.tsx';
import { WorkspaceSettings } from './pages/settings/WorkspaceSettings.tsx';
import { Tokens } from './pages/settings/Tokens.tsx';
import { OAuthClients } from './pages/settings/OAuthClients.tsx';
import { PlanPage } from './pages/settings/Plan.tsx';
import { Notifications } from './pages/notifications/Notifications.tsx';
import { Audit } from './pages/audit/Audit.tsx';
import { NewSecret, SecretList } from './pages/secrets/Secrets.tsx';
import { SecretPage } from './pages/secrets/SecretPage.tsx';
import { NewSnippet, SnippetList } from './pages/snippets/Snippets.tsx';
import { SnippetPage } from './pages/snippets/SnippetPage.tsx';
import { RunPage } from './pages/snippets/RunPage.tsx';
import { MachineList } from './pages/machines/Machines.tsx';
import { MachinePage } from './pages/machines/MachinePage.tsx';
import { AgentList, NewAgent } from './pages/agents/Agents.tsx';
import { AgentPage } from './pages/agents/AgentPage.tsx';
import { SessionList } from './pages/agents/Sessions.tsx';
import { ChatPage, NewChat } from './pages/agents/ChatPage.tsx';
import { NewOffer, OfferList } from './pages/offers/Offers.tsx';
import { OfferPage } from './pages/offers/OfferPage.tsx';
import { OrderList, OrderPage } from './pages/orders/Orders.tsx';
import { OfferLinkPage } from './pages/order/OfferLink.tsx';
import { DraftPage } from './pages/order/DraftPage.tsx';
import { Account } from './pages/account/Account.tsx';
import { Invite } from './pages/invite/Invite.tsx';
import { ResetPassword } from './pages/reset/ResetPassword.tsx';
import { Users } from './pages/users/Users.tsx';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Routed = FunctionComponent<any>;

export const ROUTES: [path: string, page: Routed][] = [
  ['/', Home],
  ['/workspaces/new', NewWorkspace],
  // the person's own account
  ['/account', Account],
  // an invitation's link (/invite#token), also public (app.tsx)
  ['/invite', Invite],
  // a password reset link (/reset-password#token), also public (app.tsx)
  ['/reset-password', ResetPassword],
  // the instance's accounts, for its admins
  ['/users', Users],
  // clusters
  ['/clusters', ClusterList],
  ['/clusters/new', NewCluster],
  ['/clusters/:id', ClusterPage],
  // machines (html_url /machines/{id})
  ['/machines', MachineList],
  ['/machines/:id', MachinePage],
  // agents and their chats (html_url /agents/{id}, /agent_sessions/{id})
  ['/agents', AgentList],
  ['/agents/new', NewAgent],
  ['/agents/:id', AgentPage],
  ['/agents/:id/chat', NewChat],
  ['/agent_sessions', SessionList],
  ['/agent_sessions/:id', ChatPage],
  // operations
  ['/operations', OperationList],
  ['/operations/:id', OperationPage],
  // packages, versions, installs
  ['/packages', PackageList],
  ['/packages/new', NewPackage],
  ['/packages/:id', PackagePage],
  ['/packages/:id/versions/new', PublishVersion],
  ['/packages/:id/versions/:vid', VersionPage],
  ['/installs', InstallList],
  ['/installs/new', NewInstall],
  ['/installs/:id', InstallPage],
  // secrets
  ['/secrets', SecretList],
  ['/secrets/new', NewSecret],
  ['/secrets/:id', SecretPage],
  // snippets
  ['/snippets', SnippetList],
  ['/snippets/new', NewSnippet],
  ['/snippets/:id', SnippetPage],
  ['/snippets/:id/runs/:runId', RunPage],
  // settings: members, tokens, oauth clients, plan, notifications, audit
  ['/settings/workspace', WorkspaceSettings],
  ['/settings/members', Members],
  ['/settings/tokens', Tokens],
  ['/settings/oauth-clients', OAuthClients],
  ['/settings/plan', PlanPage],
  ['/notifications', Notifications],
  ['/audit', Audit],
  // selling: offers and orders (html_url /offers/{id}, /orders/{id}), the customer's link and wizard
  // (/i/{short_hash}, html_url /order_drafts/{id}); the link is also public (app.tsx)
  ['/offers', OfferList],
  ['/offers/new', NewOffer],
  ['/offers/:id', OfferPage],
  ['/orders', OrderList],
  ['/orders/:id', OrderPage],
  ['/i/:hash', OfferLinkPage],
  ['/order_drafts/:id', DraftPage],
];
