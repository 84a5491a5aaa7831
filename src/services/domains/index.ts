import { listSetting, type Config } from '../../config.js';
import { DnsResolver } from '../../providers/domains/dns-resolver.js';
import { RecordChecker } from './record-checker.js';
import type { Providers } from '../../providers/index.js';
import type { Db } from '../../store/db.js';
import type { Tenancy } from '../../store/tenancy.js';
import type { CursorSecret } from '../cursor-secret.js';
import { CertificateRetryService } from './certificate-retry.js';
import { DomainService } from './domains.js';
import { NameAvailabilityService } from './name-availability.js';

export interface DomainServices {
  domains: DomainService;
  nameAvailability: NameAvailabilityService;
  certificates: CertificateRetryService;
  close(): Promise<void>;
}

/** The services of issue 3 and the providers behind them. */
export function createDomainServices(
  db: Db,
  tenancy: Tenancy,
  config: Config,
  providers: Providers,
  cursorSecret: CursorSecret,
): DomainServices {
  const servers = listSetting(config.DNS_SERVERS);
  const resolver = (cacheTtlMs: number) => new DnsResolver({ servers, timeoutMs: config.DNS_TIMEOUT_MS, cacheTtlMs });
  return {
    domains: new DomainService(
      db,
      tenancy,
      providers,
      new RecordChecker(resolver(config.DNS_CACHE_TTL_MS)),
      cursorSecret,
    ),
    nameAvailability: new NameAvailabilityService(db, tenancy, listSetting(config.RESERVED_ZONES)),
    // A retry is the user saying "I have published the records now": it never reads a cached answer.
    certificates: new CertificateRetryService(db, tenancy, providers, new RecordChecker(resolver(0)), {
      leaseMs: config.CERTIFICATE_RETRY_LEASE_MS,
    }),
    close: async () => undefined,
  };
}
