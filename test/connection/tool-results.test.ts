// The tap on tools/call answers, alone: what it changes, and that it forgets
// a call the client gave up on, so a long-lived connection keeps no set of
// ids that never got their answer.
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { toolResultTap } from '../../src/connection/tool-results.js';

const call = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'x', arguments: {} } });
const answer = (id: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'a' }, { type: 'mystery', z: 1 }] } });

describe('toolResultTap', () => {
  it('turns an unknown block of a tools/call answer into its JSON, and leaves any other answer alone', () => {
    const tap = toolResultTap();
    tap.sent!(call(1));
    expect(tap.delivered!(answer(1))).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: { content: [{ type: 'text', text: 'a' }, { type: 'text', text: '{"type":"mystery","z":1}' }] },
    });
    // Answered once: the same id again is no call of its.
    const again = answer(1);
    expect(tap.delivered!(again)).toBe(again);
    const other = answer(2);
    expect(tap.delivered!(other)).toBe(other);
  });

  it('forgets a call the client cancelled: a late answer to it passes as it is', () => {
    const tap = toolResultTap();
    tap.sent!(call(7));
    tap.sent!({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'aborted' } });
    const late = answer(7);
    expect(tap.delivered!(late)).toBe(late);
  });
});
