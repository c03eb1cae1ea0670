// The slice of oidc-provider 9 the OAuth tests use (it ships no types).
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface Stored {
    grantId?: string;
    destroy(): Promise<void>;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: 'grant.success', listener: (ctx: { oidc: { params?: Record<string, unknown> } }) => void): this;
    on(event: 'registration_create.success', listener: () => void): this;
    use(
      middleware: (ctx: { oidc?: { route?: string; params?: Record<string, unknown> } }, next: () => Promise<void>) => Promise<void>,
    ): this;
    RefreshToken: { find(value: string): Promise<Stored | undefined> };
    Grant: { find(id: string): Promise<Stored | undefined> };
  }
}
