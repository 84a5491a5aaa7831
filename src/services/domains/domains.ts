import { canRead, type Caller } from '../../core/caller.js';
import { checkCursorInstance, decodeCursor, encodeCursor } from '../../core/cursor.js';
import { parentCandidates } from '../../core/domain-name.js';
import type { RecordChecker } from './record-checker.js';
import { expectedRecords, type DomainRecord } from '../../core/dns-records.js';
import { appError } from '../../core/errors.js';
import type { Providers } from '../../providers/index.js';
import type { CursorSecret } from '../cursor-secret.js';
import type { Db } from '../../store/db.js';
import {
  countDomainsOfInstance,
  type DomainPageRow,
  domainsNamedInOrganization,
  domainsOfInstance,
  type WildcardHolderRow,
} from '../../store/domains/domains.js';
import type { Tenancy } from '../../store/tenancy.js';
import type { Domain, DomainCertificate, DomainPage, ListDomainsQuery } from '../../core/schemas/domains.js';
import { DEFAULT_PAGE_LIMIT } from '../../core/schemas/common.js';

/** The module instance whose domains are listed, and its organization. */
interface ListedInstance {
  id: string;
  organizationId: string;
}

/**
 * Roles whose records decide `verified` (docs/design.md#7-domain-list): certificate validation is the authority's
 * business.
 */
const VERIFYING_ROLES = new Set(['ROUTING', 'OWNERSHIP_VERIFICATION']);

export class DomainService {
  constructor(
    private readonly db: Db,
    private readonly tenancy: Tenancy,
    private readonly providers: Providers,
    private readonly checker: RecordChecker,
    private readonly cursorSecret: CursorSecret,
  ) {}

  /** A module instance's domains, a page at a time, in (domainName, id) order. */
  async list(caller: Caller, query: ListDomainsQuery): Promise<DomainPage> {
    const cursorKey = await this.cursorSecret.get();
    // A forged cursor is refused before any statement runs: its seal and its whole shape are checked without the
    // database. Whether it belongs to this instance is asked once the instance is known to be the caller's, so another
    // organization's instance and a missing one answer alike.
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, cursorKey);
    const organizationId = await this.tenancy.moduleInstance(query.moduleInstanceId);
    // Another organization's instance answers like a missing one (docs/decisions.md).
    if (organizationId === undefined || !canRead(caller, organizationId))
      throw appError('domains:module-instance:not-found');
    if (after !== undefined) checkCursorInstance(after, query.moduleInstanceId);
    const instance: ListedInstance = { id: query.moduleInstanceId, organizationId };

    const limit = query.limit ?? DEFAULT_PAGE_LIMIT;
    // One more row than the page, to know whether another page follows.
    const [rows, totalCount] = await Promise.all([
      domainsOfInstance(this.db, instance.id, limit + 1, after),
      countDomainsOfInstance(this.db, instance.id),
    ]);
    const pageRows = rows.slice(0, limit);
    const last = pageRows[pageRows.length - 1];
    const nextCursor =
      rows.length > limit && last !== undefined
        ? encodeCursor({ moduleInstanceId: instance.id, domainName: last.domain_name, id: last.id }, cursorKey)
        : undefined;

    const parents = await this.parents(instance, pageRows);
    const ownCertificates = await this.ownCertificates(instance, pageRows);
    const records = pageRows.map((row) =>
      expectedRecords(
        {
          id: row.id,
          domainName: row.domain_name,
          managedByService: row.managed_by_service,
          targetDnsName: row.target_dns_name,
          targetZoneId: row.target_zone_id,
        },
        ownCertificates.has(row.id) ? (row.cert_validation_records ?? []) : [],
      ),
    );
    const verified = await this.verify(instance, pageRows, records);

    const data = pageRows.map((row, i) => {
      const domain: Domain = {
        id: row.id,
        domainName: row.domain_name,
        url: `https://${row.domain_name}`,
        verified: verified[i]!,
        managedByService: row.managed_by_service,
        moduleInstanceId: instance.id,
        records: records[i]!,
      };
      if (ownCertificates.has(row.id)) domain.certificate = toCertificate(row);
      const parentName = parentOf(row.domain_name);
      const parent = parentName === undefined ? undefined : parents.get(parentName);
      if (parent !== undefined) {
        domain.parent = {
          name: parent.instance_name,
          projectId: parent.project_id,
          environmentId: parent.environment_id,
          moduleInstanceId: parent.module_instance_id,
        };
        domain.parentDomainName = parent.domain_name;
      }
      if (row.target_dns_name !== null) domain.targetDnsName = row.target_dns_name;
      if (row.target_zone_id !== null) domain.targetZoneId = row.target_zone_id;
      return domain;
    });
    const meta: DomainPage['meta'] = { limit: limit, totalCount };
    if (nextCursor !== undefined) meta.nextCursor = nextCursor;
    return { data, meta };
  }

  /**
   * The domains whose certificate is shown: one belonging to the domain's organization, so a domain
   * that points at another tenant's certificate (a bad fixture) reveals nothing of it.
   */
  private async ownCertificates(instance: ListedInstance, rows: DomainPageRow[]): Promise<Set<string>> {
    const elsewhere = new Set<string>();
    for (const row of rows) {
      if (row.certificate_id !== null && row.cert_module_instance_id !== instance.id) elsewhere.add(row.certificate_id);
    }
    const owners = new Map<string, string | undefined>();
    await Promise.all([...elsewhere].map(async (id) => owners.set(id, await this.tenancy.certificate(id))));
    const own = new Set<string>();
    for (const row of rows) {
      if (row.cert_status === null || row.certificate_id === null) continue;
      if (row.cert_module_instance_id === instance.id || owners.get(row.certificate_id) === instance.organizationId)
        own.add(row.id);
    }
    return own;
  }

  /**
   * The `*.parent` wildcard covering each domain, by wildcard name: one per name, from the
   * instance's own organization only — another organization's wildcard is never revealed.
   * Several candidates: the listed instance's own first, then by id.
   */
  private async parents(instance: ListedInstance, rows: DomainPageRow[]): Promise<Map<string, WildcardHolderRow>> {
    const names = [...new Set(rows.map((r) => parentOf(r.domain_name)).filter((n): n is string => n !== undefined))];
    const found = await domainsNamedInOrganization(this.db, names, instance.organizationId, instance.id);
    const out = new Map<string, WildcardHolderRow>();
    for (const row of found) if (!out.has(row.domain_name)) out.set(row.domain_name, row);
    return out;
  }

  /**
   * `verified`: every routing and ownership record resolves as expected. Managed domains are
   * checked in the organization's zone (the local zone answers itself; Route 53 is checked
   * through public DNS); the others through public DNS. All lookups of the page run at once.
   */
  private async verify(instance: ListedInstance, rows: DomainPageRow[], records: DomainRecord[][]): Promise<boolean[]> {
    const managed: { domain: number; record: DomainRecord }[] = [];
    const unmanaged: { domain: number; record: DomainRecord }[] = [];
    rows.forEach((row, domain) => {
      for (const record of records[domain]!) {
        if (VERIFYING_ROLES.has(record.role)) (row.managed_by_service ? managed : unmanaged).push({ domain, record });
      }
    });
    const zone = managed.length > 0 ? await this.providers.dnsZoneFor(instance.organizationId) : undefined;
    const [managedResults, unmanagedResults] = await Promise.all([
      this.checker.checkAll(
        managed.map((m) => m.record),
        zone,
      ),
      this.checker.checkAll(unmanaged.map((m) => m.record)),
    ]);
    const verified = rows.map(() => true);
    managed.forEach((m, i) => {
      if (managedResults[i] !== 'match') verified[m.domain] = false;
    });
    unmanaged.forEach((m, i) => {
      if (unmanagedResults[i] !== 'match') verified[m.domain] = false;
    });
    return verified;
  }
}

/** The wildcard name that would cover `name` (one-label rule), or undefined (wildcards, invalid stored names). */
function parentOf(name: string): string | undefined {
  try {
    return parentCandidates(name)[0];
  } catch {
    return undefined;
  }
}

function toCertificate(row: DomainPageRow): DomainCertificate {
  const certificate: DomainCertificate = { status: row.cert_status! };
  if (row.cert_arn !== null) certificate.arn = row.cert_arn;
  if (row.cert_issued_at !== null) certificate.issuedAt = new Date(row.cert_issued_at).toISOString();
  if (row.cert_expires_at !== null) certificate.expiresAt = new Date(row.cert_expires_at).toISOString();
  return certificate;
}
