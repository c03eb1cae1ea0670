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
 * A question that got no answer: its input ended (EOF, Ctrl-D on an empty
 * line, a pipe that closed) or Ctrl-C was typed. `subject` is what was being
 * asked for, when known (`arg target_dir`).
 */
export class PromptClosedError extends Error {
  override readonly name = 'PromptClosedError';

  constructor(
    readonly reason: 'closed' | 'interrupted',
    readonly subject?: string,
  ) {
    super(`no answer${subject !== undefined ? ` for ${subject}` : ''} (${reason === 'closed' ? 'stdin closed' : 'interrupted'})`);
  }
}

/**
 * Asks one question on the terminal and resolves with the line typed. A
 * secret answer is read through a muted output: readline's echo of each
 * character goes nowhere, and the answer is never written back. Rejects with
 * a {@link PromptClosedError} when the input ends or Ctrl-C is typed before
 * the answer: readline never calls back a question whose input closed, so
 * without this the caller would wait forever.
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
  return new Promise((resolve, reject) => {
    let settled = false;
    const unanswered = (reason: PromptClosedError['reason']) => {
      if (settled) return;
      settled = true;
      // Whatever comes next (the caller's error line) starts on a line of its own.
      output.write('\n');
      reject(new PromptClosedError(reason));
      rl.close();
    };
    rl.once('close', () => unanswered('closed'));
    // A listener keeps readline from closing on Ctrl-C (told as "stdin closed"): said as what it is.
    rl.on('SIGINT', () => unanswered('interrupted'));
    rl.question(question, (answer) => {
      settled = true;
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
 * often only an example (filesystem's `/Users/username/Desktop`). Rejects
 * with a {@link PromptClosedError} naming the input when no answer comes.
 */
export async function askInput(input: InstallInput, options: Omit<PromptOptions, 'secret'> = {}): Promise<string> {
  const about = [input.description, input.choices ? `one of ${input.choices.join(', ')}` : undefined].filter(Boolean).join('; ');
  const offered = input.default !== undefined && input.default !== '' ? input.default : undefined;
  const question = `${input.kind} ${input.name}${about ? ` (${about})` : ''}${input.secret ? ' [secret, not shown]' : ''}${offered !== undefined ? ` [Enter for ${offered}]` : ''}: `;
  for (;;) {
    let typed: string;
    try {
      typed = await ask(question, { ...options, secret: input.secret });
    } catch (err) {
      // Which input went unanswered: `no answer for arg target_dir (stdin closed)`.
      if (err instanceof PromptClosedError) throw new PromptClosedError(err.reason, `${input.kind} ${input.name}`);
      throw err;
    }
    const answer = typed.trim() || offered;
    if (answer !== undefined && answer !== '') return answer;
  }
}
