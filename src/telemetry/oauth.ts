/** `mcp_fleet.oauth.refreshes`: one per refresh-token grant sent, by server and outcome. */
import { ATTR } from './attributes.js';
import { instruments } from './instruments.js';

/** `refreshed`: new tokens; `refused`: the authorization server rejected the refresh token (consent needed again); `failed`: any other error. */
export type RefreshOutcome = 'refreshed' | 'refused' | 'failed';

export function countRefresh(server: string, outcome: RefreshOutcome): void {
  instruments()?.oauthRefreshes.add(1, { [ATTR.server]: server, [ATTR.outcome]: outcome });
}
