// GET /v1/lookup/{id} (see lookup.service.ts).
import { Type } from 'typebox';
import { bearerSecurity, responses, StringEnum, type App } from '../../platform/http.js';
import type { Services } from '../../services.js';
import { createLookupService, LOOKUP_TYPES } from './lookup.service.js';

export const IdLookup = Type.Object(
  {
    id: Type.String({ description: 'the id looked up' }),
    type: StringEnum(LOOKUP_TYPES, { description: 'what the id names, as the API calls it (`cluster` is a `/v1/clusters/{id}`)' }),
    workspace_id: Type.String({ description: 'ws_ id of the workspace it belongs to: send it as svc-context to read it with a user credential' }),
    html_url: Type.Union([Type.String({ format: 'uri' }), Type.Null()], {
      description: 'the same html_url the resource carries (its page in the web app); null for a type without one (package)',
    }),
  },
  {
    $id: 'IdLookup',
    description: 'The workspace and page of an id',
    examples: [{
      id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k', type: 'cluster', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k',
      html_url: 'https://svc.example.com/clusters/clu_01kaxq3m7y0c9v8t6r5p4n3m2k',
    }],
  },
);

// 100: the router's own bound on a path parameter (a longer one is its 404), so no id is ever
// refused with a 400 here: whatever is not a readable id is the one 404.
const LookupParams = Type.Object({
  id: Type.String({
    maxLength: 100,
    description: 'an id of an operation (op_), cluster (clu_), install (inst_), secret (sec_), snippet (snp_), package (pkg_), machine (mch_), agent (agt_) or offer (ofr_)',
  }),
});

export function lookupRoutes(app: App, s: Pick<Services, 'config' | 'db'>): void {
  const service = createLookupService({ db: s.db, publicUrl: s.config.publicUrl });
  app.get('/v1/lookup/:id', {
    config: { auth: 'any' },
    schema: {
      tags: ['lookup'], security: bearerSecurity, operationId: 'getLookup', summary: 'Find the workspace and page of an id',
      description:
        'Which workspace an id of an operation, cluster, install, secret, snippet, package, machine, agent or offer belongs to, and its `html_url`, ' +
        'when the caller may read it: a user credential must be a member (any role) of that workspace now, a workspace ' +
        'credential (API token, OAuth client) only finds ids of its own workspace. An operation of a deleted workspace is ' +
        'found only by the user who requested it. The web app uses it to open a link to a record of another workspace than ' +
        'the one it shows. Needs no svc-context. 404 NOT_FOUND, the same for each, when the id is unknown, malformed, of ' +
        'another kind, or of a workspace the caller may not read (the id is not validated into a 400).',
      params: LookupParams,
      response: responses({ 200: IdLookup }, [404]),
    },
  }, async (request) => service.lookup(request.principal!, request.params.id));
}
