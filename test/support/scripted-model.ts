// A real OpenAI-compatible chat-completions server on a loopback port that
// answers from a script, one step per request, and records every request.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body. */
  body: any;
}

/** One scripted answer: an HTTP status and JSON body, raw text, or no answer until the client gives up. */
export type Step =
  | { status?: number; json: unknown }
  | { status?: number; text: string }
  | { hang: true }
  | ((request: RecordedRequest) => Step);

export interface ScriptedModel {
  /** `http://127.0.0.1:<port>/v1` */
  baseUrl: string;
  requests: RecordedRequest[];
  /** Resolves when a request the server was holding (`hang`) is abandoned by its client. */
  abandoned: Promise<void>;
  close(): Promise<void>;
}

/** A chat-completions answer with text. */
export function textStep(content: string, finishReason = 'stop'): Step {
  return { json: { id: 'c', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: finishReason }] } };
}

/** A chat-completions answer that calls tools; `args` objects are sent as JSON text, strings as they are. */
export function toolCallsStep(calls: Array<{ id: string; name: string; args: Record<string, unknown> | string }>): Step {
  const toolCalls = calls.map((call) => ({
    id: call.id,
    type: 'function',
    function: { name: call.name, arguments: typeof call.args === 'string' ? call.args : JSON.stringify(call.args) },
  }));
  return {
    json: {
      id: 'c',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: toolCalls }, finish_reason: 'tool_calls' }],
    },
  };
}

export async function startScriptedModel(script: Step[]): Promise<ScriptedModel> {
  const requests: RecordedRequest[] = [];
  let markAbandoned: () => void = () => {};
  const abandoned = new Promise<void>((resolve) => (markAbandoned = resolve));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const recorded: RecordedRequest = { path: req.url ?? '', headers: req.headers, body: raw === '' ? null : JSON.parse(raw) };
      requests.push(recorded);
      let step: Step | undefined = script.shift();
      while (typeof step === 'function') step = step(recorded);
      if (step === undefined) step = { status: 500, json: { error: { message: 'the test script has no more answers' } } };
      if ('hang' in step) {
        res.on('close', () => markAbandoned());
        return;
      }
      if ('json' in step) {
        res.writeHead(step.status ?? 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(step.json));
      } else {
        res.writeHead(step.status ?? 200, { 'content-type': 'text/plain' });
        res.end(step.text);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    abandoned,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
