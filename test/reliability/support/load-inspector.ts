import WebSocket from 'ws';

/** NODE_OPTIONS that make a Berth process open its inspector on loopback and a free port. */
export function inspectorNodeOptions(): string {
  return [process.env.NODE_OPTIONS, '--inspect=127.0.0.1:0'].filter((s) => s !== undefined && s !== '').join(' ');
}

/** The inspector's WebSocket URL as the process printed it (the last one, after a restart). */
export function inspectorUrl(output: string): string {
  const all = [...output.matchAll(/Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[\w-]+)/g)];
  const last = all.at(-1)?.[1];
  if (last === undefined) throw new Error(`the process printed no inspector URL:\n${output.slice(-2000)}`);
  return last;
}

/**
 * The process's used JS heap after full garbage collections, through the DevTools protocol:
 * `HeapProfiler.collectGarbage` a few times (weak references and finalizers free more on later
 * passes), then `Runtime.getHeapUsage`.
 */
export async function heapAfterGc(url: string, collections = 3): Promise<number> {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  let nextId = 0;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  socket.on('message', (data) => {
    const message = JSON.parse(data.toString()) as { id?: number; result?: unknown; error?: { message: string } };
    const waiter = message.id === undefined ? undefined : pending.get(message.id);
    if (waiter === undefined) return;
    pending.delete(message.id!);
    if (message.error) waiter.reject(new Error(message.error.message));
    else waiter.resolve(message.result);
  });
  const call = <T>(method: string, params: object = {}): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ id, method, params }));
    });
  try {
    for (let i = 0; i < collections; i++) {
      await call('HeapProfiler.collectGarbage');
      await new Promise((r) => setTimeout(r, 200));
    }
    const usage = await call<{ usedSize: number; totalSize: number }>('Runtime.getHeapUsage');
    return usage.usedSize;
  } finally {
    socket.close();
  }
}
