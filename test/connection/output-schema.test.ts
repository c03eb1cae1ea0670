// Tools with an output schema: the SDK client checks structured content
// against it. mcp-fleet gives each client an Ajv validator built only on
// first use (most servers declare no output schema); the check must still run.
import { describe, expect, it } from 'vitest';
import { FleetError } from '../../src/errors.js';
import { connectTracked, fixtureConfig } from './helpers.js';

describe('output schemas', () => {
  it('structured content that matches passes; content that does not is a protocol error', async () => {
    const connection = await connectTracked('schema', fixtureConfig('output-schema'));
    const good = await connection.callTool('good', {});
    expect(good.structuredContent).toEqual({ n: 1 });
    const error = await connection.callTool('bad', {}).then(
      () => new Error('resolved but should have failed'),
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(FleetError);
    expect((error as FleetError).kind).toBe('protocol');
    expect((error as FleetError).message).toMatch(/output schema/i);
  });

  it('a schema that cannot be compiled fails its own tool, not the listing (schemas compile on first use)', async () => {
    const connection = await connectTracked('schema', fixtureConfig('output-schema'));
    expect(connection.allTools.map((tool) => tool.name)).toEqual(['good', 'bad', 'broken', 'large']);
    expect((await connection.callTool('good', {})).structuredContent).toEqual({ n: 1 });
    await expect(connection.callTool('broken', {})).rejects.toThrow(/no-such-type|schema/i);
  });
});
