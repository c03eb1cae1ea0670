import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import type { InstallInput } from './inputs.js';

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

/**
 * Asks for one install input until it has a value; a secret is typed without
 * echo and never printed back. The entry's default is offered and taken on an
 * empty answer: offered, not assumed, since a required input's default is
 * often only an example (filesystem's `/Users/username/Desktop`).
 */
export async function askInput(input: InstallInput, options: Omit<PromptOptions, 'secret'> = {}): Promise<string> {
  const about = [input.description, input.choices ? `one of ${input.choices.join(', ')}` : undefined].filter(Boolean).join('; ');
  const offered = input.default !== undefined && input.default !== '' ? input.default : undefined;
  const question = `${input.kind} ${input.name}${about ? ` (${about})` : ''}${input.secret ? ' [secret, not shown]' : ''}${offered !== undefined ? ` [Enter for ${offered}]` : ''}: `;
  for (;;) {
    const answer = (await ask(question, { ...options, secret: input.secret })).trim() || offered;
    if (answer !== undefined && answer !== '') return answer;
  }
}
