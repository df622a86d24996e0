/**
 * Which tool call does a streamed fragment belong to?
 *
 * Providers identify the call of a fragment in three different ways, and a tool-call
 * accumulator has to survive all of them:
 * - by `index` (OpenAI, DeepSeek, vLLM, Qwen, xAI…): the usual case;
 * - not at all (Mistral sends whole calls with no `index`; so do some proxies): a fragment
 *   with a new id, or a new whole call (a name arriving when the current call already has a
 *   name and complete arguments), starts the next call; anything else continues the current
 *   one — including fragments that repeat the current call's id or name;
 * - by `index` but reusing it for a different call (proxies that number every parallel call
 *   0): a different non-empty id on a slot that already has a name starts a new call.
 *
 * Empty strings are "not sent": DashScope (Qwen) repeats `id: ""` on every continuation
 * fragment, and that must neither start a new call nor erase the real id.
 *
 * The resolver turns all of that into dense internal indices 0, 1, 2… in order of first
 * appearance, so "a higher index starts" is a reliable structural boundary downstream. It is
 * idempotent: feeding it its own output gives the same numbers.
 */
export interface ToolCallFragmentRef {
  /** the provider's index, when it sent one */
  index?: unknown;
  id?: unknown;
  name?: unknown;
  argumentsFragment?: unknown;
}

interface SlotInfo {
  id?: string;
  named: boolean;
  args: string;
}

export class ToolCallIndexResolver {
  /** provider index -> internal index (the latest call that used that provider index) */
  private readonly byProviderIndex = new Map<number, number>();
  private readonly slots: SlotInfo[] = [];
  private current: number | undefined;

  /** Internal index of the fragment; never throws, whatever the input. */
  resolve(fragment: ToolCallFragmentRef): number {
    const id = nonEmptyString(fragment?.id);
    const name = nonEmptyString(fragment?.name);
    const providerIndex = validIndex(fragment?.index);

    let slot: number;
    if (providerIndex !== undefined) {
      const known = this.byProviderIndex.get(providerIndex);
      const reused = known !== undefined && id !== undefined && this.slots[known].id !== undefined && this.slots[known].id !== id && this.slots[known].named;
      slot = known === undefined || reused ? this.allocate() : known;
      this.byProviderIndex.set(providerIndex, slot);
    } else {
      slot = this.current === undefined || this.startsNextCall(this.slots[this.current], id, name) ? this.allocate() : this.current;
    }

    const info = this.slots[slot];
    if (id !== undefined && info.id === undefined) info.id = id;
    if (name !== undefined) info.named = true;
    if (typeof fragment?.argumentsFragment === 'string') info.args += fragment.argumentsFragment;
    this.current = slot;
    return slot;
  }

  /** Index-less fragments: does this one open the next call? */
  private startsNextCall(current: SlotInfo, id: string | undefined, name: string | undefined): boolean {
    if (id !== undefined && current.id !== undefined) return id !== current.id;
    if (id === undefined && name === undefined) return false; // a bare continuation fragment
    // A new name, or a first id, opens the next call only once the current one is whole.
    return current.named && isJsonObject(current.args);
  }

  private allocate(): number {
    this.slots.push({ named: false, args: '' });
    return this.slots.length - 1;
  }
}

function isJsonObject(text: string): boolean {
  if (text.trim() === '') return true; // a whole call with no arguments
  try {
    const v: unknown = JSON.parse(text);
    return !!v && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
}

function nonEmptyString(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v : undefined;
}

function validIndex(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}
