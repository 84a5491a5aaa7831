import { expect } from 'vitest';
import { ProviderError } from '../../src/providers/errors.js';

/** The ProviderError `p` rejects with; fails the test if it resolves or rejects with anything else. */
export async function providerFailure(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (error) {
    expect(error).toBeInstanceOf(ProviderError);
    return error as ProviderError;
  }
  throw new Error('expected a ProviderError');
}
