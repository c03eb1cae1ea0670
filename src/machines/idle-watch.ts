/**
 * The idle watch of an actor that stops when unused (an `on_demand` server, a
 * per-user session): counts the calls it is told of (`call.started` /
 * `call.finished`) and calls `onIdle` once none ran for `idleMs`.
 */
export function watchIdle(
  idleMs: number,
  onIdle: () => void,
  receive: (listener: (event: { type: string }) => void) => void,
): () => void {
  let inFlight = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(onIdle, idleMs);
    // A waiting idle timer alone does not keep the process alive.
    timer.unref();
  };
  arm();
  receive((event) => {
    if (event.type === 'call.started') {
      inFlight += 1;
      clearTimeout(timer);
    } else if (event.type === 'call.finished') {
      inFlight = Math.max(0, inFlight - 1);
      if (inFlight === 0) arm();
    }
  });
  return () => clearTimeout(timer);
}
