import { redactString } from './redact.util';

/**
 * Masks known secrets in text that arrives in pieces (a model's streamed chunks), where one
 * secret can be split across two or more pieces that are each harmless alone. The end of what
 * has arrived that could be the start of a secret is held back until the next piece shows
 * whether it is one (masked whole) or not (sent on); `flush` gives back what is held when the
 * text is interrupted by another event or ends. Costs a delay of at most one secret's length of
 * text, only when the text ends like the start of a secret.
 */
export class SplitSecretGuard {
  private held = '';
  private readonly secrets: string[];

  constructor(secrets: readonly string[]) {
    // redactString masks only secrets of 4 characters or more; shorter ones cannot be held for
    this.secrets = secrets.filter((s) => s && s.length >= 4);
  }

  /** The part of `held + piece` that can be sent now, secrets masked. */
  push(piece: string): string {
    if (this.secrets.length === 0) return piece;
    const text = redactString(this.held === '' ? piece : this.held + piece, this.secrets);
    const hold = this.heldLength(text);
    if (hold === 0) {
      this.held = '';
      return text;
    }
    this.held = text.slice(text.length - hold);
    return text.slice(0, text.length - hold);
  }

  /** What is held back (an unfinished start of a secret is not the secret: it is sent as is). */
  flush(): string {
    const out = this.held;
    this.held = '';
    return out;
  }

  /**
   * Length of the longest end of `text` that is the start (not the whole) of a secret. Runs on
   * every streamed chunk: compares characters in place (no substring per candidate length), and
   * only from positions holding a secret's first character.
   */
  private heldLength(text: string): number {
    let best = 0;
    for (const secret of this.secrets) {
      const first = secret.charCodeAt(0);
      // candidate starts, longest end first; an end no longer than `best` cannot improve it
      for (let start = Math.max(0, text.length - (secret.length - 1)); text.length - start > best; start++) {
        if (text.charCodeAt(start) === first && startsWithAt(secret, text, start)) {
          best = text.length - start;
          break;
        }
      }
    }
    return best;
  }
}

/** Whether `text` from `start` to its end is the start of `secret` (compared in place). */
function startsWithAt(secret: string, text: string, start: number): boolean {
  for (let i = start, j = 0; i < text.length; i++, j++) {
    if (text.charCodeAt(i) !== secret.charCodeAt(j)) return false;
  }
  return true;
}
