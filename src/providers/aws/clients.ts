import { ACMClient, type ACMClientConfig } from '@aws-sdk/client-acm';
import { Route53Client } from '@aws-sdk/client-route-53';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';

/** A cloud account of provider `aws`, as stored. */
export interface AwsAccount {
  id: string;
  region: string;
  roleArn: string | null;
  externalId: string | null;
  endpoint: string | null;
}

export type AwsCredentials = Exclude<ACMClientConfig['credentials'], undefined>;
export type AwsRetryStrategy = ACMClientConfig['retryStrategy'];

export interface AwsOptions {
  /** Attempts of one call; the SDK's standard strategy retries throttling and 5xx with backoff and jitter. */
  maxAttempts: number;
  /** Upper bound on one call, retries included. */
  callTimeoutMs: number;
  /** Replaces the SDK's retry strategy (tests use short backoffs). */
  retryStrategy?: AwsRetryStrategy;
  /**
   * Credentials used as they are, or to call STS AssumeRole for accounts with a `roleArn`.
   * Default: the SDK's default provider chain. Never freeze the object: the SDK writes to it.
   */
  credentials?: AwsCredentials;
}

/** Route 53 is global; its API is signed for us-east-1. */
const ROUTE53_REGION = 'us-east-1';
/** Assumed-role credentials are renewed this long before they expire. */
const RENEW_BEFORE_MS = 5 * 60_000;
const SESSION_SECONDS = 3600;

/** Clients are cached by everything that shapes them, so an edited account gets new ones. */
function accountKey(account: AwsAccount): string {
  return JSON.stringify([account.id, account.endpoint, account.roleArn, account.externalId, account.region]);
}

interface TemporaryCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  expiration: Date;
}

/**
 * SDK clients per cloud account (and region for ACM), made once and reused, each pointed at the
 * account's `endpoint` when it has one and signed with the account's credentials.
 */
export class AwsClients {
  private readonly clients = new Map<string, { destroy(): void }>();
  private readonly credentials = new Map<string, AwsCredentials | undefined>();

  constructor(private readonly options: AwsOptions) {}

  get callTimeoutMs(): number {
    return this.options.callTimeoutMs;
  }

  acm(account: AwsAccount, region: string): ACMClient {
    return this.client(`acm ${accountKey(account)} ${region}`, () => new ACMClient(this.clientConfig(account, region)));
  }

  route53(account: AwsAccount): Route53Client {
    return this.client(
      `route53 ${accountKey(account)}`,
      () => new Route53Client(this.clientConfig(account, ROUTE53_REGION)),
    );
  }

  close(): void {
    for (const client of this.clients.values()) client.destroy();
    this.clients.clear();
    this.credentials.clear();
  }

  private client<T extends { destroy(): void }>(key: string, make: () => T): T {
    let client = this.clients.get(key) as T | undefined;
    if (client === undefined) {
      client = make();
      this.clients.set(key, client);
    }
    return client;
  }

  /** What every SDK client of the account shares: region, endpoint override, credentials, retries. */
  clientConfig(account: AwsAccount, region: string) {
    return {
      region,
      ...(account.endpoint !== null ? { endpoint: account.endpoint } : {}),
      credentials: this.credentialsFor(account),
      maxAttempts: this.options.maxAttempts,
      ...(this.options.retryStrategy !== undefined ? { retryStrategy: this.options.retryStrategy } : {}),
    };
  }

  private credentialsFor(account: AwsAccount): AwsCredentials | undefined {
    const key = accountKey(account);
    if (!this.credentials.has(key)) {
      this.credentials.set(
        key,
        account.roleArn === null ? this.options.credentials : this.assumeRole(account, account.roleArn),
      );
    }
    return this.credentials.get(key);
  }

  /** Credentials of the account's role through STS AssumeRole (with its externalId), cached until near expiry. */
  private assumeRole(account: AwsAccount, roleArn: string): AwsCredentials {
    let cached: TemporaryCredentials | undefined;
    let pending: Promise<TemporaryCredentials> | undefined;
    const fetchCredentials = async (): Promise<TemporaryCredentials> => {
      const sts = new STSClient(this.clientConfig({ ...account, roleArn: null }, account.region));
      try {
        const out = await sts.send(
          new AssumeRoleCommand({
            RoleArn: roleArn,
            RoleSessionName: `berth-${account.id}`.replace(/[^\w+=,.@-]/g, '-').slice(0, 64),
            DurationSeconds: SESSION_SECONDS,
            ...(account.externalId !== null ? { ExternalId: account.externalId } : {}),
          }),
          { abortSignal: AbortSignal.timeout(this.options.callTimeoutMs) },
        );
        const c = out.Credentials;
        if (c?.AccessKeyId === undefined || c.SecretAccessKey === undefined || c.SessionToken === undefined) {
          throw new Error('STS AssumeRole answered without credentials');
        }
        return {
          accessKeyId: c.AccessKeyId,
          secretAccessKey: c.SecretAccessKey,
          sessionToken: c.SessionToken,
          expiration: c.Expiration ?? new Date(Date.now() + SESSION_SECONDS * 1000),
        };
      } finally {
        sts.destroy();
      }
    };
    return async () => {
      if (cached !== undefined && cached.expiration.getTime() - RENEW_BEFORE_MS > Date.now()) return { ...cached };
      pending ??= fetchCredentials().finally(() => {
        pending = undefined;
      });
      cached = await pending;
      return { ...cached };
    };
  }
}
