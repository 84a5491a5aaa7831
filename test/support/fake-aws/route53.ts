// Route 53 (restXml under /2013-04-01/).
import { AwsError, randomId } from './core.js';
import {
  type XmlElement,
  type XmlFields,
  XmlParseError,
  child,
  childText,
  childrenNamed,
  parseXml,
  xmlDocument,
} from './xml.js';

export const ROUTE53_XMLNS = 'https://route53.amazonaws.com/doc/2013-04-01/';

export interface AliasTarget {
  hostedZoneId: string;
  dnsName: string;
  evaluateTargetHealth: boolean;
}

export interface RecordSet {
  /** Lower-case, with the trailing dot; a wildcard label is `*` (sent as `\052` on the wire). */
  name: string;
  type: string;
  ttl?: number;
  values: string[];
  aliasTarget?: AliasTarget;
  setIdentifier?: string;
  weight?: number;
}

export type ChangeAction = 'CREATE' | 'DELETE' | 'UPSERT';

export interface FakeChange {
  /** Without the `/change/` prefix. */
  id: string;
  zoneId: string;
  status: 'PENDING' | 'INSYNC';
  submittedAt: number;
  comment?: string;
  changes: Array<{ action: ChangeAction; recordSet: RecordSet }>;
  /** GetChange calls so far. */
  polls: number;
  /** GetChange calls answered PENDING before INSYNC. */
  pendingPolls: number;
}

export interface FakeHostedZone {
  /** Without the `/hostedzone/` prefix. */
  id: string;
  name: string;
  callerReference: string;
  comment?: string;
  privateZone: boolean;
  records: Map<string, RecordSet>;
}

export interface FakeRoute53Options {
  /** GetChange calls answered PENDING before INSYNC (ChangeResourceRecordSets itself always answers PENDING). */
  changePendingPolls: number;
}

const KNOWN_TYPES = new Set([
  'A',
  'AAAA',
  'CAA',
  'CNAME',
  'DS',
  'HTTPS',
  'MX',
  'NAPTR',
  'NS',
  'PTR',
  'SOA',
  'SPF',
  'SRV',
  'SSHFP',
  'SVCB',
  'TLSA',
  'TXT',
]);

/** Lower-case, trailing dot, `\NNN` octal escapes decoded (Route 53 sends `*` as `\052`). */
export function normalizeDnsName(name: string): string {
  let n = name.replace(/\\(\d{3})/g, (_m, oct: string) => String.fromCharCode(Number.parseInt(oct, 8))).toLowerCase();
  if (!n.endsWith('.')) n += '.';
  return n;
}

function wireName(name: string): string {
  return name.replace(/\*/g, '\\052');
}

function recordKey(name: string, type: string, setIdentifier: string | undefined): string {
  return `${name}|${type}|${setIdentifier ?? ''}`;
}

function reversedLabels(name: string): string {
  return name.replace(/\.$/, '').split('.').reverse().join('.');
}

function compareRecordSets(a: RecordSet, b: RecordSet): number {
  const ka = reversedLabels(a.name);
  const kb = reversedLabels(b.name);
  if (ka !== kb) return ka < kb ? -1 : 1;
  if (a.type !== b.type) return a.type < b.type ? -1 : 1;
  const sa = a.setIdentifier ?? '';
  const sb = b.setIdentifier ?? '';
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

function sameRecordSet(a: RecordSet, b: RecordSet): boolean {
  return (
    a.ttl === b.ttl &&
    a.values.length === b.values.length &&
    [...a.values].sort().every((v, i) => v === [...b.values].sort()[i]) &&
    (a.aliasTarget?.dnsName.toLowerCase() ?? '') === (b.aliasTarget?.dnsName.toLowerCase() ?? '') &&
    (a.aliasTarget?.hostedZoneId ?? '') === (b.aliasTarget?.hostedZoneId ?? '')
  );
}

function describe(rs: RecordSet): string {
  return `[name='${rs.name}', type='${rs.type}'${rs.setIdentifier === undefined ? '' : `, set-identifier='${rs.setIdentifier}'`}]`;
}

export interface Route53Route {
  op: string;
  params: Record<string, string>;
}

export class FakeRoute53 {
  readonly options: FakeRoute53Options;
  private readonly zones = new Map<string, FakeHostedZone>();
  private readonly changesById = new Map<string, FakeChange>();

  constructor(options: Partial<FakeRoute53Options> = {}) {
    this.options = { changePendingPolls: 1, ...options };
  }

  // -------------------------------------------------------------- state accessors

  /** Creates a public hosted zone with its SOA and NS records. Returns the zone id (no `/hostedzone/` prefix). */
  createHostedZone(name: string, opts: { id?: string; comment?: string; privateZone?: boolean } = {}): string {
    const id = opts.id ?? `Z${randomId(20)}`;
    const zoneName = normalizeDnsName(name);
    const zone: FakeHostedZone = {
      id,
      name: zoneName,
      callerReference: randomId(12),
      privateZone: opts.privateZone ?? false,
      records: new Map(),
    };
    if (opts.comment !== undefined) zone.comment = opts.comment;
    const ns = ['ns-1.awsdns-00.com.', 'ns-2.awsdns-00.net.', 'ns-3.awsdns-00.org.', 'ns-4.awsdns-00.co.uk.'];
    zone.records.set(recordKey(zoneName, 'NS', undefined), { name: zoneName, type: 'NS', ttl: 172800, values: ns });
    zone.records.set(recordKey(zoneName, 'SOA', undefined), {
      name: zoneName,
      type: 'SOA',
      ttl: 900,
      values: [`${ns[0]} awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400`],
    });
    this.zones.set(id, zone);
    return id;
  }

  zone(id: string): FakeHostedZone | undefined {
    return this.zones.get(id.replace(/^\/?hostedzone\//, ''));
  }

  hostedZones(): FakeHostedZone[] {
    return [...this.zones.values()];
  }

  /** Record sets of a zone, in Route 53's order. */
  records(zoneId: string): RecordSet[] {
    return [...(this.zone(zoneId)?.records.values() ?? [])].sort(compareRecordSets);
  }

  /** Finds a record set by name and type across all zones. */
  findRecord(name: string, type: string, setIdentifier?: string): RecordSet | undefined {
    const key = recordKey(normalizeDnsName(name), type.toUpperCase(), setIdentifier);
    for (const z of this.zones.values()) {
      const r = z.records.get(key);
      if (r) return r;
    }
    return undefined;
  }

  /** Puts a record set directly (no change batch). */
  putRecord(zoneId: string, record: Omit<RecordSet, 'name'> & { name: string }): void {
    const zone = this.zone(zoneId);
    if (!zone) throw new Error(`fake-aws: no hosted zone ${zoneId}`);
    const rs = { ...record, name: normalizeDnsName(record.name), type: record.type.toUpperCase() };
    zone.records.set(recordKey(rs.name, rs.type, rs.setIdentifier), rs);
  }

  changes(): FakeChange[] {
    return [...this.changesById.values()];
  }

  change(id: string): FakeChange | undefined {
    return this.changesById.get(id.replace(/^\/?change\//, ''));
  }

  /** Marks a change INSYNC now. */
  syncChange(id: string): void {
    const c = this.change(id);
    if (c) c.status = 'INSYNC';
  }

  // -------------------------------------------------------------- routing

  route(method: string, path: string): Route53Route | undefined {
    const p = path.replace(/\/+$/, '');
    let m = /^\/2013-04-01\/hostedzone\/([^/]+)\/rrset$/.exec(p);
    if (m?.[1] !== undefined) {
      const HostedZoneId = decodeURIComponent(m[1]);
      if (method === 'POST') return { op: 'ChangeResourceRecordSets', params: { HostedZoneId } };
      if (method === 'GET') return { op: 'ListResourceRecordSets', params: { HostedZoneId } };
      return undefined;
    }
    m = /^\/2013-04-01\/change\/([^/]+)$/.exec(p);
    if (m?.[1] !== undefined && method === 'GET') return { op: 'GetChange', params: { Id: decodeURIComponent(m[1]) } };
    m = /^\/2013-04-01\/hostedzone\/([^/]+)$/.exec(p);
    if (m?.[1] !== undefined && method === 'GET') {
      return { op: 'GetHostedZone', params: { Id: decodeURIComponent(m[1]) } };
    }
    if (p === '/2013-04-01/hostedzonesbyname' && method === 'GET') return { op: 'ListHostedZonesByName', params: {} };
    return undefined;
  }

  /** Decodes the request into the SDK-shaped input object (what gets recorded). */
  decodeInput(route: Route53Route, query: URLSearchParams, body: string): Record<string, unknown> {
    const input: Record<string, unknown> = { ...route.params };
    for (const [k, v] of query) input[k] = v;
    if (route.op !== 'ChangeResourceRecordSets') return input;
    let root: XmlElement;
    try {
      root = parseXml(body);
    } catch (e) {
      throw new AwsError('InvalidInput', `Invalid XML: ${e instanceof XmlParseError ? e.message : String(e)}`);
    }
    const batch = child(root, 'ChangeBatch');
    if (root.name !== 'ChangeResourceRecordSetsRequest' || !batch) {
      throw new AwsError('InvalidInput', 'Expected ChangeResourceRecordSetsRequest/ChangeBatch');
    }
    const changes = childrenNamed(child(batch, 'Changes'), 'Change').map((c) => {
      const rrs = child(c, 'ResourceRecordSet');
      const set: Record<string, unknown> = {};
      for (const el of rrs?.children ?? []) {
        if (el.name === 'ResourceRecords') {
          set.ResourceRecords = childrenNamed(el, 'ResourceRecord').map((r) => ({
            Value: childText(r, 'Value') ?? '',
          }));
        } else if (el.name === 'AliasTarget') {
          set.AliasTarget = {
            HostedZoneId: childText(el, 'HostedZoneId') ?? '',
            DNSName: childText(el, 'DNSName') ?? '',
            EvaluateTargetHealth: childText(el, 'EvaluateTargetHealth') === 'true',
          };
        } else if (el.name === 'TTL' || el.name === 'Weight') {
          set[el.name] = Number(el.text);
        } else if (el.children.length === 0) {
          set[el.name] = el.text;
        }
      }
      return { Action: childText(c, 'Action') ?? '', ResourceRecordSet: set };
    });
    const changeBatch: Record<string, unknown> = { Changes: changes };
    const comment = childText(batch, 'Comment');
    if (comment !== undefined) changeBatch.Comment = comment;
    input.ChangeBatch = changeBatch;
    return input;
  }

  /** Answers an operation with the response XML, or throws AwsError. */
  handle(op: string, input: Record<string, unknown>): string {
    switch (op) {
      case 'ChangeResourceRecordSets':
        return this.changeResourceRecordSets(input);
      case 'GetChange':
        return this.getChange(input);
      case 'ListResourceRecordSets':
        return this.listResourceRecordSets(input);
      case 'GetHostedZone':
        return this.getHostedZone(input);
      case 'ListHostedZonesByName':
        return this.listHostedZonesByName(input);
      default:
        throw new AwsError('InvalidAction', `The fake does not implement Route 53 ${op}`);
    }
  }

  private requireZone(id: unknown): FakeHostedZone {
    const zone = typeof id === 'string' ? this.zone(id) : undefined;
    if (!zone) throw new AwsError('NoSuchHostedZone', `No hosted zone found with ID: ${String(id)}`);
    return zone;
  }

  private changeResourceRecordSets(input: Record<string, unknown>): string {
    const zone = this.requireZone(input.HostedZoneId);
    const batch = input.ChangeBatch as {
      Comment?: string;
      Changes: Array<{ Action: string; ResourceRecordSet: Record<string, unknown> }>;
    };
    if (batch.Changes.length === 0) {
      throw new AwsError(
        'InvalidInput',
        "1 validation error detected: Value '[]' at 'changeBatch.changes' failed to satisfy constraint: Member must have length greater than or equal to 1",
      );
    }
    const parsed = batch.Changes.map((c) => {
      if (c.Action !== 'CREATE' && c.Action !== 'DELETE' && c.Action !== 'UPSERT') {
        throw new AwsError(
          'InvalidInput',
          `Invalid XML ; cvc-enumeration-valid: Value '${c.Action}' is not facet-valid with respect to enumeration '[CREATE, DELETE, UPSERT]'.`,
        );
      }
      return { action: c.Action as ChangeAction, recordSet: this.toRecordSet(c.ResourceRecordSet) };
    });

    const records = new Map(zone.records);
    const errors: string[] = [];
    for (const { action, recordSet: rs } of parsed) {
      const key = recordKey(rs.name, rs.type, rs.setIdentifier);
      if (rs.name !== zone.name && !rs.name.endsWith(`.${zone.name}`)) {
        errors.push(`RRSet with DNS name ${rs.name} is not permitted in zone ${zone.name}`);
        continue;
      }
      if (action !== 'DELETE') {
        if (rs.type === 'CNAME' && rs.name === zone.name) {
          errors.push(`RRSet of type CNAME with DNS name ${rs.name} is not permitted at apex in zone ${zone.name}`);
          continue;
        }
        if (rs.type === 'CNAME' && rs.values.length > 1) {
          errors.push(`RRSet of type CNAME with DNS name ${rs.name} is not permitted to have more than one value`);
          continue;
        }
        const bad = rs.type === 'TXT' ? rs.values.find((v) => !/^".*"$/s.test(v)) : undefined;
        if (bad !== undefined) {
          errors.push(
            `Invalid Resource Record: 'FATAL problem: InvalidCharacterString (Value should be enclosed in quotation marks) encountered with '${bad}''`,
          );
          continue;
        }
        const conflict = [...records.values()].find(
          (o) => o.name === rs.name && o.type !== rs.type && (o.type === 'CNAME' || rs.type === 'CNAME'),
        );
        if (conflict) {
          errors.push(
            `RRSet of type ${rs.type} with DNS name ${rs.name} is not permitted because a conflicting RRSet of type ${conflict.type} with the same DNS name already exists in zone ${zone.name}`,
          );
          continue;
        }
      }
      const existing = records.get(key);
      if (action === 'CREATE') {
        if (existing) {
          errors.push(`Tried to create resource record set ${describe(rs)} but it already exists`);
          continue;
        }
        records.set(key, rs);
      } else if (action === 'UPSERT') {
        records.set(key, rs);
      } else if (!existing) {
        errors.push(`Tried to delete resource record set ${describe(rs)} but it was not found`);
      } else if (!sameRecordSet(existing, rs)) {
        errors.push(
          `Tried to delete resource record set ${describe(rs)} but the values provided do not match the current values`,
        );
      } else {
        records.delete(key);
      }
    }
    if (errors.length > 0) throw new AwsError('InvalidChangeBatch', `[${errors.join(', ')}]`);

    zone.records = records;
    const change: FakeChange = {
      id: `C${randomId(13)}`,
      zoneId: zone.id,
      status: 'PENDING',
      submittedAt: Date.now(),
      changes: parsed,
      polls: 0,
      pendingPolls: this.options.changePendingPolls,
    };
    if (batch.Comment !== undefined) change.comment = batch.Comment;
    this.changesById.set(change.id, change);
    return xmlDocument('ChangeResourceRecordSetsResponse', ROUTE53_XMLNS, { ChangeInfo: changeInfo(change) });
  }

  private toRecordSet(set: Record<string, unknown>): RecordSet {
    const name = typeof set.Name === 'string' ? set.Name : '';
    const type = typeof set.Type === 'string' ? set.Type : '';
    if (name === '' || name.length > 1024) throw new AwsError('InvalidInput', 'Invalid request: Name is required');
    if (!KNOWN_TYPES.has(type)) {
      throw new AwsError(
        'InvalidInput',
        `Invalid XML ; cvc-enumeration-valid: Value '${type}' is not facet-valid with respect to the RRType enumeration.`,
      );
    }
    const rrs = Array.isArray(set.ResourceRecords) ? (set.ResourceRecords as Array<{ Value: string }>) : undefined;
    const alias = set.AliasTarget as
      | { HostedZoneId: string; DNSName: string; EvaluateTargetHealth: boolean }
      | undefined;
    const ttl = typeof set.TTL === 'number' && Number.isFinite(set.TTL) ? set.TTL : undefined;
    const rs: RecordSet = { name: normalizeDnsName(name), type, values: rrs?.map((r) => r.Value) ?? [] };
    const label = `Change with [Action=?, Name=${name}, Type=${type}, SetIdentifier=${typeof set.SetIdentifier === 'string' ? set.SetIdentifier : 'null'}]`;
    if (alias) {
      if (rrs !== undefined || ttl !== undefined) {
        throw new AwsError(
          'InvalidInput',
          `Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and ResourceRecords], or TrafficPolicyInstanceId], but found more than one in ${label}`,
        );
      }
      rs.aliasTarget = {
        hostedZoneId: alias.HostedZoneId,
        dnsName: normalizeDnsName(alias.DNSName),
        evaluateTargetHealth: alias.EvaluateTargetHealth,
      };
    } else {
      if (rrs === undefined || ttl === undefined || rrs.length === 0) {
        throw new AwsError(
          'InvalidInput',
          `Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and ResourceRecords], or TrafficPolicyInstanceId], but found none in ${label}`,
        );
      }
      if (!Number.isInteger(ttl) || ttl < 0 || ttl > 2_147_483_647) {
        throw new AwsError('InvalidInput', `Invalid TTL ${ttl}`);
      }
      rs.ttl = ttl;
    }
    if (typeof set.SetIdentifier === 'string') rs.setIdentifier = set.SetIdentifier;
    if (typeof set.Weight === 'number') rs.weight = set.Weight;
    return rs;
  }

  private getChange(input: Record<string, unknown>): string {
    const id = typeof input.Id === 'string' ? input.Id : '';
    const change = this.change(id);
    if (!change) throw new AwsError('NoSuchChange', `A change with the specified change ID does not exist: ${id}`);
    if (change.status === 'PENDING') {
      change.polls += 1;
      if (change.polls > change.pendingPolls) change.status = 'INSYNC';
    }
    return xmlDocument('GetChangeResponse', ROUTE53_XMLNS, { ChangeInfo: changeInfo(change) });
  }

  private listResourceRecordSets(input: Record<string, unknown>): string {
    const zone = this.requireZone(input.HostedZoneId);
    const startName = typeof input.name === 'string' ? normalizeDnsName(input.name) : undefined;
    const startType = typeof input.type === 'string' ? input.type : undefined;
    if (startType !== undefined && startName === undefined) {
      throw new AwsError('InvalidInput', 'The input is not valid: type requires name');
    }
    const maxItems =
      typeof input.maxitems === 'string' ? Math.min(300, Math.max(1, Number(input.maxitems) || 300)) : 300;
    let all = [...zone.records.values()].sort(compareRecordSets);
    if (startName !== undefined) {
      const probe: RecordSet = { name: startName, type: startType ?? '', values: [] };
      all = all.filter((r) => compareRecordSets(r, probe) >= 0);
    }
    const page = all.slice(0, maxItems);
    const next = all[maxItems];
    return xmlDocument('ListResourceRecordSetsResponse', ROUTE53_XMLNS, {
      ResourceRecordSets: page.map((r) => ({ ResourceRecordSet: recordSetXml(r) })),
      IsTruncated: next !== undefined,
      NextRecordName: next ? wireName(next.name) : undefined,
      NextRecordType: next?.type,
      NextRecordIdentifier: next?.setIdentifier,
      MaxItems: maxItems,
    });
  }

  private getHostedZone(input: Record<string, unknown>): string {
    const zone = this.requireZone(input.Id);
    return xmlDocument('GetHostedZoneResponse', ROUTE53_XMLNS, {
      HostedZone: hostedZoneXml(zone),
      DelegationSet: {
        NameServers: (zone.records.get(recordKey(zone.name, 'NS', undefined))?.values ?? []).map((v) => ({
          NameServer: v.replace(/\.$/, ''),
        })),
      },
    });
  }

  private listHostedZonesByName(input: Record<string, unknown>): string {
    const dnsName = typeof input.dnsname === 'string' ? normalizeDnsName(input.dnsname) : undefined;
    const maxItems =
      typeof input.maxitems === 'string' ? Math.min(100, Math.max(1, Number(input.maxitems) || 100)) : 100;
    let zones = this.hostedZones().sort((a, b) => {
      const ka = reversedLabels(a.name);
      const kb = reversedLabels(b.name);
      return ka < kb ? -1 : ka > kb ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    });
    if (dnsName !== undefined) zones = zones.filter((z) => reversedLabels(z.name) >= reversedLabels(dnsName));
    const page = zones.slice(0, maxItems);
    const next = zones[maxItems];
    return xmlDocument('ListHostedZonesByNameResponse', ROUTE53_XMLNS, {
      HostedZones: page.map((z) => ({ HostedZone: hostedZoneXml(z) })),
      DNSName: dnsName,
      IsTruncated: next !== undefined,
      NextDNSName: next?.name,
      NextHostedZoneId: next ? `/hostedzone/${next.id}` : undefined,
      MaxItems: maxItems,
    });
  }
}

function changeInfo(c: FakeChange): XmlFields {
  return {
    Id: `/change/${c.id}`,
    Status: c.status,
    SubmittedAt: new Date(c.submittedAt).toISOString(),
    Comment: c.comment,
  };
}

function hostedZoneXml(z: FakeHostedZone): XmlFields {
  return {
    Id: `/hostedzone/${z.id}`,
    Name: z.name,
    CallerReference: z.callerReference,
    Config: { Comment: z.comment, PrivateZone: z.privateZone },
    ResourceRecordSetCount: z.records.size,
  };
}

function recordSetXml(r: RecordSet): XmlFields {
  return {
    Name: wireName(r.name),
    Type: r.type,
    SetIdentifier: r.setIdentifier,
    Weight: r.weight,
    TTL: r.ttl,
    ResourceRecords: r.aliasTarget ? undefined : r.values.map((v) => ({ ResourceRecord: { Value: v } })),
    AliasTarget: r.aliasTarget
      ? {
          HostedZoneId: r.aliasTarget.hostedZoneId,
          DNSName: r.aliasTarget.dnsName,
          EvaluateTargetHealth: r.aliasTarget.evaluateTargetHealth,
        }
      : undefined,
  };
}
