/**
 * Which approval applies to a tool (`tools.approval`): an entry for
 * its original name, else `"*"`, else — only with `approval_from_annotations`
 * — its annotations (`readOnlyHint: true` → auto, `destructiveHint: true` →
 * ask), else `auto`. Pure: the tool mount computes it once per agent tool.
 */
import type { ApprovalSetting } from '../config/index.js';

/** The config fields the policy reads (a `ServerConfig` fits; so does a masked one, or one without `tools`). */
export interface ApprovalConfig {
  tools?: { approval?: Readonly<Record<string, ApprovalSetting>> | undefined } | undefined;
  approval_from_annotations?: boolean | undefined;
}

/** The MCP tool annotations the policy reads. */
export interface ApprovalAnnotations {
  readOnlyHint?: unknown;
  destructiveHint?: unknown;
}

export function approvalPolicy(config: ApprovalConfig, original: string, annotations?: ApprovalAnnotations): ApprovalSetting {
  const explicit = configuredApproval(config.tools?.approval, original);
  if (explicit !== undefined) return explicit;
  if (config.approval_from_annotations === true && annotations !== undefined) {
    // A tool claiming both is taken at its more careful word.
    if (annotations.destructiveHint === true) return 'ask';
    if (annotations.readOnlyHint === true) return 'auto';
  }
  return 'auto';
}

/** The entry of `tools.approval` for a tool: its own, else `"*"`, else none. */
export function configuredApproval(
  approval: Readonly<Record<string, ApprovalSetting>> | undefined,
  original: string,
): ApprovalSetting | undefined {
  if (approval === undefined) return undefined;
  return Object.hasOwn(approval, original) ? approval[original] : approval['*'];
}

/** Whether a tool is never called nor offered: only an explicit entry (or `"*"`) denies, never an annotation. */
export function isDenied(approval: Readonly<Record<string, ApprovalSetting>> | undefined, original: string): boolean {
  return configuredApproval(approval, original) === 'deny';
}

/** The answer to a call of a tool its policy denies, wherever the call is refused. */
export function deniedMessage(tool: string, server: string): string {
  return `tool "${tool}" is denied by policy (tools.approval of server "${server}"): the call was not made`;
}
