/**
 * A tool's MCP Apps metadata as listed (`_meta.ui`, or the older flat
 * `_meta["ui/resourceUri"]`): the UI resource it names and who may call it.
 * A tool whose visibility leaves out `"model"` is app-only: never offered to
 * a model, callable only by its own server's app (through an app bridge).
 */
import { z } from 'zod';
import { getToolUiResourceUri } from '@modelcontextprotocol/ext-apps/app-bridge';

export const ToolVisibility = z.enum(['model', 'app']);
export type ToolVisibility = z.infer<typeof ToolVisibility>;

/** What the journal and the catalog keep of a tool's `_meta.ui`. */
export const ToolUiRef = z.object({
  /** The `ui://` resource the tool renders in; null for a tool that only limits its visibility. */
  resource_uri: z.string().nullable(),
  /** Who may call it; `["model", "app"]` when the server names none. */
  visibility: z.array(ToolVisibility),
});
export type ToolUiRef = z.infer<typeof ToolUiRef>;

/** The default visibility of a tool with a UI: both. */
export const DEFAULT_VISIBILITY: readonly ToolVisibility[] = ['model', 'app'];

/** The MCP Apps extension mcp-fleet declares in its client capabilities. */
export const UI_EXTENSION = 'io.modelcontextprotocol/ui';
/** The MIME type of an app's HTML resource. */
export const APP_MIME_TYPE = 'text/html;profile=mcp-app';

interface ListedTool {
  _meta?: Record<string, unknown> | undefined;
}

/** A tool's UI metadata, or undefined when its `_meta` names no UI resource (of any scheme) and no visibility. Never throws. */
export function toolUiRef(tool: ListedTool): ToolUiRef | undefined {
  const meta = tool._meta;
  if (meta === undefined || meta === null || typeof meta !== 'object') return undefined;
  let resourceUri: string | undefined;
  try {
    resourceUri = getToolUiResourceUri(tool);
  } catch {
    // A URI that is not `ui://`: no UI to render, whatever else the tool says.
    resourceUri = undefined;
  }
  const ui = meta.ui;
  const fields = ui !== null && typeof ui === 'object' ? (ui as { resourceUri?: unknown; visibility?: unknown }) : {};
  const listed = fields.visibility;
  // A URI that is not one to render still makes UI metadata: an app-less tool with a visibility.
  const namesResource = fields.resourceUri !== undefined || meta['ui/resourceUri'] !== undefined;
  if (resourceUri === undefined && listed === undefined && !namesResource) return undefined;
  const visibility = Array.isArray(listed)
    ? [...new Set(listed.filter((entry): entry is ToolVisibility => entry === 'model' || entry === 'app'))]
    : [...DEFAULT_VISIBILITY];
  return { resource_uri: resourceUri ?? null, visibility };
}

/** Whether a model may see and call a tool with this UI metadata (none: yes). */
export function modelVisible(ui: { visibility: readonly string[] } | undefined | null): boolean {
  return ui === undefined || ui === null || ui.visibility.includes('model');
}

/** A tool's MCP Apps metadata as the catalog and the API show it (`ui` null: none). */
export function catalogUi(tool: {
  ui?: { resourceUri: string | null; visibility: ToolVisibility[] } | undefined;
}): { ui: ToolUiRef | null; model_visible: boolean } {
  const ui = tool.ui === undefined ? null : { resource_uri: tool.ui.resourceUri, visibility: tool.ui.visibility };
  return { ui, model_visible: modelVisible(tool.ui) };
}
