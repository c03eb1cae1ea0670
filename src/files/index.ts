/**
 * Files under the state dir that hold secrets: written atomically and
 * owner-only, one write after another; and the folders they go in.
 */
// The public surface: what the rest of src/ uses of this domain.
export { makeDirs } from './make-dirs.js';
export { writeOwnerOnly } from './owner-only-file.js';
export { createSerialQueue } from './serial-queue.js';
