/**
 * How a tool becomes searchable text, and how any text becomes index terms:
 * one tokenizer and one term normalizer for tools and queries alike, so a
 * query word and a tool word meet on the same stem.
 */
import { stemmer } from 'stemmer';
import type { SearchableTool } from './tool-index.js';

/** The searchable text of one tool, by the field a hit reports as matched. */
export interface ToolFields {
  /** The agent-facing name split into words: `files__readTextFile` → `files read Text File`. */
  name: string;
  title: string;
  description: string;
  /** Property names (split into words), titles, descriptions and string enum values of the input schema, nested ones too. */
  parameters: string;
}

/** Bounds of the schema walk: a hostile or generated schema must not make indexing slow. */
const MAX_SCHEMA_DEPTH = 4;
const MAX_SCHEMA_PROPERTIES = 64;
const MAX_PARAMETER_TEXT = 4000;

// English function words (Lucene's and NLTK's core list, shortened): they
// match almost every description and would only add noise to a ranking.
const STOPWORDS = new Set(
  (
    'a about above after again all also am an and any are as at be been before being below between both but by can could did do does doing ' +
    'down during each few for from further had has have having he her here hers him his how i if in into is it its itself just me more most ' +
    'my myself no nor not now of off on once only or other our ours out over own same she should so some such than that the their them then ' +
    'there these they this those through to too under until up very was we were what when where which while who whom why will with would you ' +
    'your yours'
  ).split(' '),
);

/**
 * Splits text into words: on anything but letters and digits, and inside
 * identifiers on case changes (`getTinyImage`, `HTTPServer`), keeping
 * all-caps words whole (`URLs`, `JSON`).
 */
export function tokenize(text: string): string[] {
  const words: string[] = [];
  for (const token of text.split(/[^\p{L}\p{N}]+/u)) {
    if (token === '') continue;
    if (/^(?:\p{Lu}+s?|\p{Ll}+|\p{N}+)$/u.test(token)) words.push(token);
    else words.push(...(token.match(/\p{Lu}+(?=\p{Lu}\p{Ll})|\p{Lu}?\p{Ll}+|\p{Lu}+|\p{N}+/gu) ?? []));
  }
  return words;
}

/** The index term of a word (lowercased, Porter-stemmed), or null for words that carry no meaning on their own. */
export function toTerm(word: string): string | null {
  const lower = word.toLowerCase();
  if (lower.length < 2 || STOPWORDS.has(lower)) return null;
  return stemmer(lower);
}

export function toolFields(tool: SearchableTool): ToolFields {
  const state: WalkState = { text: [], properties: 0, chars: 0 };
  walkSchema(tool.parameters, 0, state);
  return {
    name: tokenize(tool.name).join(' '),
    title: tool.title ?? '',
    description: tool.description,
    parameters: state.text.join(' '),
  };
}

/** The distinct index terms of a text. */
export function termsOf(text: string): Set<string> {
  const terms = new Set<string>();
  for (const word of tokenize(text)) {
    const term = toTerm(word);
    if (term !== null) terms.add(term);
  }
  return terms;
}

interface WalkState {
  text: string[];
  properties: number;
  chars: number;
}

function walkSchema(schema: unknown, depth: number, state: WalkState): void {
  if (depth > MAX_SCHEMA_DEPTH || !isObject(schema)) return;
  if (isObject(schema.properties)) {
    for (const [name, property] of Object.entries(schema.properties)) {
      if (state.properties >= MAX_SCHEMA_PROPERTIES) return;
      state.properties += 1;
      state.text.push(tokenize(name).join(' '));
      if (isObject(property)) {
        for (const value of [property.title, property.description]) addText(state, value);
        if (Array.isArray(property.enum)) for (const value of property.enum) addText(state, value);
      }
      walkSchema(property, depth + 1, state);
    }
  }
  // Where nested properties hide: array items and schema combinators.
  walkSchema(schema.items, depth + 1, state);
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const variants = schema[key];
    if (Array.isArray(variants)) for (const variant of variants) walkSchema(variant, depth + 1, state);
  }
}

function addText(state: WalkState, value: unknown): void {
  if (typeof value !== 'string' || state.chars >= MAX_PARAMETER_TEXT) return;
  const text = value.slice(0, MAX_PARAMETER_TEXT - state.chars);
  state.chars += text.length;
  state.text.push(text);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
