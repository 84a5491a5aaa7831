import type { Db } from '../store/db.js';
import { listAwsAccounts } from '../store/repositories/cloud-accounts.js';
import type { AwsAccount, AwsClients, AwsOptions } from './aws/clients.js';
import { AcmCertificateAuthority } from './aws/domains/certificate-authority.js';
import { LocalCertificateAuthority } from './local/domains/certificate-authority.js';
import type { CertificateAuthority } from './domains/certificate-authority.js';
import { Route53DnsZone } from './aws/domains/dns-zone.js';
import { LocalDnsZone } from './local/domains/dns-zone.js';
import type { DnsZone } from './domains/dns-zone.js';

export interface ProviderOverrides {
  /** Options of the process's AWS client factory (tests: short retry backoffs, static credentials). */
  aws?: Partial<AwsOptions>;
  /** Wraps the authority chosen for a certificate (tests: count or fail attempts). */
  wrapCertificateAuthority?: (authority: CertificateAuthority) => CertificateAuthority;
  /** Wraps the zone chosen for an organization's managed domains. */
  wrapDnsZone?: (zone: DnsZone) => DnsZone;
}

export interface AcmArn {
  partition: string;
  region: string;
  accountId: string;
}

const ACM_ARN = /^arn:(aws[\w-]*):acm:([a-z0-9-]+):(\d{12}):certificate\/[\w-]+$/;
const ROLE_ARN_ACCOUNT = /^arn:aws[\w-]*:iam::(\d{12}):role\//;

export function parseAcmArn(arn: string | null | undefined): AcmArn | null {
  const m = arn ? ACM_ARN.exec(arn) : null;
  return m === null ? null : { partition: m[1]!, region: m[2]!, accountId: m[3]! };
}

/**
 * The `aws` cloud account of an organization that serves a certificate: the one whose role is in
 * the ARN's AWS account, then one in the ARN's region, then the first by id. Without an ARN:
 * the first by id. `accounts` are the organization's `aws` accounts.
 */
export function chooseAwsAccount(accounts: AwsAccount[], arn: AcmArn | null): AwsAccount | undefined {
  const score = (a: AwsAccount) =>
    arn === null
      ? 0
      : (ROLE_ARN_ACCOUNT.exec(a.roleArn ?? '')?.[1] === arn.accountId ? 2 : 0) + (a.region === arn.region ? 1 : 0);
  return [...accounts].sort((a, b) => score(b) - score(a) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))[0];
}

/**
 * Picks the provider of each request (docs/design.md#providers, docs/decisions.md): an organization with an
 * `aws` cloud account keeps its managed zones in Route 53, and a certificate with an ACM ARN in
 * such an organization is asked about in ACM (in the ARN's region); everything else is `local`.
 */
export class Providers {
  private readonly local: { authority: LocalCertificateAuthority; zone: LocalDnsZone };

  /** `aws` is the process's one client factory, shared with the log backends; its owner closes it. */
  constructor(
    private readonly db: Db,
    private readonly aws: AwsClients,
    private readonly overrides: ProviderOverrides = {},
  ) {
    this.local = { authority: new LocalCertificateAuthority(), zone: new LocalDnsZone(db) };
  }

  async certificateAuthorityFor(organizationId: string, arn: string | null): Promise<CertificateAuthority> {
    const parsed = parseAcmArn(arn);
    const account =
      parsed === null ? undefined : chooseAwsAccount(await listAwsAccounts(this.db, organizationId), parsed);
    const authority =
      account === undefined || parsed === null
        ? this.local.authority
        : new AcmCertificateAuthority(this.aws.acm(account, parsed.region), this.aws.callTimeoutMs);
    return this.overrides.wrapCertificateAuthority?.(authority) ?? authority;
  }

  async dnsZoneFor(organizationId: string, arn: string | null = null): Promise<DnsZone> {
    const account = chooseAwsAccount(await listAwsAccounts(this.db, organizationId), parseAcmArn(arn));
    const zone =
      account === undefined ? this.local.zone : new Route53DnsZone(this.aws.route53(account), this.aws.callTimeoutMs);
    return this.overrides.wrapDnsZone?.(zone) ?? zone;
  }
}
