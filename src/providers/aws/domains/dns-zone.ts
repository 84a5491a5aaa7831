import {
  ChangeResourceRecordSetsCommand,
  ListHostedZonesByNameCommand,
  type ListHostedZonesByNameCommandOutput,
  type Change,
  type Route53Client,
} from '@aws-sdk/client-route-53';
import { getDomain } from 'tldts';
import { awsFailure, ProviderError } from '../../errors.js';
import { canonicalDnsName } from '../../local/domains/dns-zone.js';
import type { DnsRecord, DnsZone } from '../../domains/dns-zone.js';

const RECORD_TTL_SECONDS = 300;
/** Pages of ListHostedZonesByName read at most when looking for a name's zone. */
const MAX_ZONE_PAGES = 10;

function reversedLabels(name: string): string {
  return name.split('.').reverse().join('.');
}

function recordValue(type: string, value: string): string {
  // Route 53 wants TXT character-strings quoted, with `"` and `\` escaped.
  return type === 'TXT' ? `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"` : value;
}

/**
 * Route 53: records go into the public hosted zone of the account that is the longest suffix of
 * their name, one UPSERT change batch per zone (Route 53 applies a batch atomically). Checks go
 * through public DNS, which is what ACM and browsers see.
 */
export class Route53DnsZone implements DnsZone {
  readonly provider = 'aws' as const;

  constructor(
    private readonly client: Route53Client,
    private readonly callTimeoutMs: number,
  ) {}

  async upsert(records: DnsRecord[]): Promise<void> {
    if (records.length === 0) return;
    const byZone = new Map<string, Map<string, { name: string; type: string; values: Set<string> }>>();
    const zoneOfName = new Map<string, string>();
    for (const record of records) {
      const name = canonicalDnsName(record.name);
      let zoneId = zoneOfName.get(name);
      if (zoneId === undefined) {
        zoneId = await this.findZone(name);
        zoneOfName.set(name, zoneId);
      }
      const sets = byZone.get(zoneId) ?? new Map();
      const type = record.type.toUpperCase();
      const set = sets.get(`${type} ${name}`) ?? { name, type, values: new Set<string>() };
      set.values.add(recordValue(type, record.value));
      sets.set(`${type} ${name}`, set);
      byZone.set(zoneId, sets);
    }
    for (const [zoneId, sets] of byZone) {
      const changes: Change[] = [...sets.values()].map((set) => ({
        Action: 'UPSERT',
        ResourceRecordSet: {
          Name: set.name,
          Type: set.type as never,
          TTL: RECORD_TTL_SECONDS,
          ResourceRecords: [...set.values].map((Value) => ({ Value })),
        },
      }));
      try {
        await this.client.send(
          new ChangeResourceRecordSetsCommand({
            HostedZoneId: zoneId,
            ChangeBatch: { Comment: 'Berth: certificate validation records', Changes: changes },
          }),
          { abortSignal: AbortSignal.timeout(this.callTimeoutMs) },
        );
      } catch (error) {
        throw awsFailure('dns-zone', 'ChangeResourceRecordSets', error);
      }
    }
  }

  async checkAll(records: DnsRecord[]): Promise<undefined[]> {
    return records.map(() => undefined);
  }

  /**
   * The public hosted zone whose name is the longest suffix of `name`. Zones come back sorted by
   * reversed labels, so every zone at or under the registrable domain follows the first one.
   */
  private async findZone(name: string): Promise<string> {
    const registrable = getDomain(name, { allowPrivateDomains: true }) ?? name;
    const prefix = reversedLabels(registrable);
    let best: { id: string; name: string } | undefined;
    let dnsName: string | undefined = registrable;
    let hostedZoneId: string | undefined;
    for (let page = 0; page < MAX_ZONE_PAGES && dnsName !== undefined; page++) {
      let out: ListHostedZonesByNameCommandOutput;
      try {
        out = await this.client.send(
          new ListHostedZonesByNameCommand({ DNSName: dnsName, HostedZoneId: hostedZoneId, MaxItems: 100 }),
          { abortSignal: AbortSignal.timeout(this.callTimeoutMs) },
        );
      } catch (error) {
        throw awsFailure('dns-zone', 'ListHostedZonesByName', error);
      }
      let pastPrefix = false;
      for (const zone of out.HostedZones ?? []) {
        const zoneName = canonicalDnsName(zone.Name ?? '');
        if (!reversedLabels(zoneName).startsWith(prefix)) {
          pastPrefix = true;
          break;
        }
        const covers = name === zoneName || name.endsWith(`.${zoneName}`);
        if (
          covers &&
          zone.Config?.PrivateZone !== true &&
          zone.Id !== undefined &&
          (best === undefined || zoneName.length > best.name.length)
        ) {
          best = { id: zone.Id.replace(/^\/hostedzone\//, ''), name: zoneName };
        }
      }
      if (pastPrefix || out.IsTruncated !== true) break;
      dnsName = out.NextDNSName;
      hostedZoneId = out.NextHostedZoneId;
    }
    if (best === undefined) {
      throw new ProviderError('dns-zone', 'aws', `No public Route 53 hosted zone of the account holds ${name}.`, {
        operation: 'ListHostedZonesByName',
      });
    }
    return best.id;
  }
}
