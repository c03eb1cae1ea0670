import { z } from 'zod';
import { ServerConfigResponse } from '../config/masking.js';
import { ErrorKind } from '../errors.js';
import { ListedPrompt, ListedResource, ListedTemplate, ServerState, ToolEntry } from './events.js';
import { LastRun } from './server-view.js';

/**
 * What the projection knows of one server: everything a `ServerView` shows,
 * its tools and its latest listings. Plain JSON, so a snapshot of it folds on
 * exactly as the live one.
 */
export const ProjectedServer = z.object({
  name: z.string(),
  /** The current actor; events of replaced actors (and of the previous run's) are journaled but not projected. */
  actor: z.string(),
  config: ServerConfigResponse,
  state: ServerState,
  error: z.string().nullable(),
  error_kind: ErrorKind.nullable(),
  since: z.string(),
  tools: z.array(ToolEntry),
  /**
   * The tools of its latest registration, kept when they are unregistered
   * and into later runs (null: never registered; absent in snapshots made
   * before it was kept): what an `on_demand` server publishes while it waits.
   */
  known_tools: z.array(ToolEntry).nullable().optional(),
  /** `seq` of this server's latest registration: a later one wins a shared name. */
  registered_at: z.number().int(),
  /**
   * `seq` of the registration that gave this server its place among the
   * agent's tools: its first since it last had none (0: none now). A
   * re-registration keeps the place, as the tool registry does.
   */
  registered_since: z.number().int(),
  last_run: LastRun.nullable(),
  /**
   * How this run stands for `last_run` of the next: the latest state before
   * any `stopped` (a worker's shutdown stops every server; what it knew
   * before is what a restarted worker should answer), with its tool count.
   */
  outcome: LastRun.nullable(),
  /**
   * The latest listings of this connection; null: not listed (the server is
   * not ready, or its listing has not landed). A kind the ready server does
   * not offer is `[]`. Snapshots made before null was kept hold `[]` instead.
   */
  resources: z.array(ListedResource).nullable(),
  templates: z.array(ListedTemplate).nullable(),
  prompts: z.array(ListedPrompt).nullable(),
});
export type ProjectedServer = z.infer<typeof ProjectedServer>;
