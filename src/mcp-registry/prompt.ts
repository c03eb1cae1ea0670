import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';

export interface PromptOptions {
  /** Typed characters are not echoed (isSecret inputs). */
  secret?: boolean;
  input?: NodeJS.ReadableStream;
  /** Where the question goes; default stderr, so stdout stays the command's output. */
  output?: NodeJS.WritableStream;
}

/**
 * Asks one question on the terminal and resolves with the line typed. A
 * secret answer is read through a muted output: readline's echo of each
 * character goes nowhere, and the answer is never written back.
 */
export function ask(question: string, { secret = false, input = process.stdin, output = process.stderr }: PromptOptions = {}): Promise<string> {
  let muted = false;
  const sink = new Writable({
    write(chunk, encoding, done) {
      if (!muted) output.write(chunk, encoding);
      done();
    },
  });
  const rl = createInterface({ input, output: sink, terminal: true });
  return new Promise((resolve) => {
    rl.question(question, (answer) => {
      rl.close();
      if (secret) output.write('\n');
      resolve(answer);
    });
    // The question itself is shown; from here on, with a secret, nothing typed is.
    muted = secret;
  });
}
