import type { Response, Router } from 'express';
import { loadExpress } from '../express.js';
import { z } from 'zod';
import type { McpHost } from '../../host.js';
import { HttpError } from '../errors.js';
import { userOf } from '../caller.js';
import type { PendingApproval } from '../../approvals/index.js';

/** `POST /api/mcp/approvals/:id`: `{"decision": "allow" | "deny"}`. */
const DecisionBody = z.strictObject({ decision: z.enum(['allow', 'deny']) });

/**
 * Calls of `ask` tools waiting for a decision, and the decision. Who decided
 * is journaled from how the request was let in, never from what it claims:
 * the page's session cookie is `page`, a bearer token is `api`.
 */
export function approvalRoutes(host: McpHost): Router {
  const router = loadExpress().Router();

  /** The calls the caller may see and decide: a user's own, every one for the admin. */
  const approvalsOf = (res: Response): PendingApproval[] => {
    const user = userOf(res);
    return user === undefined ? host.approvals() : host.approvals().filter((approval) => approval.principal === user.id);
  };

  router.get('/', function listApprovals(_req, res) {
    res.json({ approvals: approvalsOf(res) });
  });

  router.post('/:id', function decideApproval(req, res) {
    const parsed = DecisionBody.safeParse(req.body ?? {});
    if (!parsed.success) {
      throw new HttpError(400, 'invalid_request', 'decision: must be "allow" or "deny"', 'decision');
    }
    const by = res.locals.viaSessionCookie === true ? 'page' : 'api';
    const mine = approvalsOf(res).some((approval) => approval.id === req.params.id);
    const user = userOf(res);
    if (!mine || !host.decideApproval(req.params.id, parsed.data.decision, by, user === undefined ? {} : { principal: user })) {
      throw new HttpError(404, 'not_found', `no call waits for approval "${req.params.id}" (unknown, decided or timed out)`);
    }
    res.json({ id: req.params.id, decision: parsed.data.decision, by });
  });

  return router;
}
