// Clusters (API.md section 6) and their capabilities (spec 2.9, endpoint 9).
import { Type, type Static } from 'typebox';
import { CLUSTER_PROVIDERS, ClusterCapabilities, LOCAL_FAULT_ACTIONS } from '../../drivers/cluster/driver.js';
import { KUBECONFIG_MAX_BYTES } from '../../drivers/cluster/kubeconfig.js';
import { StringEnum } from '../../platform/http.js';

export const CLUSTER_STATES = ['pending', 'provisioning', 'active', 'suspended', 'deleting'] as const;
export type ClusterState = (typeof CLUSTER_STATES)[number];

export const ClusterId = Type.String({ minLength: 1, maxLength: 54, description: 'cluster id (clu_...)' });

const ClusterName = Type.String({
  minLength: 1,
  maxLength: 63,
  pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$',
  description: 'a DNS label: 1-63 of [a-z0-9-], starting and ending with a letter or digit; unique in the workspace',
});

const ProviderSchema = StringEnum(CLUSTER_PROVIDERS, {
  description: '`local`: a simulated cluster run by the service (the default); `kubernetes`: a real cluster reached with a kubeconfig',
});

const GATEWAY_URL_DESCRIPTION =
  'kubernetes clusters: the address of the cluster\'s gateway (its Gateway\'s or ingress controller\'s load balancer), an http or https ' +
  'URL without credentials, path, query or fragment. The preview router sends the traffic of install URLs and preview hostnames there, ' +
  'with the original Host header (and, over https, the hostname as TLS server name); null: through the Kubernetes API server\'s ' +
  'service proxy with the cluster\'s credentials (fine for trying things out; a gateway serves real traffic without loading the API server). ' +
  'Unless the operator sets SVC_PREVIEW_PROXY_ALLOW_PRIVATE=true, the router connects only to public addresses: one that is, or resolves ' +
  'to, a loopback, private or link-local address is accepted here but answered 502 at every request';

const GatewayUrl = Type.String({ minLength: 1, maxLength: 2048, description: GATEWAY_URL_DESCRIPTION });

export const Cluster = Type.Object(
  {
    id: Type.String({ description: 'clu_ id' }),
    html_url: Type.String({ format: 'uri', description: 'the dashboard view of the cluster' }),
    name: Type.String({ description: 'unique in the workspace' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    state: StringEnum(CLUSTER_STATES, {
      description:
        'pending (registered, its cluster.create operation not yet picked up), provisioning (cluster.create is running), ' +
        'active (it answered), suspended (its last create or refresh failed; a refresh that succeeds makes it active again), ' +
        'deleting (a cluster.delete operation runs; the cluster disappears when it ends)',
    }),
    provider: ProviderSchema,
    reconciling: Type.Boolean({ description: 'true while an operation acts on the cluster' }),
    gateway_url: Type.Union([Type.String(), Type.Null()], { description: GATEWAY_URL_DESCRIPTION }),
    created_at: Type.Integer({ minimum: 0, description: 'Unix seconds' }),
    updated_at: Type.Integer({ minimum: 0, description: 'Unix seconds' }),
    etag: Type.String({ description: 'changes on every write, also on state changes made by operations; send it back in if-match' }),
  },
  {
    $id: 'Cluster',
    description: 'A cluster registered in a workspace. The kubeconfig of a kubernetes cluster is never returned.',
    examples: [{
      id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k', html_url: 'https://svc.example.com/clusters/clu_01kaxq3m7y0c9v8t6r5p4n3m2k', name: 'dev', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k',
      state: 'active', provider: 'local', reconciling: false, gateway_url: null, created_at: 1767225600, updated_at: 1767225660, etag: '3',
    }],
  },
);
export type ClusterT = Static<typeof Cluster>;

export const LocalFaultSchema = Type.Object(
  {
    action: StringEnum(LOCAL_FAULT_ACTIONS, {
      description:
        'the driver action the fault applies to: provision, capabilities and destroy (the cluster\'s operations); deploy, health ' +
        '(the readiness check after a deploy: a failure reads as "not ready yet") and undeploy (install operations)',
    }),
    fail_times: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, default: 0, description: 'the first N attempts of the step calling the action fail (retryably)' })),
    latency_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000, default: 0, description: 'every call of the action first waits this long' })),
  },
  { additionalProperties: false },
);

export const CreateClusterBody = Type.Object(
  {
    name: ClusterName,
    provider: Type.Optional(ProviderSchema),
    kubeconfig: Type.Optional(Type.String({
      minLength: 1,
      maxLength: KUBECONFIG_MAX_BYTES,
      description:
        'kubernetes provider only, and required there: a self-contained kubeconfig (YAML or JSON; `kubectl config view --minify --flatten`) ' +
        'with inline credentials (token, basic auth or client certificate); exec, auth-provider and file references are refused. ' +
        'Stored encrypted (AES-256-GCM) and never returned.',
    })),
    local: Type.Optional(Type.Object(
      {
        faults: Type.Optional(Type.Array(LocalFaultSchema, {
          maxItems: 3,
          description: 'injected faults, at most one per action: to see retries, failures and slow steps. A test hook: only when the operator runs the service with SVC_TEST_HOOKS=1, else a non-empty list is 400',
        })),
      },
      { additionalProperties: false, description: 'local provider only: options of the simulated cluster' },
    )),
    gateway_url: Type.Optional(GatewayUrl),
  },
  { additionalProperties: false, description: 'Registers a cluster; provider defaults to local.', examples: [{ name: 'dev', provider: 'local' }, { name: 'prod', provider: 'kubernetes', kubeconfig: 'apiVersion: v1\nkind: Config\n...' }] },
);
export type CreateClusterBodyT = Static<typeof CreateClusterBody>;

export const PatchClusterBody = Type.Object(
  {
    name: Type.Optional(ClusterName),
    gateway_url: Type.Optional(Type.Union([GatewayUrl, Type.Null()], { description: 'kubernetes clusters only: the gateway address; null removes it' })),
  },
  { additionalProperties: false, minProperties: 1, description: 'The fields to change: at least one.', examples: [{ name: 'staging' }, { gateway_url: 'http://203.0.113.7' }] },
);
export type PatchClusterBodyT = Static<typeof PatchClusterBody>;

export const ClusterCapabilitiesView = Type.Object(
  {
    ...ClusterCapabilities.properties,
    observed_at: Type.Integer({ minimum: 0, description: 'when this snapshot was read from the cluster (Unix seconds)' }),
  },
  {
    $id: 'ClusterCapabilities',
    description: 'The last observed capabilities of a cluster (its API groups, classes, gateways and nodes), with when they were observed.',
    examples: [{ api_groups: ['v1', 'apps/v1', 'networking.k8s.io/v1'], storage_classes: [], gateway_classes: [], gateways: [], ingress_classes: ['nginx'], nodes: [], observed_at: 1767225660 }],
  },
);
export type ClusterCapabilitiesViewT = Static<typeof ClusterCapabilitiesView>;
