// `node --import bench/lib/untraced.mjs …`: mcp-fleet as if it had no
// instrumentation on the call path, for the telemetry suite's A/B. With no
// OpenTelemetry SDK registered what the instrumentation costs per call is two
// checks: whether tool calls are observed (telemetry/tool-calls.js) and
// whether the caller's context holds a span to send in `_meta`
// (connection/request-meta.js). This hook loads dist/ with both answered by
// constants. It throws when the source no longer has what it replaces, so it
// never measures the instrumented code twice.
import { register } from 'node:module';

register('./untraced-hooks.mjs', import.meta.url);
