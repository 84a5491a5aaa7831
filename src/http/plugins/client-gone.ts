import type { FastifyReply } from 'fastify';

/**
 * Runs `work` with a signal that aborts when the client hangs up before the answer is written, so a request's
 * statements and upstream queries stop with it.
 */
export async function untilClientGone<T>(reply: FastifyReply, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const gone = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) gone.abort(new Error('the client closed the connection'));
  };
  reply.raw.once('close', onClose);
  try {
    return await work(gone.signal);
  } finally {
    reply.raw.off('close', onClose);
  }
}
