import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@aws-sdk/types';
import type { CloudAccount } from '../../logs/query/types.js';

/**
 * What every AWS SDK client of one cloud account shares: its region, the
 * endpoint override (AWS-compatible stacks and tests), and credentials —
 * the default provider chain, or STS AssumeRole with roleArn + externalId.
 * Throttling (ThrottlingException, LimitExceededException) is retried by the
 * SDK's standard strategy with exponential backoff and jitter.
 */
export interface AwsClientConfig {
  region: string;
  endpoint?: string;
  credentials?: AwsCredentialIdentityProvider;
  maxAttempts: number;
}

const REFRESH_BEFORE_MS = 5 * 60_000;
const assumed = new Map<string, AwsCredentialIdentityProvider>();

/** Assumed-role credentials, cached until five minutes before they expire. */
function assumeRoleProvider(account: CloudAccount, region: string): AwsCredentialIdentityProvider {
  const key = `${account.id}|${account.roleArn}|${account.externalId ?? ''}|${account.endpoint ?? ''}`;
  let provider = assumed.get(key);
  if (provider !== undefined) return provider;
  const sts = new STSClient({ region, ...(account.endpoint ? { endpoint: account.endpoint } : {}) });
  let current: AwsCredentialIdentity | undefined;
  let pending: Promise<AwsCredentialIdentity> | undefined;
  provider = async () => {
    if (current?.expiration && current.expiration.getTime() - Date.now() > REFRESH_BEFORE_MS) return current;
    pending ??= sts
      .send(
        new AssumeRoleCommand({
          RoleArn: account.roleArn!,
          RoleSessionName: `berth-${account.id}`.slice(0, 64).replace(/[^\w+=,.@-]/g, '-'),
          ...(account.externalId ? { ExternalId: account.externalId } : {}),
        }),
      )
      .then((out) => {
        const c = out.Credentials;
        if (!c?.AccessKeyId || !c.SecretAccessKey) throw new Error('AssumeRole returned no credentials');
        current = { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.SessionToken, expiration: c.Expiration };
        return current;
      })
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };
  assumed.set(key, provider);
  return provider;
}

export function awsClientConfig(account: CloudAccount, region: string, maxAttempts = 4): AwsClientConfig {
  return {
    region,
    ...(account.endpoint ? { endpoint: account.endpoint } : {}),
    ...(account.roleArn ? { credentials: assumeRoleProvider(account, region) } : {}),
    maxAttempts,
  };
}
