/**
 * The host side of one app's bridge (ext-apps `AppBridge`, with no MCP client
 * of its own): every request the app makes goes through the host. Its tool
 * calls reach only its own server's tools, app-only ones included, through
 * the host's call path (approvals, telemetry, journal); its resource reads
 * only its own server. What the app asks of the user or the model
 * (`ui/message`, `ui/open-link`, `ui/update-model-context`) goes to the
 * embedder's callbacks, and without one is refused. ext-apps checks each
 * inbound message against its schema before any handler runs.
 */
import {
  AppBridge,
  type McpUiHostCapabilities,
  type McpUiHostContext,
  type McpUiMessageRequest,
  type McpUiMessageResult,
  type McpUiOpenLinkRequest,
  type McpUiOpenLinkResult,
  type McpUiSizeChangedNotification,
  type McpUiUpdateModelContextRequest,
} from '@modelcontextprotocol/ext-apps/app-bridge';
import { ProtocolError, ProtocolErrorCode, type CallToolResult, type Client, type Transport } from '@modelcontextprotocol/client';
import type { CallFunction } from '../catalog/tools/adapter.js';
import { CLIENT_INFO } from '../connection/connection.js';
import { observeRequest } from '../telemetry/requests.js';
import { ATTR } from '../telemetry/attributes.js';

export type AppMessage = McpUiMessageRequest['params'];
export type AppOpenLink = McpUiOpenLinkRequest['params'];
export type AppModelContext = McpUiUpdateModelContextRequest['params'];
export type AppSize = McpUiSizeChangedNotification['params'];

/** What the embedder decides for its app; an absent callback refuses that request. */
export interface AppBridgeOptions {
  /** `ui/message`: the app asks to add a message to the conversation. */
  onMessage?(message: AppMessage): McpUiMessageResult | Promise<McpUiMessageResult> | void | Promise<void>;
  /** `ui/open-link`: the app asks to open a URL (the embedder opens it, or answers `{isError: true}`). */
  onOpenLink?(link: AppOpenLink): McpUiOpenLinkResult | Promise<McpUiOpenLinkResult> | void | Promise<void>;
  /** `ui/update-model-context`: what the app wants the model to know on later turns. */
  onUpdateModelContext?(context: AppModelContext): void | Promise<void>;
  /** `ui/notifications/size-changed`: the app's content size, for resizing its frame. */
  onSizeChange?(size: AppSize): void;
  /** The app finished its handshake (`ui/notifications/initialized`). */
  onInitialized?(): void;
  /** Theme, display mode, locale… handed to the app at its handshake. */
  hostContext?: McpUiHostContext;
}

/** One app connected to the host. */
export interface AppSession {
  /** The tool the app belongs to (`{server}__{tool}`), and its server. */
  readonly tool: string;
  readonly server: string;
  /** Resolves once the app finished its handshake: send it the tool's input and result after. */
  readonly initialized: Promise<void>;
  /** Called with each size the app reports; may be set after the session opened. */
  onSizeChange: ((size: AppSize) => void) | undefined;
  /** `ui/notifications/tool-input`: the arguments the tool was called with. */
  sendToolInput(args: Record<string, unknown>): Promise<void>;
  /** `ui/notifications/tool-result`: the tool's result, as its server answered it. */
  sendToolResult(result: CallToolResult): Promise<void>;
  /** `ui/notifications/tool-cancelled`: the call was cancelled. */
  sendToolCancelled(reason?: string): Promise<void>;
  /** Asks the app to tear down (`ui/resource-teardown`, briefly awaited) and closes the transport. */
  close(): Promise<void>;
}

export interface OpenAppBridgeOptions {
  tool: string;
  server: string;
  /**
   * The client of the server's connection now: a shared server's live one (it may
   * reconnect while the app is open), a per_user server's session of the app's user
   * (opened again once it ended). Throws while there is none to serve the app.
   */
  client(): Client | Promise<Client>;
  /** The call of the server's tool `original` through the host's path, or undefined when it has no such tool. */
  callFor(original: string): CallFunction | undefined | Promise<CallFunction | undefined>;
  /** Whether the app may read its server's resources now (its principal may still see the server). */
  mayReadResources?(): boolean;
  /** Bound on one forwarded request, in ms (the server's `call_timeout_seconds`). */
  timeoutMs: number;
  transport: Transport;
  options: AppBridgeOptions;
}

/** How long `close()` waits for the app to acknowledge its teardown. */
const TEARDOWN_MS = 2_000;

function refused(what: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.MethodNotFound, `${what} is not available: the host did not offer it to this app`);
}

/** An error as the app's tool result, so the app can show it. */
function errorCall(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

export async function openAppBridge(open: OpenAppBridgeOptions): Promise<AppSession> {
  const { server, options } = open;
  const offered = (await open.client()).getServerCapabilities() ?? {};
  const capabilities: McpUiHostCapabilities = {
    serverTools: {},
    ...(offered.resources ? { serverResources: {} } : {}),
    ...(options.onOpenLink ? { openLinks: {} } : {}),
    ...(options.onMessage ? { message: { text: {} } } : {}),
    ...(options.onUpdateModelContext ? { updateModelContext: { text: {} } } : {}),
  };
  const bridge = new AppBridge(null, { ...CLIENT_INFO }, capabilities, {
    ...(options.hostContext === undefined ? {} : { hostContext: options.hostContext }),
  });
  const request = (signal: AbortSignal) => ({ signal, timeout: open.timeoutMs });

  bridge.oncalltool = async (params, extra) => {
    const call = await open.callFor(params.name);
    // Another server's tool, one its server does not have, or one hidden from the app's user: refused, never routed.
    if (call === undefined) return errorCall(`tool "${params.name}" is not a tool of server "${server}"`);
    try {
      return (await call(params.name, params.arguments ?? {}, { signal: extra.mcpReq.signal })) as CallToolResult;
    } catch (error) {
      return errorCall(error instanceof Error ? error.message : String(error));
    }
  };
  /** The connection of the moment, once the app is still allowed to read its server's resources. */
  const reader = async () => {
    if (open.mayReadResources?.() === false) throw new ProtocolError(ProtocolErrorCode.InvalidRequest, `the resources of server "${server}" are not available`);
    return open.client();
  };
  if (offered.resources) {
    // The connection of the moment: a server that reconnected serves the open app on its new one.
    bridge.onreadresource = async (params, extra) => {
      const now = await reader();
      return observeRequest(now, 'resources/read', { detail: { [ATTR.resourceUri]: params.uri } }, () =>
        now.readResource({ uri: params.uri }, request(extra.mcpReq.signal)),
      );
    };
    bridge.onlistresources = async (params, extra) => {
      const now = await reader();
      return observeRequest(now, 'resources/list', {}, () => now.listResources(params, request(extra.mcpReq.signal)));
    };
    bridge.onlistresourcetemplates = async (params, extra) => {
      const now = await reader();
      return observeRequest(now, 'resources/templates/list', {}, () => now.listResourceTemplates(params, request(extra.mcpReq.signal)));
    };
  }
  bridge.onmessage = async (params) => {
    if (!options.onMessage) throw refused('ui/message');
    return (await options.onMessage(params)) ?? {};
  };
  bridge.onopenlink = async (params) => {
    if (!options.onOpenLink) throw refused('ui/open-link');
    return (await options.onOpenLink(params)) ?? {};
  };
  bridge.onupdatemodelcontext = async (params) => {
    if (!options.onUpdateModelContext) throw refused('ui/update-model-context');
    await options.onUpdateModelContext(params);
    return {};
  };

  let markInitialized: () => void = () => {};
  const initialized = new Promise<void>((resolve) => (markInitialized = resolve));
  const session: AppSession = {
    tool: open.tool,
    server,
    initialized,
    onSizeChange: options.onSizeChange,
    sendToolInput: (args) => bridge.sendToolInput({ arguments: args }),
    sendToolResult: (result) => bridge.sendToolResult(result),
    sendToolCancelled: (reason) => bridge.sendToolCancelled(reason === undefined ? {} : { reason }),
    async close() {
      try {
        await bridge.teardownResource({}, { timeout: TEARDOWN_MS });
      } catch {
        // An app that does not answer is closed all the same.
      }
      await bridge.close();
    },
  };
  bridge.oninitialized = () => {
    markInitialized();
    options.onInitialized?.();
  };
  bridge.onsizechange = (size) => session.onSizeChange?.(size);
  await bridge.connect(open.transport);
  return session;
}
