/**
 * One copy of a text that many turns build alike (the unified route's system prompt: the same
 * role, tools and guidance for every turn of a project). Each turn still builds its text, which
 * dies young; what its model requests hold while they stream is the shared copy. Bounded: past
 * `max` distinct texts the oldest is forgotten (a turn that brings it back keeps its own copy).
 */
export class SharedTexts {
  private readonly texts = new Map<string, string>();

  constructor(private readonly max: number) {}

  /** The copy kept for this text, or this one, now kept. */
  share(text: string): string {
    const known = this.texts.get(text);
    if (known !== undefined) return known;
    if (this.texts.size >= this.max) this.texts.delete(this.texts.keys().next().value!);
    this.texts.set(text, text);
    return text;
  }

  get size(): number {
    return this.texts.size;
  }
}
