/**
 * Text analysis for the NarrowTopK tool index: identifier splitting, a parameter summary,
 * stop words and a light English stemmer. Tools and queries go through the same `analyze`,
 * so whatever a rule does to a word it does on both sides.
 *
 * No kept library covers this: search libraries (MiniSearch, which the index used before)
 * only lowercase and split on punctuation, and none of the installed packages ships a stemmer
 * or a stop-word list, so both are written here and kept deliberately small and general
 * (English API vocabulary, nothing tuned to one tool catalogue).
 */

/** Letters and digits in any script; everything else separates words. */
const NON_WORD = /[^\p{L}\p{N}]+/u;
/** `getFilmDetails` → `get|Film|Details`, `HTTPServer` → `HTTP|Server`, `sha256` → `sha|256`. */
const CAMEL_BOUNDARY = /(?<=\p{Ll})(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})|(?<=\p{L})(?=\p{N})|(?<=\p{N})(?=\p{L})/u;
/** Combining marks left by NFKD, so `Divinópolis` and `divinopolis` meet. */
const COMBINING_MARKS = /\p{M}+/gu;
/**
 * Scripts written without spaces between words. Such a run is indexed as overlapping
 * character bigrams (the usual dictionary-free approach for Chinese and Japanese search), so
 * `读取文本文件` and `文本文件` share terms; Hangul words are space-separated and stay whole.
 */
const UNSPACED_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]+/u;
const UNSPACED_SPLIT = /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]+)/u;

/** Overlapping character bigrams of a run (a single character stays as it is). */
function bigrams(run: string): string[] {
  const chars = [...run];
  if (chars.length === 1) return chars;
  const out: string[] = [];
  for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i] + chars[i + 1]);
  return out;
}

/**
 * Splits an identifier or a run of text into lowercase words: snake_case, kebab-case,
 * dotted (`math.factorial`), camelCase/PascalCase, acronyms and letter/digit boundaries.
 * `RentalCars_3_GetCarsAvailable` → `rental cars 3 get cars available`.
 */
export function splitIdentifier(text: string): string[] {
  const out: string[] = [];
  for (const chunk of text.normalize('NFKD').replace(COMBINING_MARKS, '').split(NON_WORD)) {
    if (!chunk) continue;
    for (const piece of UNSPACED_RUN.test(chunk) ? chunk.split(UNSPACED_SPLIT) : [chunk]) {
      if (!piece) continue;
      if (UNSPACED_RUN.test(piece)) {
        out.push(...bigrams(piece));
        continue;
      }
      for (const part of piece.split(CAMEL_BOUNDARY)) {
        if (part) out.push(part.toLowerCase());
      }
    }
  }
  return out;
}

/**
 * English function words plus the politeness and request phrasing users wrap around a
 * task ("could you please tell me…"). They carry no tool meaning; BM25's IDF would only
 * damp them, and dropping them also keeps field lengths honest. Verbs that name an
 * action (get, find, list, search, create…) are deliberately NOT here.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a an the and or but nor if then else so than too very of at by for with about against between into through ' +
    'during before after above below to from up down in out on off over under again further once here there when ' +
    'as because until while whether upon onto within without among across toward towards per ' +
    'where why how all any both each few more most other some such no not only own same can will just should now ' +
    'is are was were be been being have has had having do does did doing would could shall may might must ' +
    'i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her ' +
    'hers herself it its itself they them their theirs themselves what which who whom whose this that these those ' +
    // contractions, split at the apostrophe ("don't" → don, t) or typed without one ("Im")
    'am im ive id ill youre dont doesnt didnt cant wont isnt arent s t d ll m re ve ' +
    'don doesn didn isn aren wasn weren haven hasn couldn wouldn shouldn ' +
    'please kindly thanks thank hi hello hey like want wants wanted need needs needed let lets also ' +
    'e g eg ie etc via using use used given'
  ).split(' '),
);

/**
 * A light English suffix stripper (in the spirit of Porter's step 1 plus a few derivational
 * endings, not an implementation of it). It only has to map inflections of one word to the
 * same key on both sides: `calculate/calculated/calculating/calculation` → `calculat`,
 * `books/booking/booked` → `book`, `cities/city` → `citi`. Stems stay ≥ 3 characters and
 * keep a vowel, so short words (`bus`, `ring`, `status`) are left alone.
 */
export function stem(word: string): string {
  if (word.length <= 3 || !/^[a-z]+$/.test(word)) return word;
  let w = word;
  // plurals and 3rd person
  if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('ies') && w.length > 4) w = w.slice(0, -3) + 'y';
  else if (/(?:x|ch|sh|ss|zz)es$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith('s') && !/(?:ss|us|is|ys)$/.test(w)) w = w.slice(0, -1);
  // one inflectional or derivational ending
  w = stripOne(w);
  // final y ~ i (city/cities/citied), final e (create/creat-ion)
  if (w.endsWith('y') && w.length > 3 && !/[aeiou]y$/.test(w)) w = w.slice(0, -1) + 'i';
  else if (w.endsWith('e') && w.length > 4) w = w.slice(0, -1);
  return w;
}

/** Ending → replacement, longest first; applied at most once per word. */
const SUFFIXES: ReadonlyArray<readonly [string, string]> = [
  ['ational', 'at'],
  ['ization', 'iz'],
  ['isation', 'iz'],
  ['ations', 'at'],
  ['ation', 'at'],
  ['ition', 'it'],
  ['ments', ''],
  ['ment', ''],
  ['ness', ''],
  ['ingly', ''],
  ['ings', ''],
  ['ing', ''],
  ['edly', ''],
  ['ion', ''],
  ['ed', ''],
  ['ly', ''],
];

function stripOne(w: string): string {
  for (const [suffix, replacement] of SUFFIXES) {
    if (!w.endsWith(suffix)) continue;
    const base = w.slice(0, -suffix.length);
    if (base.length < 3 || !/[aeiouy]/.test(base)) return w;
    let s = base + replacement;
    // running → runn → run, stopped → stopp → stop (but keep ll/ss/zz: "calling", "passed")
    if ((suffix.startsWith('ing') || suffix.startsWith('ed')) && /([b-df-hj-km-np-tv-z])\1$/.test(s) && !/(?:ll|ss|zz)$/.test(s)) {
      s = s.slice(0, -1);
    }
    return s;
  }
  return w;
}

/** Options of `analyze`; the defaults are what the index uses. */
export interface AnalyzeOptions {
  /** drop STOP_WORDS (default true) */
  stopWords?: boolean;
  /** apply `stem` (default true) */
  stemming?: boolean;
  /** drop tokens made only of digits: in a request they are argument values, not tool words (default true) */
  dropNumbers?: boolean;
}

/**
 * Text → index terms: identifier splitting, lowercase, accents folded, stop words and pure
 * numbers dropped, single letters dropped, then stemmed. Used for tool fields and queries alike.
 */
export function analyze(text: string, options: AnalyzeOptions = {}): string[] {
  const { stopWords = true, stemming = true, dropNumbers = true } = options;
  const out: string[] = [];
  for (const word of splitIdentifier(text)) {
    if (word.length < 2 && !/\p{Lo}/u.test(word)) continue;
    if (dropNumbers && /^\p{N}+$/u.test(word)) continue;
    if (stopWords && STOP_WORDS.has(word)) continue;
    out.push(stemming ? stem(word) : word);
  }
  return out;
}

/** What a tool's parameters say about it, split for separate field weights. */
export interface ParameterSummary {
  /** parameter names at every depth, space-separated (`base height unit`) */
  names: string;
  /** parameter descriptions and titles */
  text: string;
  /** string and number enum values */
  enums: string;
}

/** Bounds so a pathological schema cannot blow up indexing time. */
const MAX_SCHEMA_DEPTH = 6;
const MAX_ENUM_VALUES = 50;

/**
 * Walks a JSON Schema (properties, items, anyOf/oneOf/allOf, nested objects) and collects
 * parameter names, descriptions, titles and string/number enum values.
 */
export function summarizeParameters(schema: unknown): ParameterSummary {
  const names: string[] = [];
  const text: string[] = [];
  const enums: string[] = [];
  const visit = (node: unknown, depth: number): void => {
    if (!isRecord(node) || depth > MAX_SCHEMA_DEPTH) return;
    if (depth > 0) {
      if (typeof node.description === 'string') text.push(node.description);
      if (typeof node.title === 'string') text.push(node.title);
    }
    if (Array.isArray(node.enum)) {
      for (const v of node.enum.slice(0, MAX_ENUM_VALUES)) {
        if (typeof v === 'string' || typeof v === 'number') enums.push(String(v));
      }
    }
    if (isRecord(node.properties)) {
      for (const [name, child] of Object.entries(node.properties)) {
        names.push(name);
        visit(child, depth + 1);
      }
    }
    if (Array.isArray(node.items)) node.items.forEach((i) => visit(i, depth + 1));
    else visit(node.items, depth + 1);
    for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
      const list = node[key];
      if (Array.isArray(list)) list.forEach((s) => visit(s, depth + 1));
    }
    if (isRecord(node.additionalProperties)) visit(node.additionalProperties, depth + 1);
  };
  visit(schema, 0);
  return { names: names.join(' '), text: text.join(' '), enums: enums.join(' ') };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
