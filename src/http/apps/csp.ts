/**
 * The Content-Security-Policy of an app's frame, built from what its
 * resource declares (`_meta.ui.csp`) and never looser: nothing by default,
 * inline script and style (an app is one HTML document, as every MCP Apps
 * host allows), and each other fetch limited to the origins declared for it.
 */
import type { AppCsp } from '../../apps/index.js';

/**
 * An origin as a CSP source: `https://host[:port]`, `http://host:port`, a
 * `*.` wildcard for subdomains, or `wss:`/`ws:` equivalents. No path, no
 * quotes, no keyword, no bare scheme or `*`: a declared value may only name
 * origins, never widen a directive.
 */
const SOURCE = /^(https?|wss?):\/\/(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*(:\d{1,5})?$/;

export interface FrameCspOptions {
  /** The page that embeds the frame: the only allowed ancestor. */
  pageOrigin: string;
  /** The worker's own origins (page and sandbox): never reachable from an app, whatever it declares. */
  ownOrigins: readonly string[];
  /** Where the browser reports a violation (a path of the sandbox origin). */
  reportUri: string;
}

/** The declared sources of one directive that are kept, and the ones dropped with why. */
export interface Sources {
  kept: string[];
  dropped: string[];
}

/** Keeps the declared values that are plain origins other than the worker's own. */
export function declaredSources(values: readonly string[], ownOrigins: readonly string[]): Sources {
  const own = new Set(ownOrigins.map((origin) => origin.toLowerCase()));
  const kept: string[] = [];
  const dropped: string[] = [];
  for (const raw of values) {
    const value = raw.trim().toLowerCase().replace(/\/$/, '');
    if (SOURCE.test(value) && !own.has(value) && !kept.includes(value)) kept.push(value);
    else if (!kept.includes(value)) dropped.push(raw);
  }
  return { kept, dropped };
}

export interface FrameCsp {
  /** The header value. */
  policy: string;
  /** Declared values that were not origins (or were the worker's own): left out, and shown to the user. */
  dropped: string[];
}

/** The frame's policy for the declared `csp`. */
export function frameCsp(csp: AppCsp, options: FrameCspOptions): FrameCsp {
  const connect = declaredSources(csp.connectDomains, options.ownOrigins);
  const resource = declaredSources(csp.resourceDomains, options.ownOrigins);
  const frame = declaredSources(csp.frameDomains, options.ownOrigins);
  const base = declaredSources(csp.baseUriDomains, options.ownOrigins);
  const list = (sources: string[], ...always: string[]) => {
    const all = [...always, ...sources];
    return all.length === 0 ? "'none'" : all.join(' ');
  };
  const directives = [
    "default-src 'none'",
    // blob: and data: scripts and workers are code the app made itself, as inline script is: they reach no origin.
    `script-src ${list(resource.kept, "'unsafe-inline'", 'blob:', 'data:')}`,
    `worker-src ${list(resource.kept, 'blob:', 'data:')}`,
    `style-src ${list(resource.kept, "'unsafe-inline'")}`,
    `img-src ${list(resource.kept, 'data:', 'blob:')}`,
    `font-src ${list(resource.kept, 'data:')}`,
    `media-src ${list(resource.kept, 'data:', 'blob:')}`,
    `connect-src ${list(connect.kept)}`,
    `frame-src ${list(frame.kept)}`,
    `base-uri ${list(base.kept)}`,
    "object-src 'none'",
    // Forms may run their script (sandbox allow-forms) but never send anything anywhere.
    "form-action 'none'",
    `frame-ancestors ${options.pageOrigin}`,
    `report-uri ${options.reportUri}`,
  ];
  return {
    policy: directives.join('; '),
    dropped: [...connect.dropped, ...resource.dropped, ...frame.dropped, ...base.dropped],
  };
}

/**
 * The frame's `sandbox`: scripts and form events, nothing else. Never
 * `allow-same-origin` (the frame keeps an opaque origin: no cookie, no
 * storage, no reach into the page), never `allow-top-navigation`,
 * `allow-popups` or `allow-modals`: a link the app wants opened goes through
 * the bridge (`ui/open-link`).
 */
export const FRAME_SANDBOX = 'allow-scripts allow-forms';
