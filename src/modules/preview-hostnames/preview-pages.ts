// The preview router's own pages, for people in a browser: why the workload did not answer (502,
// 504, 503), and what an install on the local simulated cluster would run. Everything shown is
// escaped (package and object names are user input); no script at all, and a CSP that allows only
// the one stylesheet below (by its hash), no frames and no form posts.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:44rem;margin:3rem auto;padding:0 1rem;color:#1f2328}' +
  'h1{font-size:1.4rem}code{background:#f3f4f6;padding:0 .2rem;border-radius:3px}' +
  'table{border-collapse:collapse}td,th{text-align:left;padding:.2rem .8rem .2rem 0;vertical-align:top}' +
  '.muted{color:#59636e;font-size:.9rem}';

/** The CSP of every page: no script, no frame, no form, only the inline style above. */
export const PAGE_CSP =
  `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; ` +
  "img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The README section that tells how to connect a real cluster. */
export const DEPLOYING_SECTION = 'README.md#deploying-to-a-kubernetes-cluster';

export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A browser asking for a page (Accept names text/html); API clients and curl get JSON. */
export function wantsHtml(req: IncomingMessage): boolean {
  const accept = req.headers.accept;
  return typeof accept === 'string' && /(^|,)\s*text\/html\s*(;|,|$)/i.test(accept);
}

export function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>\n`;
}

/** The page of a failed proxy: the status, what happened in a sentence, and the request id. */
export function errorPage(status: number, title: string, message: string, hostname: string, requestId: string): string {
  return page(`${status} ${title}`, `<h1>${status} ${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>` +
    `<p class="muted">${escapeHtml(hostname)} · request ${escapeHtml(requestId)}</p>`);
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface WouldRun {
  kind: string;
  name: string;
  replicas: number | null;
  images: string[];
}

/** What a render's objects would run: kind and name, the container images, replicas of Deployments and StatefulSets. */
export function wouldRun(resources: unknown): WouldRun[] {
  if (!Array.isArray(resources)) return [];
  return resources.filter(isObj).map((r) => {
    const spec = isObj(r.spec) ? r.spec : {};
    const workload = r.kind === 'Deployment' || r.kind === 'StatefulSet';
    // Pods hold their containers in spec, workloads in spec.template.spec, CronJobs one level deeper.
    const podSpec = isObj(spec.template) && isObj(spec.template.spec) ? spec.template.spec
      : isObj(spec.jobTemplate) && isObj(spec.jobTemplate.spec) && isObj(spec.jobTemplate.spec.template) && isObj(spec.jobTemplate.spec.template.spec)
        ? spec.jobTemplate.spec.template.spec : spec;
    const containers = [...(Array.isArray(podSpec.initContainers) ? podSpec.initContainers : []), ...(Array.isArray(podSpec.containers) ? podSpec.containers : [])];
    const images = containers.filter(isObj).map((c) => c.image).filter((i): i is string => typeof i === 'string');
    const replicas = workload ? (typeof spec.replicas === 'number' ? spec.replicas : 1) : null;
    return { kind: String(r.kind ?? '?'), name: String(isObj(r.metadata) ? r.metadata.name ?? '?' : '?'), replicas, images };
  });
}

export interface LocalInstallPage {
  hostname: string;
  packageName: string;
  semver: string;
  installId: string;
  renderId: string;
  clusterName: string;
  resources: unknown;
  /** where the web app shows the install */
  installUrl: string;
}

/** The local simulated cluster's answer to a browser: it runs nothing, here is what would run and how to run it for real. */
export function localInstallPage(p: LocalInstallPage): string {
  const rows = wouldRun(p.resources).map((o) =>
    `<tr><td>${escapeHtml(o.kind)}</td><td><code>${escapeHtml(o.name)}</code></td>` +
    `<td>${o.images.map((i) => `<code>${escapeHtml(i)}</code>`).join('<br>') || '—'}</td><td>${o.replicas ?? '—'}</td></tr>`);
  const objects = rows.length > 0
    ? `<table><tr><th>Kind</th><th>Name</th><th>Images</th><th>Replicas</th></tr>${rows.join('')}</table>`
    : '<p>The render has no objects.</p>';
  return page(`${p.packageName} ${p.semver} (simulated)`,
    `<h1>${escapeHtml(p.packageName)} ${escapeHtml(p.semver)} is installed on a simulated cluster</h1>` +
    `<p>This address belongs to install <a href="${escapeHtml(p.installUrl)}"><code>${escapeHtml(p.installId)}</code></a> ` +
    `(render <code>${escapeHtml(p.renderId)}</code>) on the local cluster <code>${escapeHtml(p.clusterName)}</code>. ` +
    'A local cluster is simulated by svc: it runs no workload, so there is no application here to answer.</p>' +
    `<h2>What would run</h2>${objects}` +
    '<h2>Run it for real</h2><p>Register a Kubernetes cluster (<code>provider: kubernetes</code> with its kubeconfig) and install the package ' +
    `there; this address then reaches the application. The steps are in the README, section <code>${escapeHtml(DEPLOYING_SECTION)}</code> ` +
    '(Deploying to a Kubernetes cluster).</p>' +
    `<p class="muted">${escapeHtml(p.hostname)}</p>`);
}
