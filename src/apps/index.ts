/**
 * MCP Apps (`io.modelcontextprotocol/ui`): tools that name an HTML app. What
 * a tool's `_meta.ui` says (tool-meta), the app a tool renders in and its
 * cache (tool-ui), and the host side of an app's bridge (bridge).
 */
export {
  APP_MIME_TYPE,
  UI_EXTENSION,
  ToolUiRef,
  ToolVisibility,
  catalogUi,
  modelVisible,
  toolUiRef,
} from './tool-meta.js';
export { AppCsp, AppPermissions, ToolUi, createToolUis, readAppResource, readyConnection, type ToolUis } from './tool-ui.js';
export {
  openAppBridge,
  type AppBridgeOptions,
  type AppMessage,
  type AppModelContext,
  type AppOpenLink,
  type AppSession,
  type AppSize,
} from './bridge.js';
