// The journal as the file event store keeps it: every stored line of
// `<state_dir>/journal/segments/*.jsonl`, oldest first.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export function storedJournalLines(stateDir: string): string[] {
  const segments = join(stateDir, 'journal', 'segments');
  if (!existsSync(segments)) return [];
  return readdirSync(segments)
    .sort()
    .flatMap((file) => readFileSync(join(segments, file), 'utf8').split('\n'))
    .filter((line) => line !== '');
}
