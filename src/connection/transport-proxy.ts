/**
 * A transport seen through: what the client sends is shown to each tap, what
 * it is delivered passes each tap's `delivered` (around whatever `onmessage`
 * the SDK sets), and everything else is the transport's own. One proxy for
 * every tap, its methods bound once: the SDK reads some of them on every message.
 * A transport of ours takes its taps itself instead (`TappableTransport`).
 */
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { cacheScopeTap } from './cache-scope.js';
import { toolResultTap } from './tool-results.js';

type Deliver = (message: JSONRPCMessage, extra?: unknown) => void;

export interface TransportTap {
  /** Sees each message the client sends, before the transport does. */
  sent?(message: JSONRPCMessage): void;
  /** What the client is delivered in place of `message` (usually `message` itself). */
  delivered?(message: JSONRPCMessage): JSONRPCMessage;
}

/** A transport that shows taps what it sends and delivers itself (ours over stdio), so it needs no proxy. */
export interface TappableTransport {
  tap(taps: readonly TransportTap[]): void;
}

/**
 * `transport` as a client is given it: the `cacheScope` of every list page
 * counted (cache-scope.ts), what answers a `tools/call` made into a result
 * the SDK accepts (tool-results.ts). A tappable transport is tapped in place:
 * a proxy, its handler and its bound methods cost each ready server ~1 KiB.
 */
export function watchTransport<T extends Transport>(transport: T): T {
  const scopes = cacheScopeTap();
  const taps = [scopes, toolResultTap()];
  let watched: T;
  if (isTappable(transport)) {
    transport.tap(taps);
    watched = transport;
  } else watched = tapTransport(transport, taps);
  scopes.watching(watched);
  return watched;
}

function isTappable(transport: Transport): transport is Transport & TappableTransport {
  return typeof (transport as Partial<TappableTransport>).tap === 'function';
}

export function tapTransport<T extends Transport>(transport: T, taps: readonly TransportTap[]): T {
  return new Proxy(transport, new Taps<T>(transport, taps));
}

/** The proxy's handler; a class, so each connection keeps fields rather than closures. */
class Taps<T extends Transport> implements ProxyHandler<T> {
  private bound: Map<PropertyKey, { method: unknown; bound: unknown }> | null = null;
  private readonly send = (message: JSONRPCMessage, options?: Parameters<Transport['send']>[1]): Promise<void> => {
    for (const tap of this.taps) tap.sent?.(message);
    return this.transport.send(message, options);
  };

  constructor(
    private readonly transport: T,
    private readonly taps: readonly TransportTap[],
  ) {}

  get(target: T, property: PropertyKey): unknown {
    if (property === 'send') return this.send;
    const value: unknown = Reflect.get(target, property, target);
    if (typeof value !== 'function') return value;
    const bound = (this.bound ??= new Map());
    const known = bound.get(property);
    if (known?.method === value) return known.bound;
    const fresh = value.bind(target) as unknown;
    bound.set(property, { method: value, bound: fresh });
    return fresh;
  }

  set(target: T, property: PropertyKey, value: unknown): boolean {
    const wrapped = property === 'onmessage' && typeof value === 'function' ? this.deliver(value as Deliver) : value;
    return Reflect.set(target, property, wrapped, target);
  }

  private deliver(forward: Deliver): Deliver {
    const taps = this.taps;
    return (message, extra) => {
      for (const tap of taps) if (tap.delivered !== undefined) message = tap.delivered(message);
      forward(message, extra);
    };
  }
}
