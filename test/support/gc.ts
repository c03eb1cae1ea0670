// Garbage collection on demand, without starting the test worker with
// --expose-gc: for tests of what must still end once nothing holds it.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Collects garbage a few times over, letting finalizers run between. */
export async function collectGarbage(): Promise<void> {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
