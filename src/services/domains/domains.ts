import { sql } from 'kysely';
import { canRead, type Caller } from '../../core/caller.js';
import { decodeCursor, encodeCursor, type DomainCursor } from '../../core/cursor.js';
import { parentCandidates } from '../../core/domain-name.js';
import type { RecordChecker } from './record-checker.js';
import { expectedRecords, type DomainRecord } from '../../core/dns-records.js';
import { appError } from '../../core/errors.js';
import type { Providers } from '../../providers/index.js';
import type { Db } from '../../store/db.js';
import { findInstanceScope, type InstanceScope } from '../../store/tenancy.js';
import type { ValidationRecord } from '../../store/schema.js';

export interface DomainCertificate {
  arn?: string;
  status: string;
  issuedAt?: string;
  expiresAt?: string;
}

export interface DomainParent {
  /** Name of the module instance that holds the parent wildcard. */
  name: string;
  projectId: string;
  environmentId: string;
  moduleInstanceId: string;
}

export interface Domain {
  id: string;
  domainName: string;
  url: string;
  verified: boolean;
  managedByService: boolean;
  moduleInstanceId: string;
  records: DomainRecord[];
  certificate?: DomainCertificate;
  parent?: DomainParent;
  parentDomainName?: string;
  targetDnsName?: string;
  targetZoneId?: string;
}

export interface DomainPage {
  data: Domain[];
  meta: { limit: number; nextCursor?: string; totalCount: number };
}

export interface ListDomainsQuery {
  moduleInstanceId: string;
  limit: number;
  cursor?: string;
}

interface DomainRow {
  id: string;
  domain_name: string;
  managed_by_service: boolean;
  target_dns_name: string | null;
  target_zone_id: string | null;
  cert_arn: string | null;
  cert_status: string | null;
  cert_issued_at: Date | null;
  cert_expires_at: Date | null;
  cert_validation_records: ValidationRecord[] | null;
  cert_organization_id: string | null;
}

interface ParentRow {
  domain_name: string;
  module_instance_id: string;
  instance_name: string;
  environment_id: string;
  project_id: string;
}

/** Roles whose records decide `verified` (DESIGN §6): certificate validation is the authority's business. */
const VERIFYING_ROLES = new Set(['ROUTING', 'OWNERSHIP_VERIFICATION']);

/** Bytewise order, the same on every database; the index of migration 002 serves it. */
const NAME_ORDER = sql`d.domain_name COLLATE "C"`;
const ID_ORDER = sql`d.id COLLATE "C"`;

export class DomainService {
  constructor(
    private readonly db: Db,
    private readonly providers: Providers,
    private readonly checker: RecordChecker,
    private readonly cursorKey: string,
  ) {}

  /** A module instance's domains, a page at a time, in (domainName, id) order. */
  async list(caller: Caller, query: ListDomainsQuery): Promise<DomainPage> {
    const instance = await findInstanceScope(this.db, query.moduleInstanceId);
    // Another organization's instance answers like a missing one (DESIGN §4).
    if (instance === undefined || !canRead(caller, instance.organizationId))
      throw appError('domains:module-instance:not-found');
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, this.cursorKey, instance.id);

    const [rows, totalCount] = await Promise.all([this.page(instance.id, query.limit, after), this.count(instance.id)]);
    const pageRows = rows.slice(0, query.limit);
    const last = pageRows[pageRows.length - 1];
    const nextCursor =
      rows.length > query.limit && last !== undefined
        ? encodeCursor({ moduleInstanceId: instance.id, domainName: last.domain_name, id: last.id }, this.cursorKey)
        : undefined;

    const parents = await this.parents(instance, pageRows);
    const records = pageRows.map((row) =>
      expectedRecords(
        {
          id: row.id,
          domainName: row.domain_name,
          managedByService: row.managed_by_service,
          targetDnsName: row.target_dns_name,
          targetZoneId: row.target_zone_id,
        },
        this.ownCertificate(row, instance) ? (row.cert_validation_records ?? []) : [],
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
      if (this.ownCertificate(row, instance)) domain.certificate = toCertificate(row);
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
    const meta: DomainPage['meta'] = { limit: query.limit, totalCount };
    if (nextCursor !== undefined) meta.nextCursor = nextCursor;
    return { data, meta };
  }

  /** One more row than the page, to know whether another page follows. */
  private async page(instanceId: string, limit: number, after: DomainCursor | undefined): Promise<DomainRow[]> {
    let q = this.db
      .selectFrom('domains as d')
      .leftJoin('certificates as c', 'c.id', 'd.certificate_id')
      .leftJoin('module_instances as cmi', 'cmi.id', 'c.module_instance_id')
      .leftJoin('environments as ce', 'ce.id', 'cmi.environment_id')
      .leftJoin('projects as cp', 'cp.id', 'ce.project_id')
      .select([
        'd.id',
        'd.domain_name',
        'd.managed_by_service',
        'd.target_dns_name',
        'd.target_zone_id',
        'c.arn as cert_arn',
        'c.status as cert_status',
        'c.issued_at as cert_issued_at',
        'c.expires_at as cert_expires_at',
        'c.validation_records as cert_validation_records',
        'cp.organization_id as cert_organization_id',
      ])
      .where('d.module_instance_id', '=', instanceId);
    if (after !== undefined) {
      q = q.where(sql<boolean>`(${NAME_ORDER}, ${ID_ORDER}) > (${after.domainName}, ${after.id})`);
    }
    return q
      .orderBy(NAME_ORDER)
      .orderBy(ID_ORDER)
      .limit(limit + 1)
      .execute();
  }

  private async count(instanceId: string): Promise<number> {
    const row = await this.db
      .selectFrom('domains')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .where('module_instance_id', '=', instanceId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * A certificate is shown only when it belongs to the domain's organization, so a domain that
   * points at another tenant's certificate (a bad fixture) reveals nothing of it.
   */
  private ownCertificate(row: DomainRow, instance: InstanceScope): boolean {
    return row.cert_status !== null && row.cert_organization_id === instance.organizationId;
  }

  /**
   * The `*.parent` wildcard covering each domain, by wildcard name: one per name, from the
   * instance's own organization only — another organization's wildcard is never revealed.
   * Several candidates: the listed instance's own first, then by id.
   */
  private async parents(instance: InstanceScope, rows: DomainRow[]): Promise<Map<string, ParentRow>> {
    const names = [...new Set(rows.map((r) => parentOf(r.domain_name)).filter((n): n is string => n !== undefined))];
    const out = new Map<string, ParentRow>();
    if (names.length === 0) return out;
    const found = await this.db
      .selectFrom('domains as d')
      .innerJoin('module_instances as mi', 'mi.id', 'd.module_instance_id')
      .innerJoin('environments as e', 'e.id', 'mi.environment_id')
      .innerJoin('projects as p', 'p.id', 'e.project_id')
      .select([
        'd.domain_name',
        'd.module_instance_id',
        'mi.name as instance_name',
        'mi.environment_id',
        'e.project_id',
      ])
      .where('d.domain_name', 'in', names)
      .where('p.organization_id', '=', instance.organizationId)
      .orderBy('d.domain_name')
      .orderBy(sql`(d.module_instance_id = ${instance.id})`, 'desc')
      .orderBy(ID_ORDER)
      .execute();
    for (const row of found) if (!out.has(row.domain_name)) out.set(row.domain_name, row);
    return out;
  }

  /**
   * `verified`: every routing and ownership record resolves as expected. Managed domains are
   * checked in the organization's zone (the local zone answers itself; Route 53 is checked
   * through public DNS); the others through public DNS. All lookups of the page run at once.
   */
  private async verify(instance: InstanceScope, rows: DomainRow[], records: DomainRecord[][]): Promise<boolean[]> {
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

function toCertificate(row: DomainRow): DomainCertificate {
  const certificate: DomainCertificate = { status: row.cert_status! };
  if (row.cert_arn !== null) certificate.arn = row.cert_arn;
  if (row.cert_issued_at !== null) certificate.issuedAt = new Date(row.cert_issued_at).toISOString();
  if (row.cert_expires_at !== null) certificate.expiresAt = new Date(row.cert_expires_at).toISOString();
  return certificate;
}
