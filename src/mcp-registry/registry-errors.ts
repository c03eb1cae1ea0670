/** Why a registry request or an install failed; callers branch on `kind`, never on the message. */
export type RegistryErrorKind =
  /** The registry did not answer (network, DNS, timeout). */
  | 'unreachable'
  /** It answered with an error status. */
  | 'http'
  /** It answered something that is not the registry's schema. */
  | 'invalid_response'
  /** No such server or version. */
  | 'not_found'
  /** The entry offers no package or remote this client can run. */
  | 'unsupported'
  /** A required input (env var, header, argument, variable) has no value. */
  | 'missing_input'
  /** The request itself is wrong (a `--package` the entry does not offer, a bad value). */
  | 'invalid_request';

/** One line, secret-free: it names the URL and status, or the entry and what is missing. */
export class RegistryError extends Error {
  override readonly name = 'RegistryError';
  constructor(
    readonly kind: RegistryErrorKind,
    message: string,
    options: { cause?: unknown; url?: string; status?: number; input?: { kind: string; name: string } } = {},
  ) {
    super(message, { cause: options.cause });
    this.url = options.url;
    this.status = options.status;
    this.input = options.input;
  }
  /** The value given that is wrong (an unknown variable, one that breaks the URL), so callers can name its field or flag. */
  readonly input: { kind: string; name: string } | undefined;
  /** The registry URL asked, when there was one. */
  readonly url: string | undefined;
  /** The HTTP status it answered, when it answered. */
  readonly status: number | undefined;
}

/** Required inputs without a value, named so the user can give them. */
export class MissingInputsError extends RegistryError {
  constructor(readonly missing: Array<{ kind: string; name: string }>, hint: string) {
    super('missing_input', `missing required input${missing.length === 1 ? '' : 's'}: ${missing.map((m) => `${m.kind} ${m.name}`).join(', ')}${hint}`);
  }
}
