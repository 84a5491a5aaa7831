// A fresh fake AWS endpoint and the real SDK clients Berth's providers use, for one test.
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { expect } from 'vitest';
import { AwsClients } from '../../src/providers/aws/clients.js';
import { FAKE_CREDENTIALS, startFakeAws, type FakeAws } from './fake-aws/index.js';

/** Starts the fake and clients with fake credentials, three quick attempts and a 5 s call timeout. */
export async function startFakeAwsClients(): Promise<{ aws: FakeAws; clients: AwsClients }> {
  const aws = await startFakeAws();
  const clients = new AwsClients({
    maxAttempts: 3,
    callTimeoutMs: 5_000,
    retryStrategy: new ConfiguredRetryStrategy(3, 5),
    credentials: { ...FAKE_CREDENTIALS },
  });
  return { aws, clients };
}

/** Closes both; the fake must not have answered any request with an error it did not mean to. */
export async function stopFakeAwsClients(aws: FakeAws, clients: AwsClients): Promise<void> {
  clients.close();
  expect(aws.unexpectedErrors).toEqual([]);
  await aws.close();
}
