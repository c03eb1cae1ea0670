/**
 * The slash-command registry of every ready server's prompts: `/server:prompt`.
 * Each server's entries are replaced whole when it becomes ready or its
 * prompts change (`notifications/prompts/list_changed`) and dropped when it
 * leaves `ready`. Rendering goes through the server's live connection.
 */
import type { Client, Prompt, PromptMessage } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { redact } from '../../config/masking.js';
import { FleetError } from '../../errors.js';
import { ATTR } from '../../telemetry/attributes.js';
import { observeRequest } from '../../telemetry/requests.js';

/** One prompt as the agent host offers it. */
export interface PromptEntry {
  /** `/server:prompt`. */
  command: string;
  server: string;
  /** The prompt's name on its server. */
  name: string;
  title?: string;
  description?: string;
  arguments: Array<{ name: string; description?: string; required?: boolean }>;
}

/** A prompt filled in with arguments: the messages to put into a conversation. */
export interface RenderedPrompt {
  command: string;
  server: string;
  name: string;
  description?: string;
  messages: PromptMessage[];
}

/** No ready server offers a prompt by that command. */
export class PromptNotFoundError extends Error {
  override readonly name = 'PromptNotFoundError';
  constructor(readonly command: string) {
    super(`no prompt "${command}" (expected "server:prompt" of a ready server)`);
  }
}

/** Where a server's prompts are rendered. */
export interface PromptSource {
  client: Client;
  /** Bound on one `prompts/get`, in ms. */
  timeoutMs: number;
  /** Secret values of the server's config, scrubbed from error messages. */
  secrets: readonly string[];
}

export interface PromptRegistry {
  /** Replaces `server`'s prompts; `owner` (its actor) is the only one that may remove them. */
  set(server: string, owner: object, prompts: readonly Prompt[], source: PromptSource): void;
  /** Drops `server`'s prompts if `owner` still holds them (a successor's stay). */
  remove(server: string, owner: object): void;
  /** Every prompt of every ready server, servers in order of arrival. */
  list(): PromptEntry[];
  /**
   * Renders `command` (`server:prompt`, with or without the leading `/`).
   * Throws {@link PromptNotFoundError}, a `ZodError` naming a missing or
   * unknown argument (`arguments.city`), or a `FleetError` when the server fails.
   */
  render(command: string, args?: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<RenderedPrompt>;
}

interface ServerPrompts {
  owner: object;
  entries: Map<string, PromptEntry>;
  source: PromptSource;
}

export interface PromptRegistryOptions {
  /**
   * Resolves once a ready server's listings under way are done: a render that
   * finds no such prompt waits for it once, as a server that just became ready
   * lists its prompts in the background.
   */
  listed?(server: string): Promise<void>;
}

export function createPromptRegistry(options: PromptRegistryOptions = {}): PromptRegistry {
  const servers = new Map<string, ServerPrompts>();

  function lookup(command: string): { server: string; entry: PromptEntry | undefined; source: PromptSource | undefined } {
    const bare = command.startsWith('/') ? command.slice(1) : command;
    const split = bare.indexOf(':');
    // Server names never hold ':', prompt names may.
    const server = split < 0 ? '' : bare.slice(0, split);
    const found = split < 0 ? undefined : servers.get(server);
    return { server, entry: found?.entries.get(bare.slice(split + 1)), source: found?.source };
  }

  async function find(command: string): Promise<{ entry: PromptEntry; source: PromptSource }> {
    let found = lookup(command);
    if ((found.entry === undefined || found.source === undefined) && found.server !== '' && options.listed !== undefined) {
      await options.listed(found.server);
      found = lookup(command);
    }
    const { entry, source } = found;
    if (entry === undefined || source === undefined) throw new PromptNotFoundError(command);
    return { entry, source };
  }

  return {
    set(server, owner, prompts, source) {
      const entries = new Map(prompts.map((prompt) => [prompt.name, toEntry(server, prompt)]));
      servers.set(server, { owner, entries, source });
    },
    remove(server, owner) {
      if (servers.get(server)?.owner === owner) servers.delete(server);
    },
    list: () => [...servers.values()].flatMap((prompts) => [...prompts.entries.values()]),
    async render(command, args = {}, options = {}) {
      const { entry, source } = await find(command);
      const { arguments: values } = argumentsSchema(entry).parse({ arguments: args });
      let result;
      try {
        // Its arguments are not recorded: only the prompt's name goes into telemetry.
        const telemetry = { target: entry.name, attributes: { [ATTR.promptName]: entry.name }, signal: options.signal };
        result = await observeRequest(source.client, 'prompts/get', telemetry, () =>
          source.client.getPrompt(
            // zod leaves absent optional arguments out: every value present is a string.
            { name: entry.name, arguments: values as Record<string, string> },
            { signal: options.signal, timeout: source.timeoutMs },
          ),
        );
      } catch (error) {
        // Cancelled by the caller: theirs to know as such, not the server's failure.
        if (options.signal?.aborted === true) throw options.signal.reason;
        const why = redact((error as Error).message, source.secrets);
        throw new FleetError('protocol', `prompt "${entry.command}" failed: ${why}`);
      }
      return {
        command: entry.command,
        server: entry.server,
        name: entry.name,
        ...(result.description === undefined ? {} : { description: result.description }),
        messages: result.messages,
      };
    },
  };
}

function toEntry(server: string, prompt: Prompt): PromptEntry {
  const entry: PromptEntry = {
    command: `/${server}:${prompt.name}`,
    server,
    name: prompt.name,
    arguments: (prompt.arguments ?? []).map((argument) => ({
      name: argument.name,
      ...(argument.description === undefined ? {} : { description: argument.description }),
      ...(argument.required === undefined ? {} : { required: argument.required }),
    })),
  };
  if (prompt.title !== undefined) entry.title = prompt.title;
  if (prompt.description !== undefined) entry.description = prompt.description;
  return entry;
}

/** MCP prompt arguments are strings; the declared required ones must be there, and no others. */
function argumentsSchema(entry: PromptEntry) {
  const shape = Object.fromEntries(
    entry.arguments.map((argument) => [argument.name, argument.required ? z.string() : z.string().optional()]),
  );
  return z.object({ arguments: z.strictObject(shape) });
}
