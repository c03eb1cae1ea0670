// An agent turn against any OpenAI-compatible endpoint, with server-everything's
// tools: the model may call them (several at once), sees their results, and answers.
// The same model answers the servers' sampling requests.
//
//   OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.1 npx tsx examples/agent-loop.ts "Add 2 and 3 with a tool"
//
// OPENAI_BASE_URL (default https://api.openai.com/v1), OPENAI_API_KEY (optional for local servers), OPENAI_MODEL (required).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createMcpHost, createOpenAICompatibleModel, runAgentTurn } from 'mcp-fleet';

const model = process.env.OPENAI_MODEL;
if (!model) {
  console.error('Set OPENAI_MODEL (and OPENAI_BASE_URL, OPENAI_API_KEY as your endpoint needs) to run this example.');
  process.exit(1);
}
const hostModel = createOpenAICompatibleModel({
  baseUrl: process.env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
  apiKey: process.env.OPENAI_API_KEY,
  model,
});

const stateDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-agent-'));
writeFileSync(
  join(stateDir, 'mcp_servers.json'),
  JSON.stringify({
    servers: {
      everything: {
        type: 'local',
        command: ['node', 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'],
      },
    },
  }),
);

const host = createMcpHost({
  stateDir,
  persistJournal: false,
  hostModel, // answers sampling/createMessage
  elicitation: (request) => {
    // A real host shows a form or opens the URL; this one has no user to ask.
    console.log(`[${request.server} asks: ${request.message}] declined`);
    return { action: 'decline' };
  },
  roots: [{ uri: pathToFileURL(process.cwd()).href, name: 'current directory' }],
});

try {
  await host.start();
  await host.settled();
  const prompt = process.argv[2] ?? "Use the echo tool to echo 'hello fleet', then tell me what it returned.";
  const turn = await runAgentTurn(hostModel, [{ role: 'user', content: prompt }], host, {
    maxRounds: 5,
    onToolCall: (event) => {
      if (event.type === 'call') console.log(`→ ${event.call.name} ${event.call.arguments}`);
      if (event.type === 'result') console.log(`← ${event.call.name}${event.result.details.is_error ? ' (error)' : ''}`);
    },
  });
  console.log(turn.stop === 'answered' ? turn.text : `(stopped after ${turn.rounds} rounds without an answer)`);
} finally {
  await host.shutdown();
}
