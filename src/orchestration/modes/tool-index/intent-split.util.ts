/**
 * Splits a request into the separate things it asks for ("get the weather in Paris, then
 * convert 20 euros to dollars and book a table" → three intents), so each can be retrieved on
 * its own (multi-intent-search.ts).
 *
 * The rules come from how people chain requests, not from any data set (bench/README.md lists
 * them): a sentence starts a new intent only when it opens like a further task (a connective,
 * an ordinal, a list marker); inside a sentence the sequencing connectives of English (then,
 * also, after that, finally, additionally, as well as…) and Chinese (然后, 接着, 之后, 另外,
 * 同时, 还要, 最后, 以及…), inline enumerations, and "and" before an action verb separate
 * intents. A bare "and" between nouns is NOT a boundary ("the length and width of a rectangle").
 */

/** Sentence ends: western ones need a space and a capital/digit after them ("3.5", "e.g. x" and "file.txt" stay). */
const SENTENCE_END = /(?<=[.!?])\s+(?=["'(\p{Lu}\p{N}])|(?<=[。！？；;])\s*|\n+/u;
/** A list marker at the start of a piece: "- ", "* ", "• ", "1. ", "2) ", "(3) ", "a) ". */
const LIST_MARKER = /^\s*(?:[-*•·]|\(?\d{1,2}[.)）]|\(?[a-z][)）])\s+/iu;
/** Inline enumerations: "1) … 2) …", "(1) … (2) …", "①…②…". */
const INLINE_ENUM = /\s(?=\(?\d{1,2}[)）]\s)|(?=[①②③④⑤⑥⑦⑧⑨⑩])/u;
/** English sequencing connectives, as whole words, optionally after a comma. */
const EN_CONNECTIVE =
  /\s*,?\s*\b(?:and then|and also|and finally|and afterwards|after that|afterwards|then|also|additionally|finally|lastly|as well as|moreover|furthermore|besides|in addition(?: to (?:that|this))?|subsequently)\b\s*,?\s*/giu;
/** "(,) and <verb>": a second task joined on. The verbs are the ones tool requests start with. */
const COMMA_AND_VERB =
  /\s*,?\s+and\s+(?=(?:please\s+)?(?:get|find|calculate|compute|show|list|tell|give|check|search|look|fetch|send|book|create|make|add|delete|remove|update|set|turn|play|convert|translate|schedule|order|buy|open|close|start|stop|run|call|read|write|retrieve|determine|provide|predict|estimate|identify|generate|plot|draw|analy[sz]e|compare|count|measure|track|reserve|cancel|post|upload|download|save|move|copy|rename|display|return|what|how|who|where|when|which)\b)/giu;
/** Chinese sequencing connectives (the index reads Chinese as character bigrams, so only whole words are split on). */
const ZH_CONNECTIVE = /[，,、]?\s*(?:然后|接着|之后|随后|然後|接著|另外|此外|同时|同時|并且|並且|还要|還要|最后|最後|以及|再帮我|再幫我)\s*/u;

/**
 * How a sentence that is a further task opens: a list marker, a sequencing connective, an
 * ordinal with a comma ("Second, …"), or their Chinese equivalents.
 */
const OPENS_TASK =
  /^\s*(?:[-*•·]\s|\(?\d{1,2}[.)）]\s|\(?[a-z][)）]\s|[①②③④⑤⑥⑦⑧⑨⑩]|(?:and\s+)?(?:then|also|additionally|finally|lastly|after that|afterwards|in addition|moreover|furthermore|besides|subsequently)\b|(?:first|second|third|fourth|fifth|next)(?:ly)?\s*,|然后|然後|接着|接著|之后|随后|另外|此外|同时|同時|还要|還要|最后|最後|以及|其次|再|第[一二三四五六七八九十])/iu;

/** A piece that is a quotation (after any list marker): the data of the task before it. */
const QUOTED = /^\s*["'“‘「『]/u;

/** A piece shorter than this many word characters is not an intent on its own ("Thanks.", "OK"). */
const MIN_INTENT_CHARS = 3;
/** Beyond this many pieces the request is a list of items of one task rather than separate tasks. */
export const MAX_INTENTS = 8;

/**
 * The intents of a request, in order. A request with one intent gives `[request]` trimmed,
 * and so does one split into more than MAX_INTENTS pieces (then the pieces are not tasks but
 * the items of one, e.g. a long list of cities). Empty input gives `[]`.
 */
export function splitIntents(request: string): string[] {
  const text = typeof request === 'string' ? request.trim() : '';
  if (!text) return [];
  // a sentence starts a new intent only when it opens like one ("Also, …", "- …", "2) …",
  // "然后…"); other sentences are context of the one before ("I'm in Riga. What's the
  // temperature?", "Imagine you are a drone operator. You are at (5, 7)…")
  const groups: string[] = [];
  for (const sentence of text.split(SENTENCE_END)) {
    if (!sentence?.trim()) continue;
    if (groups.length === 0 || OPENS_TASK.test(sentence)) groups.push(sentence);
    else groups[groups.length - 1] += ` ${sentence}`;
  }
  const pieces: string[] = [];
  for (const group of groups) {
    for (const item of group.replace(LIST_MARKER, '').split(INLINE_ENUM)) {
      for (const clause of item.replace(LIST_MARKER, '').split(EN_CONNECTIVE)) {
        if (!clause) continue;
        for (const part of clause.split(COMMA_AND_VERB)) {
          for (const zh of part.split(ZH_CONNECTIVE)) {
            // a quoted item is data the task works on ("classify these queries: - 'How do I…'"), not a task
            if (QUOTED.test(zh) && pieces.length > 0) pieces[pieces.length - 1] += ` ${zh}`;
            else pushPiece(pieces, zh);
          }
        }
      }
    }
  }
  if (pieces.length <= 1 || pieces.length > MAX_INTENTS) return [text];
  return pieces;
}

function pushPiece(out: string[], piece: string | undefined): void {
  const p = (piece ?? '').replace(/^[\s,，、:：;；.。]+|[\s,，、:：;；。！？]+$/gu, '');
  if ((p.match(/[\p{L}\p{N}]/gu)?.length ?? 0) >= MIN_INTENT_CHARS) out.push(p);
}
