/**
 * Files under the state dir that hold secrets: written atomically and
 * owner-only, one write after another, under a lock other processes honour;
 * the folders they go in; and whether the process that holds one is alive.
 */
// The public surface: what the rest of src/ uses of this domain.
export { makeDirs } from './make-dirs.js';
export { writeOwnerOnly } from './owner-only-file.js';
export { createSerialQueue } from './serial-queue.js';
export { withLockFile } from './lock-file.js';
export { processAlive } from './process-alive.js';
