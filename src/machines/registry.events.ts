import type { ServerConfig } from '../config/index.js';
import type { ServerMachineEvent } from './server.events.js';

/** Events the registry actor accepts. */
export type RegistryEvent =
  /** Publish a server added by management and connect it now, outside the startup queue (replaces a deleted one's actor). */
  | { type: 'server.install'; name: string; config: ServerConfig }
  /** Publish a server added to the file by hand: during startup it joins the end of the queue. */
  | { type: 'server.enqueue'; name: string; config: ServerConfig }
  /**
   * A hand edit of a published server: `event` is what applies it to the actor. During startup
   * an edit that would connect it sends it back to the end of the queue instead.
   */
  | { type: 'server.edit'; name: string; event: ServerMachineEvent }
  /** Stop and forget a server actor. */
  | { type: 'server.uninstall'; name: string }
  /** Cancel and drain startup, stop every published actor. */
  | { type: 'registry.shutdown' }
  /** Internal: the connecting server whose actor id is `actor` left `pending` (or hit its bound). */
  | { type: 'startup.settled'; actor: string }
  /** Internal: what re-reading the persisted entry of the head of the queue found. */
  | { type: 'reread.done'; reread: Reread }
  /** Internal: re-reading the persisted entry of the head of the queue failed. */
  | { type: 'reread.failed'; error: unknown };

/** What re-reading the persisted config found for the server at the head of the queue. */
export type Reread =
  | { status: 'found'; config: ServerConfig }
  | { status: 'deleted' }
  /** The file is missing its document or cannot be parsed: keep the config we queued. */
  | { status: 'unreadable' };
