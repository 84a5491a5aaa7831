// The Redis the tests use (this machine's, or TEST_REDIS_URL), and whether it answers: tests that need it skip
// when it does not.
import { Socket } from 'node:net';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether a TCP connection to `url`'s host and port opens within a second. */
export async function reachable(url: string = TEST_REDIS_URL): Promise<boolean> {
  const { hostname, port } = new URL(url);
  const socket = new Socket();
  try {
    return await new Promise<boolean>((resolve) => {
      socket.setTimeout(1_000);
      socket.once('connect', () => resolve(true));
      socket.once('error', () => resolve(false));
      socket.once('timeout', () => resolve(false));
      socket.connect(Number(port || 6379), hostname);
    });
  } finally {
    socket.destroy();
  }
}
