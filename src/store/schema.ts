import type { ColumnType, Generated } from 'kysely';

/** Row types of the tables in `migrations/`. */

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type BigIntNumber = ColumnType<number, number | bigint, number | bigint>;

export interface OrganizationsTable {
  id: string;
  name: string;
  permitted_identity_providers: string[];
}

export interface PrincipalsTable {
  id: string;
  name: string;
  superadmin: Generated<boolean>;
}

export interface MembershipsTable {
  principal_id: string;
  organization_id: string;
  role: 'owner' | 'admin' | 'member' | 'viewer';
}

export interface ApiKeysTable {
  id: string;
  principal_id: string;
  organization_id: string | null;
  token_hash: string;
  expires_at: Timestamp | null;
  revoked_at: Timestamp | null;
  created_at: Generated<Date>;
}

export interface CloudAccountsTable {
  id: string;
  organization_id: string;
  provider: 'local' | 'aws';
  region: string;
  role_arn: string | null;
  external_id: string | null;
  endpoint: string | null;
}

export interface ProjectsTable {
  id: string;
  organization_id: string;
  name: string;
}

export interface EnvironmentsTable {
  id: string;
  project_id: string;
  name: string;
}

export interface ModuleInstancesTable {
  id: string;
  environment_id: string;
  name: string;
}

export interface LogSourcesTable {
  module_instance_id: string;
  id: string;
  kind: string;
  cloud_account_id: string;
  region: string;
  log_group: string;
  log_stream_prefix: string | null;
}

export interface DeploymentResourcesTable {
  id: string;
  module_instance_id: string;
  type: string;
  cloud_account_id: string;
  region: string;
  snapshot: ColumnType<unknown, string, string>;
}

export interface ValidationRecord {
  name: string;
  type: string;
  value: string;
}

export interface CertificatesTable {
  id: string;
  module_instance_id: string;
  domain_name: string;
  status: string;
  arn: string | null;
  issued_at: Timestamp | null;
  expires_at: Timestamp | null;
  validation_records: ColumnType<ValidationRecord[], string, string>;
  updated_at: Generated<Date>;
}

export interface DomainsTable {
  id: string;
  module_instance_id: string;
  domain_name: string;
  managed_by_service: boolean;
  certificate_id: string | null;
  target_dns_name: string | null;
  target_zone_id: string | null;
}

export interface DnsRecordsTable {
  name: string;
  type: string;
  value: string;
  updated_at: Generated<Date>;
}

export interface ModuleCategoriesTable {
  id: string;
  organization_id: string | null;
  given_id: string;
  name: string;
  sort_order: number;
  description: string | null;
  icon: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface LogEventsTable {
  seq: Generated<BigIntNumber>;
  cloud_account_id: string;
  region: string;
  log_group: string;
  log_stream: string;
  timestamp: BigIntNumber;
  ingestion_time: BigIntNumber;
  event_id: string;
  message: string;
  level: string;
  json: ColumnType<unknown, string | null, string | null>;
}

export interface Tables {
  organizations: OrganizationsTable;
  principals: PrincipalsTable;
  memberships: MembershipsTable;
  api_keys: ApiKeysTable;
  cloud_accounts: CloudAccountsTable;
  projects: ProjectsTable;
  environments: EnvironmentsTable;
  module_instances: ModuleInstancesTable;
  log_sources: LogSourcesTable;
  deployment_resources: DeploymentResourcesTable;
  certificates: CertificatesTable;
  domains: DomainsTable;
  dns_records: DnsRecordsTable;
  module_categories: ModuleCategoriesTable;
  log_events: LogEventsTable;
}
