/**
 * Synonyms of computing vocabulary that WordNet 3.1 (2011) lacks or ranks as
 * a rare sense: there "folder" is a pamphlet, "directory" a phone book, and
 * "screenshot", "popup" or "repo" are missing. Each line is one group of
 * words people use interchangeably when they ask for a tool; abbreviations
 * go with their long form. Kept short on purpose: a group belongs here only
 * if it holds for tool catalogs in general, never for one benchmark query.
 */
export const DOMAIN_SYNONYMS: readonly string[] = [
  // The few verbs tool names are built from (CRUD and friends), each with the
  // everyday verbs people ask with: "show me the file" means read it.
  'read open view show display see',
  'list show enumerate browse',
  'create make new add',
  'delete remove erase forget',
  'update edit change modify alter',
  'write save store put',
  'move rename relocate',
  'search find locate lookup query',
  'get fetch retrieve obtain load',
  'run execute invoke launch',
  'start begin launch trigger',
  'stop cancel abort halt',
  'close quit exit shut',
  'send submit post',
  'copy duplicate clone',
  // Nouns.
  'folder directory dir',
  'website site webpage page',
  'url uri link',
  'screenshot screengrab screencap picture image',
  'popup dialog modal alert',
  'dropdown select combobox',
  'repo repository',
  'config configuration settings',
  'env environment',
  'info information metadata details',
  'docs documentation',
  'db database',
  'js javascript',
  'zip compress gzip archive',
  'app application',
];
