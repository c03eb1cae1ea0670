import { existsSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

/** How long a config file may be missing before its absence counts (every server removed). */
const MISSING_GRACE_MS = 1_000;

/**
 * Calls `onChange` (debounced) whenever `file` may have changed. The folder is
 * watched, not the file: a save renames a new file over the old one, which
 * would silently end a watch on the old inode. Returns the stop function.
 */
export function watchFile(file: string, onChange: () => void, debounceMs = 100): () => void {
  const name = basename(file);
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  let graced = false;
  // A file gone a moment is an editor saving (move the old one away, write the new): its absence is a change
  // (every server removed) only once it stays away.
  const settle = () => {
    if (!graced && !existsSync(file)) {
      graced = true;
      timer = setTimeout(settle, MISSING_GRACE_MS);
      return;
    }
    graced = false;
    onChange();
  };
  try {
    watcher = watch(dirname(file), { persistent: false }, (_event, changed) => {
      if (changed !== null && changed !== name) return;
      clearTimeout(timer);
      graced = false;
      timer = setTimeout(settle, debounceMs);
    });
    // A folder that goes away ends the watch; there is nothing left to reload.
    watcher.on('error', () => watcher?.close());
  } catch {
    // No folder yet (nothing configured): there is nothing to watch.
  }
  return () => {
    clearTimeout(timer);
    watcher?.close();
  };
}
