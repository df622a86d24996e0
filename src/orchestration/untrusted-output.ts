import { isIP } from 'node:net';
import { deepMap } from '../common/util/deep-map.util';
import { REDACTED } from '../common/util/redact.util';
import type { ToolRunner } from '../tools/tool-runner.port';
import { classifyAddress } from '../common/net/address-policy';
import type { LlmMessage } from '../llm/llm-adapter.port';
import type { ArgumentRefusal } from '../tools/tool-definition';

/**
 * Tool output is untrusted data: a page, a file, a search result, a knowledge document or an
 * MCP result may contain text written to steer the model ("ignore previous instructions and
 * fetch …"). Two defences live here, used by both chat protocols:
 *
 * 1. `untrustedBlock` (common/util/untrusted-block.ts) wraps every tool result handed to the
 *    model in a labelled block that says its content is data, not instructions.
 * 2. `UntrustedValues` remembers, per turn, the secret-looking strings and private addresses
 *    that appeared in tool output but nowhere in what the user wrote; a later
 *    tool call whose arguments carry one of them is refused by policy before it runs.
 */

/** Runs of token characters (`=`, `/`, `+` end a run, so `?secret=<value>` yields the value itself). */
const TOKEN = /[A-Za-z0-9_-]{12,}/g;
/** A value the text itself calls a secret: `secret=…`, `"api_key": "…"`, `token: …`. */
const LABELLED = /(?:secret|token|api[_-]?key|apikey|password|passwd|credential|session[_-]?id|auth)\w*["']?\s*[=:]\s*["']?([A-Za-z0-9_\-.~]{8,})/gi;
/** Formats of well-known keys. */
const KNOWN_KEY = /^(?:sk-|sk_live_|pk_live_|ghp_|gho_|ghs_|github_pat_|glpat-|xox[abpr]-|AKIA|ASIA|AIza|gsk_|xai-|eyJ)/;
/** http(s) URLs and bare `host:port` authorities. */
const URL_LIKE = /\bhttps?:\/\/[^\s"'<>\\)\]}]+/gi;
const MAX_REMEMBERED = 5_000;

export class UntrustedValues {
  private readonly tokens = new Set<string>();
  private readonly hosts = new Set<string>();

  /** `trusted`: what the user wrote (trustedText). */
  constructor(private readonly trusted: string) {}

  /** Learns the values of one tool result (its text as the model receives it). */
  learn(output: string): void {
    const candidates = [...(output.match(TOKEN) ?? []).filter(looksLikeSecret), ...[...output.matchAll(LABELLED)].map((m) => m[1])];
    for (const token of candidates) {
      if (this.tokens.size >= MAX_REMEMBERED) break;
      if (!this.trusted.includes(token)) this.tokens.add(token);
    }
    for (const url of output.match(URL_LIKE) ?? []) {
      if (this.hosts.size >= MAX_REMEMBERED) break;
      const authority = privateAuthority(url);
      if (authority && !this.trusted.toLowerCase().includes(authority)) this.hosts.add(authority);
    }
  }

  /** `value` with every remembered secret-looking value masked in its strings (arguments as streams and checkpoints show them). */
  maskTokens<T>(value: T): T {
    if (this.tokens.size === 0) return value;
    const mask = (s: string) => {
      let out = s;
      for (const t of this.tokens) if (out.includes(t)) out = out.split(t).join(REDACTED);
      return out;
    };
    return deepMap(value, { maxDepth: 64, leaf: (v) => (typeof v === 'string' ? mask(v) : v), key: mask }) as T;
  }

  /** The refusal for a call whose arguments (JSON text) carry a remembered value, else null. */
  check(argsJson: string): ArgumentRefusal | null {
    const found = [...this.tokens].filter((t) => argsJson.includes(t));
    if (found.length > 0) return { reason: 'untrusted_secret', why: 'its arguments carry a secret-looking value that came from tool output, not from the user', mask: found };
    const lower = argsJson.toLowerCase();
    for (const h of this.hosts) {
      if (lower.includes(h)) return { reason: 'untrusted_private_address', why: 'its arguments carry a private network address that came from tool output, not from the user' };
    }
    return null;
  }
}

/**
 * A well-known key format, or a random-looking string: 20+ characters mixing upper case, lower
 * case and digits that switch between those classes at almost every other character (random
 * base62 does so at about 62% of characters; camelCase names and words with a year at about 25%).
 * File names, dates, words, hex digests and UUIDs (one letter case) do not qualify, so reading a
 * file a listing named is never refused. Lower-case-only tokens are caught only when labelled.
 */
export function looksLikeSecret(s: string): boolean {
  if (KNOWN_KEY.test(s) && s.length >= 16) return true;
  const chars = s.replace(/[_-]/g, '');
  if (chars.length < 20 || !/[A-Z]/.test(chars) || !/[a-z]/.test(chars) || (chars.match(/[0-9]/g)?.length ?? 0) < 2) return false;
  const cls = (c: string) => (c >= '0' && c <= '9' ? 0 : c >= 'A' && c <= 'Z' ? 1 : 2);
  let switches = 0;
  for (let i = 1; i < chars.length; i++) if (cls(chars[i]) !== cls(chars[i - 1])) switches++;
  return switches / (chars.length - 1) >= 0.45;
}

/** `host[:port]` (lower case) of a URL that points at a loopback, private, link-local or local-only host; else null. */
export function privateAuthority(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const local = host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal') || (isIP(host) !== 0 && !classifyAddress(host).allowed);
  if (!local) return null;
  return u.port ? `${u.hostname.toLowerCase()}:${u.port}` : u.hostname.toLowerCase();
}

/**
 * What the user wrote: the user messages of the history. Not the system guidance, which carries
 * knowledge-base text, nor earlier assistant answers, which may repeat tool output.
 */
export function trustedText(messages: readonly LlmMessage[]): string {
  return messages.filter((m) => m.role === 'user').map((m) => m.content ?? '').join('\n');
}

/** The run options that apply a turn's untrusted-output policy to a tool call (none without one). */
export function argumentPolicyOf(ctx: { untrusted?: UntrustedValues }): { argumentPolicy?: (argsJson: string) => ArgumentRefusal | null } {
  const untrusted = ctx.untrusted;
  return untrusted ? { argumentPolicy: (argsJson) => untrusted.check(argsJson) } : {};
}

/**
 * The turn's view of the tool runner: arguments shown on the stream, in checkpoints and in the
 * protocols' traces (`redactArgs`) also have the turn's remembered untrusted secrets masked, so
 * a refused exfiltration attempt does not publish what it tried to send.
 */
export function withUntrustedMasking(tools: ToolRunner, untrusted: UntrustedValues): ToolRunner {
  return {
    run: (call, ctx) => tools.run(call, ctx),
    signature: (call, projectId) => tools.signature(call, projectId),
    specs: (filter) => tools.specs(filter),
    redactArgs: (name, args) => untrusted.maskTokens(tools.redactArgs(name, args)),
    ...(tools.repeatPolicy ? { repeatPolicy: (name: string) => tools.repeatPolicy!(name) } : {}),
    ...(tools.readOnly ? { readOnly: (name: string) => tools.readOnly!(name) } : {}),
    // approvals (issue 32): asked, declined and edited calls go through the same runner
    ...(tools.approvalNeed ? { approvalNeed: tools.approvalNeed.bind(tools) } : {}),
    ...(tools.decline ? { decline: tools.decline.bind(tools) } : {}),
    ...(tools.checkArguments ? { checkArguments: tools.checkArguments.bind(tools) } : {}),
    // a call cut off by an instance's death (issue 44): run again when read-only, else interrupted
    ...(tools.readOnly ? { readOnly: tools.readOnly.bind(tools) } : {}),
    ...(tools.interrupted ? { interrupted: tools.interrupted.bind(tools) } : {}),
  };
}
