#!/usr/bin/env node
// The layer check of `npm test` (ARCHITECTURE.md, "The shape" and "The order of domains"), over
// TypeScript's own module resolution so it sees exactly the imports the compiler sees. It fails,
// with one readable line per finding, on:
//   - a cycle between module folders (src/modules/<a> -> <b> -> ... -> <a>);
//   - a module importing another module's repo (`*.repo.ts` of another folder), or code outside
//     the modules (web pages, say) importing a module's repo;
//   - a module calling a module of a higher domain group (the grouping table below);
//   - a driver (src/drivers/**) or shared code (platform/, db/, jobs/, sandbox/) importing a module;
//   - SQL (Kysely query builder calls, the `sql` tag) outside repos and src/db/.
// Type-only imports count like any other: a type names the module it comes from.
// dependency-cruiser would do the graph part, but its current releases need Node 22 or later.
// Usage: node scripts/check-layers.js [--graph]   (--graph prints the module-folder edges)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..');
const srcDir = join(root, 'src');

/**
 * The order of domains (ARCHITECTURE.md): a module may call services of its own group or a lower
 * one; a lower group learns of a higher group's changes only through domain events. Adapt this
 * table when a module arrives (and say why in the commit); an unlisted module fails the check.
 */
const DOMAIN_GROUPS = {
  // 1 identity: who is calling. The audit record sits here (ARCHITECTURE.md lists it under
  // tenancy): identity's own credential changes (API tokens, OAuth clients) are audited, and a
  // cross-cutting record sits low so that everything may call it; it imports no module.
  users: 1, sessions: 1, tokens: 1, oauth: 1, device: 1, audit: 1, mail: 1,
  // single sign-on: an OpenID provider's accounts linked to users (issue 34)
  oidc: 1,
  // the instance's administration reads who owns workspaces (tenancy) before deleting an account
  admin: 2,
  // 2 tenancy: workspaces and what they are allowed; the cross-cutting records (quotas,
  // notifications, operations) sit here so that every higher domain may write them
  workspaces: 2, plans: 2, subscriptions: 2, quotas: 2, notifications: 2, operations: 2,
  // account deletion sweeps a user's sign-ins and workspaces (identity over tenancy)
  account: 2,
  // 3 compute
  clusters: 3, machines: 3, secrets: 3, snippets: 3,
  // 4 delivery
  packages: 4, installs: 4, 'preview-hostnames': 4,
  // 5 agents
  agents: 5,
  // 6 commerce
  offers: 6, orders: 6,
  // 7 integration: reads across domains through their services
  lookup: 7,
  // the service's own description (OpenAPI, metrics, health) names every domain's schemas
  system: 7,
};

/**
 * Files that may import anything: the composition root builds every service and route in one
 * place. The CLI and the machine agent are separate programs (their own layering is not this check's).
 */
const COMPOSITION_ROOT = ['src/services.ts', 'src/app.ts', 'src/system.ts', 'src/server.ts', 'src/server-commands.ts', 'src/main.ts'];

/** Shared code below every module (group 0): it imports no module. */
const SHARED = ['src/platform/', 'src/db/', 'src/jobs/', 'src/sandbox/', 'src/drivers/', 'src/events/'];

/**
 * Known exceptions, each with its reason; an entry that no longer matches a finding fails the
 * check, so the list only shrinks. `from` and `to` are paths under the repository root. Empty
 * since issue 33: a module reaches another through its service, a function the composition root
 * passes in, or a domain event.
 */
const ALLOWED_IMPORTS = [];

/** Files outside repos and src/db/ that may build SQL, each with its reason. */
const ALLOWED_SQL = {
  // Shared code's own tables (group 0, no module owns them): each file is its table's store.
  'src/jobs/queue.ts': 'the job queue (jobs table): enqueue in the caller\'s transaction, claim with a lease',
  'src/jobs/notifier.ts': 'PostgreSQL LISTEN/NOTIFY of the job queue',
  'src/platform/idempotency.ts': 'the idempotency keys table of every mutating route',
  'src/platform/instance.ts': 'the instances table (which processes are alive)',
  // The local drivers stand in for outside systems and keep their simulated state in tables of
  // their own (local_servers, local cluster objects, local payment sessions and events).
  'src/drivers/cluster/local.ts': 'the local cluster driver\'s own objects',
  'src/drivers/cluster/local-machines.ts': 'the local cluster driver\'s own objects',
  'src/drivers/cluster/local-logs.ts': 'the local cluster driver\'s simulated pod logs',
  'src/drivers/compute/local.ts': 'the local compute provider\'s simulated servers',
  'src/drivers/payments/local.ts': 'the local payment provider\'s sessions',
  'src/drivers/payments/local-events.ts': 'the local payment provider\'s outgoing events',
};

const SQL_METHODS = new Set(['selectFrom', 'insertInto', 'updateTable', 'deleteFrom', 'replaceInto', 'mergeInto']);

function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const rel = (file) => relative(root, file).split(sep).join('/');

/** `src/modules/<name>/...` -> name; anything else -> null */
function moduleOf(path) {
  const m = /^src\/modules\/([^/]+)\//.exec(path);
  return m ? m[1] : null;
}

/** Module specifiers of a file (static, re-exports, dynamic `import()`, `import('x').T`), and its SQL calls. */
function scan(file) {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const specifiers = [];
  const sql = [];
  const line = (node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      specifiers.push({ text: node.moduleSpecifier.text, line: line(node) });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      specifiers.push({ text: node.arguments[0].text, line: line(node) });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      specifiers.push({ text: node.argument.literal.text, line: line(node) });
    } else if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && SQL_METHODS.has(node.expression.name.text)) {
      sql.push({ what: `.${node.expression.name.text}(`, line: line(node) });
    } else if (ts.isTaggedTemplateExpression(node) && ts.isIdentifier(node.tag) && node.tag.text === 'sql') {
      sql.push({ what: 'sql`…`', line: line(node) });
    } else if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'sql' && ts.isCallExpression(node.parent)) {
      sql.push({ what: `sql.${node.name.text}(`, line: line(node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { specifiers, sql };
}

const options = ts.parseJsonConfigFileContent(ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile).config, ts.sys, root).options;
const host = ts.createCompilerHost(options);
const cache = ts.createModuleResolutionCache(root, (f) => f, options);

/** every import between files of src/: { from, to, line } */
const edges = [];
const sqlFindings = [];
/** files outside repos and src/db/ that build SQL (allowed or not) */
const sqlFound = [];
for (const file of sourceFiles(srcDir)) {
  const from = rel(file);
  const { specifiers, sql } = scan(file);
  for (const spec of specifiers) {
    const resolved = ts.resolveModuleName(spec.text, file, options, host, cache).resolvedModule;
    if (!resolved || resolved.isExternalLibraryImport) continue;
    const to = rel(resolved.resolvedFileName);
    if (to.startsWith('src/')) edges.push({ from, to, line: spec.line });
  }
  const sqlHome = from.endsWith('.repo.ts') || from.startsWith('src/db/');
  if (!sqlHome && sql.length > 0) sqlFound.push(from);
  if (!sqlHome && !(from in ALLOWED_SQL)) for (const s of sql) sqlFindings.push(`${from}:${s.line}: SQL \`${s.what}\` outside a repo: move the query into a *.repo.ts of its module`);
}

const problems = [];
const allowedUsed = new Set();
function allowed(edge) {
  const i = ALLOWED_IMPORTS.findIndex((a) => a.from === edge.from && a.to === edge.to);
  if (i === -1) return false;
  allowedUsed.add(i);
  return true;
}

for (const name of readdirSync(join(srcDir, 'modules'))) {
  if (!(name in DOMAIN_GROUPS)) problems.push(`src/modules/${name}/: not in the table of domain groups of scripts/check-layers.js: add it`);
}

/** module folder -> module folders it imports (after the allowed exceptions) */
const moduleEdges = new Map();
for (const edge of edges) {
  const a = moduleOf(edge.from);
  const b = moduleOf(edge.to);
  const where = `${edge.from}:${edge.line}`;
  if (COMPOSITION_ROOT.includes(edge.from)) continue;
  if (b && SHARED.some((dir) => edge.from.startsWith(dir))) {
    if (!allowed(edge)) problems.push(`${where}: ${edge.from.startsWith('src/drivers/') ? 'a driver' : 'shared code'} imports the module ${edge.to}: drivers and shared code import no domain code (pass a function in, or record an event)`);
    continue;
  }
  if (!a && b && edge.to.endsWith('.repo.ts')) {
    if (!allowed(edge)) problems.push(`${where}: imports ${edge.to}, a module's repo: call its service instead`);
    continue;
  }
  if (!a || !b || a === b) continue;
  if (edge.to.endsWith('.repo.ts')) {
    if (!allowed(edge)) problems.push(`${where}: the module ${a} imports ${edge.to}, another module's repo: call its service instead`);
    continue;
  }
  const ga = DOMAIN_GROUPS[a];
  const gb = DOMAIN_GROUPS[b];
  if (ga !== undefined && gb !== undefined && gb > ga) {
    if (!allowed(edge)) problems.push(`${where}: ${a} (group ${ga}) imports ${edge.to} of ${b} (group ${gb}): a module calls only its own or lower groups (a lower group learns of a higher one through events)`);
    continue;
  }
  if (allowed(edge)) continue;
  if (!moduleEdges.has(a)) moduleEdges.set(a, new Map());
  const targets = moduleEdges.get(a);
  if (!targets.has(b)) targets.set(b, where);
}

// Cycles between module folders: every strongly connected component of more than one folder.
function components(graph) {
  let index = 0;
  const stack = [];
  const on = new Set();
  const idx = new Map();
  const low = new Map();
  const out = [];
  const strong = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) strong(v);
  return out;
}
for (const comp of components(moduleEdges)) {
  const lines = [];
  for (const a of comp) for (const [b, where] of moduleEdges.get(a) ?? []) if (comp.includes(b)) lines.push(`    ${a} -> ${b}  (${where})`);
  problems.push(`a cycle between the module folders ${comp.join(', ')}:\n${lines.join('\n')}`);
}

problems.push(...sqlFindings);
const sqlFiles = new Set(sqlFound);
for (const file of Object.keys(ALLOWED_SQL)) {
  if (!sqlFiles.has(file)) problems.push(`scripts/check-layers.js: ${file} builds no SQL any more: remove it from ALLOWED_SQL`);
}
ALLOWED_IMPORTS.forEach((a, i) => {
  if (!allowedUsed.has(i)) problems.push(`scripts/check-layers.js: the allowed import ${a.from} -> ${a.to} is no longer used: remove it from ALLOWED_IMPORTS`);
});

if (process.argv.includes('--graph')) {
  for (const [a, targets] of [...moduleEdges].sort()) console.log(`${a} (${DOMAIN_GROUPS[a]}) -> ${[...targets.keys()].sort().join(', ')}`);
}
if (problems.length > 0) {
  console.error(`layer check: ${problems.length} problem(s) (ARCHITECTURE.md, "The shape" and "The order of domains"):`);
  for (const p of problems) console.error(`  ${p}`);
  process.exit(1);
}
console.log(`layer check: ${edges.length} imports between ${new Set(edges.map((e) => e.from)).size} files of src/ hold the layers`);
