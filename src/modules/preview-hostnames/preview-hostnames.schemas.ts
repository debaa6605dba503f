// Preview hostnames (spec 2.3, endpoints 1 and 6): a hostname under the preview domain bound to
// one render of an install, by track (floating: rebinding moves it) or by render (pinned).
import { Type, type Static } from 'typebox';
import { StringEnum } from '../../platform/http.js';
import { PageQuery } from '../../platform/pagination.js';

export const BINDING_KINDS = ['pinned', 'floating'] as const;
export type BindingKind = (typeof BINDING_KINDS)[number];
export const HOSTNAME_STATES = ['provisioning', 'active', 'evicted', 'releasing'] as const;
export type HostnameState = (typeof HOSTNAME_STATES)[number];
export const PROTOCOLS = ['http', 'websocket', 'grpc'] as const;
export const ROUTING_MODES = ['through_dispatcher', 'bypass_dispatcher'] as const;

/** The router serves only these; the other states 404. */
export const isServed = (state: string): boolean => state === 'active';

export const InstallIdParam = Type.String({ minLength: 1, maxLength: 55, description: 'install id (inst_...)' });
export const HostnameIdParam = Type.String({ minLength: 1, maxLength: 64, description: 'preview hostname id (phn_...)' });

const Track = (description: string) => Type.String({ minLength: 1, maxLength: 100, description });
const RenderId = Type.String({ minLength: 1, maxLength: 54, description: 'a render of this install (rnd_...) that has been deployed' });
const Protocol = StringEnum(PROTOCOLS, { default: 'http', description: 'http (default), websocket or grpc' });
const RoutingMode = StringEnum(ROUTING_MODES, {
  default: 'through_dispatcher',
  description: 'through_dispatcher (default) or bypass_dispatcher; recorded with the binding (the built-in router serves both alike)',
});
const Timestamp = (description: string) => Type.Integer({ minimum: 0, description: `${description} (Unix seconds)` });

export const PreviewHostname = Type.Object(
  {
    id: Type.String({ description: 'phn_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    install_id: Type.String({ description: 'inst_ id' }),
    hostname: Type.String({
      description:
        'one DNS label under the preview domain: `<track>--<install>` (floating) or `<track>-<render>--<install>` (pinned); ' +
        'a track that is not already a lowercase DNS label is slugged and suffixed with 6 characters of its hash',
    }),
    url: Type.String({ format: 'uri', description: 'where the preview router serves the hostname (plain HTTP; the port unless it is 80)' }),
    state: StringEnum(HOSTNAME_STATES, {
      description:
        'provisioning (its first bind operation has not completed), active (served), evicted (pinned only: its render was ' +
        'replaced longer ago than the pinned retention; no longer served), releasing (a release or the install\'s deletion ' +
        'runs; the hostname disappears when it ends)',
    }),
    binding: Type.Object(
      {
        kind: StringEnum(BINDING_KINDS, { description: 'floating (follows its track) or pinned (one render)' }),
        track: Type.String({ description: 'the track, 1-100 characters' }),
        render_id: Type.String({ description: 'the render served (while a rebind runs: the one served until it completes)' }),
        protocol: StringEnum(PROTOCOLS, { description: 'http, websocket or grpc' }),
        routing_mode: StringEnum(ROUTING_MODES, { description: 'through_dispatcher or bypass_dispatcher' }),
      },
      { description: 'what the hostname serves' },
    ),
    pending_render_id: Type.Union([Type.String(), Type.Null()], {
      description: 'while a bind operation runs: the render the hostname moves to when it completes (the latest request wins); else null',
    }),
    pending_operation_id: Type.Union([Type.String(), Type.Null()], { description: 'the latest bind or release operation still to take effect; else null' }),
    last_seen_at: Timestamp('last time the preview router served it, to the minute; created_at until then'),
    created_at: Timestamp('creation'),
    updated_at: Timestamp('last change of the binding or state'),
    etag: Type.String({ description: 'changes on every change of the binding or state; send it back in if-match' }),
  },
  {
    $id: 'PreviewHostname',
    description: 'A preview hostname: a hostname bound to one render of an install.',
    examples: [{
      id: 'phn_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', install_id: 'inst_01kaxq3m7y0c9v8t6r5p4n3m2k',
      hostname: 'main--inst-01kaxq3m7y0c9v8t6r5p4n3m2k.preview.example.com', url: 'http://main--inst-01kaxq3m7y0c9v8t6r5p4n3m2k.preview.example.com',
      state: 'active', binding: { kind: 'floating', track: 'main', render_id: 'rnd_01kaxq3m7y0c9v8t6r5p4n3m2k', protocol: 'http', routing_mode: 'through_dispatcher' },
      pending_render_id: null, pending_operation_id: null, last_seen_at: 1767225900, created_at: 1767225850, updated_at: 1767225860, etag: '2',
    }],
  },
);
export type PreviewHostnameT = Static<typeof PreviewHostname>;

export const BindFloatingBody = Type.Object(
  {
    track: Track('the track; binding it again moves its hostname to the new render'),
    render_id: RenderId,
    protocol: Type.Optional(Protocol),
    routing_mode: Type.Optional(RoutingMode),
  },
  { additionalProperties: false, description: 'Binds the track\'s floating hostname to a render.', examples: [{ track: 'main', render_id: 'rnd_01kaxq3m7y0c9v8t6r5p4n3m2k' }] },
);
export type BindFloatingBodyT = Static<typeof BindFloatingBody>;

export const BindPinnedBody = Type.Object(
  {
    render_id: RenderId,
    track: Type.Optional(Track('a name for the pinned hostname (default "pinned"); one hostname per (track, render)')),
    protocol: Type.Optional(Protocol),
    routing_mode: Type.Optional(RoutingMode),
  },
  { additionalProperties: false, description: 'Gives one render a hostname of its own.', examples: [{ render_id: 'rnd_01kaxq3m7y0c9v8t6r5p4n3m2k', track: 'pinned' }] },
);
export type BindPinnedBodyT = Static<typeof BindPinnedBody>;

export const ListPreviewHostnamesQuery = Type.Object(
  {
    ...PageQuery,
    binding_kind: Type.Optional(StringEnum(BINDING_KINDS, { description: 'only pinned or only floating hostnames' })),
    track: Type.Optional(Track('only hostnames of this track (exact match)')),
    state: Type.Optional(StringEnum(HOSTNAME_STATES, { description: 'only hostnames in this state' })),
  },
  { additionalProperties: false },
);
export type ListPreviewHostnamesQueryT = Static<typeof ListPreviewHostnamesQuery>;
