// "Another organization's object answers exactly like one that does not exist"
// (docs/design.md#identity-tokens-and-permissions), case by case.
import { TOKENS } from '../../support/world.js';
import { cell, comparable, send, streamedMessages, type Http, type Outcome, type Probe } from './isolation-http.js';
import { streamPath, type Minted } from './isolation-matrix.js';
import { CROSSED, EXTRA_TOKENS, IDS, MARKER, REGION, WINDOW, type Org } from './isolation-world.js';

export interface Viewpoint {
  key: string;
  label: string;
  /** For the document. */
  who: string;
  authorization: string;
  /** The organization the caller sees; the other one is foreign to it. */
  home: Org;
}

const bearer = (token: string) => `Bearer ${token}`;

/** Who looks across the boundary: members of one side, a viewer (who may not write), a both-orgs principal, a scoped superadmin. */
export const VIEWPOINTS: Viewpoint[] = [
  {
    key: 'owner-a',
    label: 'owner of A',
    who: 'owner of org A, key scoped to org A',
    authorization: bearer(TOKENS.owner),
    home: 'A',
  },
  {
    key: 'viewer-a',
    label: 'viewer of A',
    who: 'viewer of org A (may read, not write), key scoped to org A',
    authorization: bearer(TOKENS.viewer),
    home: 'A',
  },
  {
    key: 'admin-b',
    label: 'admin of B',
    who: 'admin of org B only, key scoped to org B',
    authorization: bearer(TOKENS.otherAdmin),
    home: 'B',
  },
  {
    key: 'scoped-b',
    label: "A's owner, key scoped to B",
    who: 'owner of org A and viewer of org B, key scoped to org B',
    authorization: bearer(EXTRA_TOKENS.bothScopedB),
    home: 'B',
  },
  {
    key: 'superadmin-b',
    label: 'superadmin, key scoped to B',
    who: 'superadmin, key scoped to org B',
    authorization: bearer(EXTRA_TOKENS.superadminScopedB),
    home: 'B',
  },
];

/** What a case sends: the request naming the foreign object, and the one naming a made-up one. */
interface Pair {
  foreign: Probe;
  missing: Probe;
  /** Ids the two requests name, replaced by a placeholder before their bodies are compared. */
  ids: string[];
  /** A stream: the answers are compared by shape, and the events must all be the home organization's. */
  stream?: boolean;
}

export interface IsolationKind {
  key: string;
  /** The object, as the document names it. */
  object: string;
  /** The request, as the document shows it (`{id}` stands for the object). */
  request: string;
  /** What stands for "does not exist" when that is not simply an unknown id. */
  missingIs?: string;
  /** Only callers of this organization (the case is about its own objects). */
  only?: Org;
  pair(minted: Minted, home: Org, foreign: Org): Pair;
}

const logQuery = (selector: Record<string, unknown>): Probe => ({
  method: 'POST',
  path: '/cloud/logs/logs-insights',
  body: { ...WINDOW, ...selector },
});
const histogram = (selector: Record<string, unknown>): Probe => ({
  method: 'POST',
  path: '/cloud/logs/logs-insights/histogram',
  body: { ...WINDOW, ...selector },
});
const M = IDS.missing;

/** The home cursor with its last character changed: still well-formed, no longer sealed. */
export function tamper(cursor: string): string {
  const last = cursor.at(-1);
  return `${cursor.slice(0, -1)}${last === 'A' ? 'B' : 'A'}`;
}

export const GARBAGE_EVENT_ID = 'not-a-position';

export const KINDS: IsolationKind[] = [
  {
    key: 'organization',
    object: 'organization id',
    request: 'GET /organizations/{id}/permitted-identity-providers',
    pair: (_m, _h, f) => ({
      foreign: { method: 'GET', path: `/organizations/${IDS[f].organization}/permitted-identity-providers` },
      missing: { method: 'GET', path: `/organizations/${M.organization}/permitted-identity-providers` },
      ids: [IDS[f].organization, M.organization],
    }),
  },
  {
    key: 'api-keys-organization',
    object: 'organization id',
    request: 'GET /organizations/{id}/api-keys',
    pair: (_m, _h, f) => ({
      foreign: { method: 'GET', path: `/organizations/${IDS[f].organization}/api-keys` },
      missing: { method: 'GET', path: `/organizations/${M.organization}/api-keys` },
      ids: [IDS[f].organization, M.organization],
    }),
  },
  {
    key: 'api-key',
    object: 'API key id',
    request: 'DELETE /organizations/<own>/api-keys/{id}',
    pair: (m, h, f) => ({
      foreign: { method: 'DELETE', path: `/organizations/${IDS[h].organization}/api-keys/${m.apiKey[f]}` },
      missing: { method: 'DELETE', path: `/organizations/${IDS[h].organization}/api-keys/${M.apiKey}` },
      ids: [m.apiKey[f], M.apiKey],
    }),
  },
  {
    key: 'category',
    object: 'module category id',
    request: 'GET /module-categories/{id}',
    pair: (m, _h, f) => ({
      foreign: { method: 'GET', path: `/module-categories/${m.category[f]}` },
      missing: { method: 'GET', path: `/module-categories/${M.category}` },
      ids: [m.category[f], M.category],
    }),
  },
  {
    key: 'environment',
    object: 'environment id',
    request: 'POST /cloud/logs/logs-insights {environmentId: {id}}',
    pair: (_m, _h, f) => ({
      foreign: logQuery({ environmentId: IDS[f].environment }),
      missing: logQuery({ environmentId: M.environment }),
      ids: [IDS[f].environment, M.environment],
    }),
  },
  {
    key: 'instances',
    object: 'module instance id',
    request: 'POST /cloud/logs/logs-insights {moduleInstanceIds: [{id}]}',
    pair: (_m, _h, f) => ({
      foreign: logQuery({ moduleInstanceIds: [IDS[f].moduleInstance] }),
      missing: logQuery({ moduleInstanceIds: [M.moduleInstance] }),
      ids: [IDS[f].moduleInstance, M.moduleInstance],
    }),
  },
  {
    key: 'instances-in-environment',
    object: 'module instance id',
    request: 'POST /cloud/logs/logs-insights {environmentId: <own>, moduleInstanceIds: [{id}]}',
    pair: (_m, h, f) => ({
      foreign: logQuery({ environmentId: IDS[h].environment, moduleInstanceIds: [IDS[f].moduleInstance] }),
      missing: logQuery({ environmentId: IDS[h].environment, moduleInstanceIds: [M.moduleInstance] }),
      ids: [IDS[f].moduleInstance, M.moduleInstance],
    }),
  },
  {
    key: 'source-key',
    object: 'log source key',
    request: 'POST /cloud/logs/logs-insights {logSourceKeys: [{id}]}',
    pair: (_m, _h, f) => ({
      foreign: logQuery({ logSourceKeys: [`${IDS[f].moduleInstance}::${IDS[f].logSource}`] }),
      missing: logQuery({ logSourceKeys: [`${M.moduleInstance}::${M.logSource}`] }),
      ids: [IDS[f].moduleInstance, IDS[f].logSource, M.moduleInstance, M.logSource],
    }),
  },
  {
    key: 'source-key-own-instance',
    object: 'log source id (on an own instance)',
    request: 'POST /cloud/logs/logs-insights {logSourceKeys: ["<own instance>::{id}"]}',
    pair: (_m, h, f) => ({
      foreign: logQuery({ logSourceKeys: [`${IDS[h].moduleInstance}::${IDS[f].logSource}`] }),
      missing: logQuery({ logSourceKeys: [`${IDS[h].moduleInstance}::${M.logSource}`] }),
      ids: [IDS[f].logSource, M.logSource],
    }),
  },
  {
    key: 'source-key-in-environment',
    object: 'log source key',
    request: 'POST /cloud/logs/logs-insights {environmentId: <own>, logSourceKeys: [{id}]}',
    pair: (_m, h, f) => ({
      foreign: logQuery({
        environmentId: IDS[h].environment,
        logSourceKeys: [`${IDS[f].moduleInstance}::${IDS[f].logSource}`],
      }),
      missing: logQuery({ environmentId: IDS[h].environment, logSourceKeys: [`${M.moduleInstance}::${M.logSource}`] }),
      ids: [IDS[f].moduleInstance, IDS[f].logSource, M.moduleInstance, M.logSource],
    }),
  },
  {
    key: 'crossed-source',
    object: "log source of an own instance reading another org's account (seeded)",
    request: `POST /cloud/logs/logs-insights {logSourceKeys: ["${CROSSED.moduleInstance}::{id}"]}`,
    only: 'A',
    pair: () => ({
      foreign: logQuery({ logSourceKeys: [`${CROSSED.moduleInstance}::${CROSSED.logSource}`] }),
      missing: logQuery({ logSourceKeys: [`${CROSSED.moduleInstance}::${M.logSource}`] }),
      ids: [CROSSED.logSource, M.logSource],
    }),
  },
  {
    key: 'deployment-resource',
    object: 'deployment resource id',
    request: 'POST /cloud/logs/logs-insights {deploymentResourceId: {id}}',
    pair: (_m, _h, f) => ({
      foreign: logQuery({ deploymentResourceId: IDS[f].deploymentResource }),
      missing: logQuery({ deploymentResourceId: M.deploymentResource }),
      ids: [IDS[f].deploymentResource, M.deploymentResource],
    }),
  },
  {
    key: 'catalog-organization',
    object: 'organization id',
    request: 'GET /organizations/{id}/log-catalog',
    pair: (_m, _h, f) => ({
      foreign: { method: 'GET', path: `/organizations/${IDS[f].organization}/log-catalog` },
      missing: { method: 'GET', path: `/organizations/${M.organization}/log-catalog` },
      ids: [IDS[f].organization, M.organization],
    }),
  },
  {
    key: 'histogram-environment',
    object: 'environment id',
    request: 'POST /cloud/logs/logs-insights/histogram {environmentId: {id}}',
    pair: (_m, _h, f) => ({
      foreign: histogram({ environmentId: IDS[f].environment }),
      missing: histogram({ environmentId: M.environment }),
      ids: [IDS[f].environment, M.environment],
    }),
  },
  {
    key: 'histogram-instances',
    object: 'module instance id',
    request: 'POST /cloud/logs/logs-insights/histogram {moduleInstanceIds: [{id}]}',
    pair: (_m, _h, f) => ({
      foreign: histogram({ moduleInstanceIds: [IDS[f].moduleInstance] }),
      missing: histogram({ moduleInstanceIds: [M.moduleInstance] }),
      ids: [IDS[f].moduleInstance, M.moduleInstance],
    }),
  },
  {
    key: 'histogram-instances-in-environment',
    object: 'module instance id',
    request: 'POST /cloud/logs/logs-insights/histogram {environmentId: <own>, moduleInstanceIds: [{id}]}',
    pair: (_m, h, f) => ({
      foreign: histogram({ environmentId: IDS[h].environment, moduleInstanceIds: [IDS[f].moduleInstance] }),
      missing: histogram({ environmentId: IDS[h].environment, moduleInstanceIds: [M.moduleInstance] }),
      ids: [IDS[f].moduleInstance, M.moduleInstance],
    }),
  },
  {
    key: 'histogram-source-key',
    object: 'log source key',
    request: 'POST /cloud/logs/logs-insights/histogram {logSourceKeys: [{id}]}',
    pair: (_m, _h, f) => ({
      foreign: histogram({ logSourceKeys: [`${IDS[f].moduleInstance}::${IDS[f].logSource}`] }),
      missing: histogram({ logSourceKeys: [`${M.moduleInstance}::${M.logSource}`] }),
      ids: [IDS[f].moduleInstance, IDS[f].logSource, M.moduleInstance, M.logSource],
    }),
  },
  {
    key: 'histogram-source-key-own-instance',
    object: 'log source id (on an own instance)',
    request: 'POST /cloud/logs/logs-insights/histogram {logSourceKeys: ["<own instance>::{id}"]}',
    pair: (_m, h, f) => ({
      foreign: histogram({ logSourceKeys: [`${IDS[h].moduleInstance}::${IDS[f].logSource}`] }),
      missing: histogram({ logSourceKeys: [`${IDS[h].moduleInstance}::${M.logSource}`] }),
      ids: [IDS[f].logSource, M.logSource],
    }),
  },
  {
    key: 'histogram-crossed-source',
    object: "log source of an own instance reading another org's account (seeded)",
    request: `POST /cloud/logs/logs-insights/histogram {logSourceKeys: ["${CROSSED.moduleInstance}::{id}"]}`,
    only: 'A',
    pair: () => ({
      foreign: histogram({ logSourceKeys: [`${CROSSED.moduleInstance}::${CROSSED.logSource}`] }),
      missing: histogram({ logSourceKeys: [`${CROSSED.moduleInstance}::${M.logSource}`] }),
      ids: [CROSSED.logSource, M.logSource],
    }),
  },
  {
    key: 'histogram-deployment-resource',
    object: 'deployment resource id',
    request: 'POST /cloud/logs/logs-insights/histogram {deploymentResourceId: {id}}',
    pair: (_m, _h, f) => ({
      foreign: histogram({ deploymentResourceId: IDS[f].deploymentResource }),
      missing: histogram({ deploymentResourceId: M.deploymentResource }),
      ids: [IDS[f].deploymentResource, M.deploymentResource],
    }),
  },
  {
    key: 'stream-account',
    object: 'cloud account id',
    request: 'GET /cloud/logs/stream?accountId={id}',
    pair: (_m, _h, f) => ({
      foreign: { method: 'GET', path: streamPath(IDS[f].account) },
      missing: { method: 'GET', path: streamPath(M.account) },
      ids: [IDS[f].account, M.account],
    }),
  },
  {
    key: 'stream-position',
    object: 'stream position',
    request: 'GET /cloud/logs/stream?accountId=<own> with Last-Event-ID: {id}',
    missingIs: `\`Last-Event-ID: ${GARBAGE_EVENT_ID}\``,
    pair: (m, h, f) => ({
      foreign: { method: 'GET', path: streamPath(IDS[h].account), headers: { 'last-event-id': m.streamId[f] } },
      missing: { method: 'GET', path: streamPath(IDS[h].account), headers: { 'last-event-id': GARBAGE_EVENT_ID } },
      ids: [],
      stream: true,
    }),
  },
  {
    key: 'ingest-account',
    object: 'cloud account id',
    request: 'POST /cloud/logs/local/events {accountId: {id}}',
    pair: (_m, _h, f) => {
      const body = (accountId: string) => ({
        accountId,
        region: REGION,
        logGroup: '/matrix/ingest',
        logStream: 'cases',
        events: [{ message: 'case', timestamp: 0 }],
      });
      return {
        foreign: { method: 'POST', path: '/cloud/logs/local/events', body: body(IDS[f].account) },
        missing: { method: 'POST', path: '/cloud/logs/local/events', body: body(M.account) },
        ids: [IDS[f].account, M.account],
      };
    },
  },
  {
    key: 'domains-instance',
    object: 'module instance id',
    request: 'GET /domains?moduleInstanceId={id}',
    pair: (_m, _h, f) => ({
      foreign: { method: 'GET', path: `/domains?moduleInstanceId=${IDS[f].moduleInstance}` },
      missing: { method: 'GET', path: `/domains?moduleInstanceId=${M.moduleInstance}` },
      ids: [IDS[f].moduleInstance, M.moduleInstance],
    }),
  },
  {
    key: 'domains-cursor',
    object: 'domain-list cursor',
    request: 'GET /domains?moduleInstanceId=<own>&cursor={id}',
    missingIs: 'the own cursor, tampered',
    pair: (m, h, f) => ({
      foreign: {
        method: 'GET',
        path: `/domains?moduleInstanceId=${IDS[h].moduleInstance}&cursor=${encodeURIComponent(m.cursor[f])}`,
      },
      missing: {
        method: 'GET',
        path: `/domains?moduleInstanceId=${IDS[h].moduleInstance}&cursor=${encodeURIComponent(tamper(m.cursor[h]))}`,
      },
      ids: [],
    }),
  },
  {
    key: 'domains-instance-and-cursor',
    object: 'module instance id (with its own cursor)',
    request: 'GET /domains?moduleInstanceId={id}&cursor=<a cursor of that instance>',
    pair: (m, _h, f) => ({
      foreign: {
        method: 'GET',
        path: `/domains?moduleInstanceId=${IDS[f].moduleInstance}&cursor=${encodeURIComponent(m.cursor[f])}`,
      },
      missing: {
        method: 'GET',
        path: `/domains?moduleInstanceId=${M.moduleInstance}&cursor=${encodeURIComponent(m.cursor[f])}`,
      },
      ids: [IDS[f].moduleInstance, M.moduleInstance],
    }),
  },
  {
    key: 'name-availability',
    object: 'module instance id',
    request: 'GET /domains/name-availability?name=…&moduleInstanceId={id}',
    pair: (_m, _h, f) => ({
      foreign: {
        method: 'GET',
        path: `/domains/name-availability?name=fresh.matrix.example&moduleInstanceId=${IDS[f].moduleInstance}`,
      },
      missing: {
        method: 'GET',
        path: `/domains/name-availability?name=fresh.matrix.example&moduleInstanceId=${M.moduleInstance}`,
      },
      ids: [IDS[f].moduleInstance, M.moduleInstance],
    }),
  },
  {
    key: 'certificate',
    object: 'certificate id',
    request: 'POST /managed-certificates/{id}/retry-validation',
    pair: (_m, _h, f) => ({
      foreign: { method: 'POST', path: `/managed-certificates/${IDS[f].certificate}/retry-validation` },
      missing: { method: 'POST', path: `/managed-certificates/${M.certificate}/retry-validation` },
      ids: [IDS[f].certificate, M.certificate],
    }),
  },
];

export interface CaseResult {
  kind: IsolationKind;
  viewpoint: Viewpoint;
  foreign: Outcome;
  missing: Outcome;
  /** The rendering of each answer for the document. */
  foreignCell: string;
  missingCell: string;
  /** Why the two answers differ, or undefined when they are the same. */
  difference?: string;
}

const other = (org: Org): Org => (org === 'A' ? 'B' : 'A');

/** A stream's answer for the document: status, and whose events it carried. */
function streamCell(o: Outcome, home: Org): string {
  const base = cell(o);
  if (o.status !== 200 || base !== '200') return base;
  const messages = streamedMessages(o);
  const foreign = messages.filter((msg) => msg.includes(MARKER[other(home)])).length;
  return foreign > 0 ? `200, ${foreign} events of the other organization` : '200, own events only';
}

function compare(pair: Pair, foreign: Outcome, missing: Outcome, home: Org): string | undefined {
  if (foreign.status !== missing.status) return `status ${foreign.status} ≠ ${missing.status}`;
  if (pair.stream) {
    if (foreign.contentType !== missing.contentType)
      return `content-type ${foreign.contentType} ≠ ${missing.contentType}`;
    const shape = (o: Outcome) =>
      JSON.stringify(
        (o.messages ?? [])
          .map((m) => [m.event ?? null, Object.keys(m.data ?? {}).sort(), m.data?.isFinal ?? null])
          .slice(-1),
      );
    if (shape(foreign) !== shape(missing)) return `stream end ${shape(foreign)} ≠ ${shape(missing)}`;
    const leaked = streamedMessages(foreign).filter((msg) => !msg.includes(MARKER[home]));
    return leaked.length > 0
      ? `the stream carried events not of the caller's organization: ${leaked.join(', ')}`
      : undefined;
  }
  const a = JSON.stringify(comparable(foreign.body, pair.ids));
  const b = JSON.stringify(comparable(missing.body, pair.ids));
  return a === b ? undefined : `body ${a} ≠ ${b}`;
}

/** Every kind × every viewpoint: the foreign object's answer next to the made-up one's. */
export async function runCases(
  http: Http,
  minted: Minted,
  kinds = KINDS,
  viewpoints = VIEWPOINTS,
): Promise<CaseResult[]> {
  const out: CaseResult[] = [];
  for (const kind of kinds) {
    // A kind's viewpoints at once; results in a fixed order.
    const results = await Promise.all(
      viewpoints
        .filter((v) => kind.only === undefined || v.home === kind.only)
        .map(async (viewpoint): Promise<CaseResult> => {
          const pair = kind.pair(minted, viewpoint.home, other(viewpoint.home));
          const foreign = await send(http, viewpoint.authorization, pair.foreign);
          const missing = await send(http, viewpoint.authorization, pair.missing);
          const render = (o: Outcome) => (pair.stream ? streamCell(o, viewpoint.home) : cell(o));
          return {
            kind,
            viewpoint,
            foreign,
            missing,
            foreignCell: render(foreign),
            missingCell: render(missing),
            difference: compare(pair, foreign, missing, viewpoint.home),
          };
        }),
    );
    out.push(...results);
  }
  return out;
}
