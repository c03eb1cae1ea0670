/**
 * The stdio handshake: spawn the server's command with its environment,
 * initialize, list every tool. A failure stops the child and says why in the
 * server's own terms: it could not start, it exited (with its stderr), its
 * stdout was not MCP, or it did not answer in time.
 */
import { redact, secretValues } from '../config/masking.js';
import type { LocalServerConfig } from '../config/index.js';
import { FleetError } from '../errors.js';
import { AbortError } from './call-limiter.js';
import { ChildTransport, describeExit, describeSpawnError, type ChildSpec } from './child-transport.js';
import type { ConnectOptions, Handshake, ServerConnection } from './connection.js';
import { settle, type ConnectBound } from './deadlines.js';
import { brokenStdout, connectFailure, STDERR_FLUSH_MS, withTail } from './failures.js';
import { openConnection } from './open-connection.js';
import { ProbeEndedError, probeEndedConnection } from './era-negotiation.js';
import { createStderrTail } from './stderr-tail.js';
import { watchTransport } from './transport-proxy.js';
import { listAllTools, type HandshakeProgress } from './tool-listing.js';
import { observeHandshake, observeToolListing } from '../telemetry/connects.js';

/** Spawns and initializes a stdio server and lists its tools, within `bound`. */
export async function connectLocal(
  name: string,
  config: LocalServerConfig,
  bound: ConnectBound,
  handshake: Handshake,
  options: ConnectOptions,
): Promise<ServerConnection> {
  const inherited = inheritedEnv(config.inherit_env);
  // Inherited values may be credentials too (an API key in the worker's environment).
  const secrets = secretValues(config).concat(Object.values(inherited), options.secrets ?? []);
  const tail = createStderrTail(secrets);
  const spec: ChildSpec = { command: config.command, env: { ...inherited, ...config.env }, cwd: config.cwd };
  // The tail's own method, not a closure made here: the child's stderr keeps its listener for the
  // connection's life, and a closure of this scope would keep the connect's bound and signals with it.
  const child = new ChildTransport(spec, tail.append);
  const client = handshake.newClient();
  const progress: HandshakeProgress = { phase: 'initialize' };
  try {
    await observeHandshake(name, config, () => client, () =>
      client.connect(watchTransport(child), { signal: bound.signal, timeout: bound.timeout, prior: handshake.prior }),
    );
    const listing = await observeToolListing(name, config, client, () => listAllTools(client, bound, progress));
    return openConnection(name, config, client, listing, options, { child, stderrTail: tail.read });
  } catch (err) {
    throw await connectLocalFailure(err, name, config, bound, options, { child, spec, tail, secrets, progress });
  }
}

/** What a failed connect left behind: its child, what it spawned, its stderr, how far it got. */
interface FailedConnect {
  child: ChildTransport;
  spec: ChildSpec;
  tail: { read(): string };
  secrets: readonly string[];
  progress: HandshakeProgress;
}

/**
 * Stops the child of a failed connect and says why it failed in the server's
 * own terms. Apart from the connect: a start that succeeds runs none of it.
 */
async function connectLocalFailure(
  err: unknown,
  name: string,
  config: LocalServerConfig,
  bound: ConnectBound,
  options: ConnectOptions,
  { child, spec, tail, secrets, progress }: FailedConnect,
): Promise<Error> {
  const exitedAlone = child.exitedOnItsOwn ? child.exitInfo : undefined;
  await child.close();
  if (options.signal?.aborted) return new AbortError(`connect to server "${name}" was aborted`);
  if (child.spawnError !== undefined) {
    return new FleetError('spawn_failed', redact(describeSpawnError(child.spawnError, spec), secrets), { cause: err });
  }
  if (exitedAlone !== undefined) {
    await settle(child.stderrEnded, STDERR_FLUSH_MS);
    const early = progress.phase === 'initialize';
    const during = early ? 'before initialize completed' : 'during tools/list';
    const message = `process ${describeExit(exitedAlone)} ${during}${withTail(tail.read())}`;
    // It exited on the era probe (with a code, not killed): maybe a legacy server that exits
    // on any request before initialize; the caller may spawn it once more as one.
    if (probeEndedConnection(err) && exitedAlone.signal === null) return new ProbeEndedError(message);
    return new FleetError(early ? 'spawn_failed' : 'transport_closed', message);
  }
  const broken = brokenStdout(child, progress.phase, bound.timedOut() ? config.timeout_seconds : null);
  if (broken !== null) return new FleetError('protocol', redact(broken, secrets));
  return connectFailure(err, config, bound, progress, null, options.secrets);
}

/** The worker's values of the named variables; a name the worker does not have is left out. */
function inheritedEnv(names: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  names.forEach((name) => {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  });
  return env;
}
