/**
 * A deep copy of JSON data as JSON.parse lays it out: each object at its
 * final size, with a hidden class shared by every object of its shape. It
 * takes half the heap of a spread or `structuredClone` copy, and it undoes
 * the hash table (dictionary mode) V8 makes of an object that gained more
 * than 16 properties by computed key, as zod builds a parse's output without
 * its eval fast path (CONFIG_PARSE); frozen, such an object would also get a
 * hidden class of its own.
 */
export function compactCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
