/**
 * A transport seen through: what the client sends passes `send`, what it is
 * delivered passes `deliver` (wrapped around whatever `onmessage` the SDK
 * sets), and everything else is the transport's own. Methods are bound once:
 * the SDK reads some of them on every message.
 */
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';

type Deliver = (message: JSONRPCMessage, extra?: unknown) => void;

export interface TransportTap {
  send(message: JSONRPCMessage, options?: Parameters<Transport['send']>[1]): Promise<void>;
  /** The delivery to use in place of `forward`, the SDK's own `onmessage`. */
  deliver(forward: Deliver): Deliver;
}

export function tapTransport<T extends Transport>(transport: T, tap: TransportTap): T {
  const bound = new Map<PropertyKey, { method: unknown; bound: unknown }>();
  return new Proxy(transport, {
    get(target, property) {
      if (property === 'send') return tap.send;
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const known = bound.get(property);
      if (known?.method === value) return known.bound;
      const fresh = value.bind(target) as unknown;
      bound.set(property, { method: value, bound: fresh });
      return fresh;
    },
    set(target, property, value: unknown) {
      const wrapped = property === 'onmessage' && typeof value === 'function' ? tap.deliver(value as Deliver) : value;
      return Reflect.set(target, property, wrapped, target);
    },
  });
}
