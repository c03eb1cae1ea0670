import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

/**
 * Calls `onChange` (debounced) whenever `file` may have changed. The folder is
 * watched, not the file: a save renames a new file over the old one, which
 * would silently end a watch on the old inode. Returns the stop function.
 */
export function watchFile(file: string, onChange: () => void, debounceMs = 100): () => void {
  const name = basename(file);
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(file), { persistent: false }, (_event, changed) => {
      if (changed !== null && changed !== name) return;
      clearTimeout(timer);
      timer = setTimeout(onChange, debounceMs);
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
