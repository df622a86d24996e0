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
    const text = redactString(this.held + piece, this.secrets);
    const hold = this.heldLength(text);
    this.held = text.slice(text.length - hold);
    return text.slice(0, text.length - hold);
  }

  /** What is held back (an unfinished start of a secret is not the secret: it is sent as is). */
  flush(): string {
    const out = this.held;
    this.held = '';
    return out;
  }

  /** Length of the longest end of `text` that is the start (not the whole) of a secret. */
  private heldLength(text: string): number {
    let best = 0;
    for (const secret of this.secrets) {
      for (let n = Math.min(secret.length - 1, text.length); n > best; n--) {
        if (text.endsWith(secret.slice(0, n))) {
          best = n;
          break;
        }
      }
    }
    return best;
  }
}
