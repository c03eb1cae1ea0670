// The load hook of untraced.mjs: each rewrite names the dist/ file, the source it expects and its replacement.
const REWRITES = [
  {
    file: '/dist/telemetry/tool-calls.js',
    from: 'return tracingOn() || instruments() !== null;',
    to: 'return false;',
  },
  {
    file: '/dist/connection/request-meta.js',
    from: 'const span = (own ?? trace.getSpan(context.active()))?.spanContext();',
    to: 'const span = own?.spanContext();',
  },
];

export async function load(url, context, next) {
  const loaded = await next(url, context);
  const rewrite = REWRITES.find(({ file }) => url.endsWith(file));
  if (rewrite === undefined) return loaded;
  const source = String(loaded.source);
  if (!source.includes(rewrite.from)) throw new Error(`untraced.mjs: ${rewrite.file} no longer has \`${rewrite.from}\`: update the rewrite`);
  return { ...loaded, source: source.replace(rewrite.from, rewrite.to) };
}
