// One way to wait for something a test cannot be told about.

/** Resolves once `predicate` holds, polling every 50 ms; rejects naming `what` after `timeoutMs`. */
export async function until(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
