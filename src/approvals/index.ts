/**
 * Approvals of tool calls: the policy (`tools.approval`, annotations),
 * masking of arguments shown to whoever decides, and the pending approvals.
 */
// The public surface: what the rest of src/ uses of this domain.
export { createApprovals, type ApprovalDecision, type Approvals, type ApproveCallback, type PendingApproval } from './approvals.js';
export { approvalPolicy, deniedMessage, isDenied } from './policy.js';
