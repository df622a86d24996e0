import { capOutput, toMcpToolOutput } from './mcp-result.mapper';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

describe('toMcpToolOutput', () => {
  it('keeps text and summarizes binary content instead of inlining base64', () => {
    const output = toMcpToolOutput(
      {
        content: [
          { type: 'text', text: 'hello' },
          { type: 'image', data: PNG, mimeType: 'image/png' },
          { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
          { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'body' } },
          { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'AAECAw==' } },
          { type: 'resource_link', uri: 'file:///c.md', name: 'c.md' },
          { type: 'hologram' },
        ],
      },
      65_536,
    );
    expect(output).toEqual({
      content: [
        { type: 'text', text: 'hello' },
        { type: 'image', mimeType: 'image/png', bytes: 68, note: 'image data omitted' },
        { type: 'audio', mimeType: 'audio/wav', bytes: 3, note: 'audio data omitted' },
        { type: 'resource', uri: 'file:///a.txt', mimeType: 'text/plain', text: 'body' },
        { type: 'resource', uri: 'file:///b.bin', bytes: 4, note: 'binary content omitted' },
        { type: 'resource_link', uri: 'file:///c.md', name: 'c.md' },
        { type: 'hologram', note: 'content type not supported by Orion; omitted' },
      ],
    });
    expect(JSON.stringify(output)).not.toContain(PNG.slice(0, 20));
  });

  it('keeps structuredContent and drops text that only repeats it', () => {
    const structured = { temperature: 20, conditions: 'Sunny' };
    expect(toMcpToolOutput({ content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured }, 65_536)).toEqual({
      structuredContent: structured,
    });
    // server-filesystem style: the text is one of the structured fields
    expect(toMcpToolOutput({ content: [{ type: 'text', text: 'file body' }], structuredContent: { content: 'file body' } }, 65_536)).toEqual({
      structuredContent: { content: 'file body' },
    });
    expect(toMcpToolOutput({ content: [{ type: 'text', text: 'extra words' }], structuredContent: { n: 1 } }, 65_536)).toEqual({
      content: [{ type: 'text', text: 'extra words' }],
      structuredContent: { n: 1 },
    });
  });

  it('reads the pre-2024-11 toolResult shape and an empty result', () => {
    expect(toMcpToolOutput({ toolResult: { ok: true } }, 1024)).toEqual({ structuredContent: { ok: true } });
    expect(toMcpToolOutput({ content: [] }, 1024)).toEqual({ content: [] });
  });
});

describe('capOutput', () => {
  it('returns outputs within the cap untouched', () => {
    const output = { content: [{ type: 'text' as const, text: 'short' }] };
    expect(capOutput(output, 1024)).toBe(output);
  });

  it.each([
    ['ascii', 'x'.repeat(10_000)],
    ['multi-byte', 'é€😀'.repeat(2_000)],
    ['escape-heavy', '"\n\\\u0001'.repeat(3_000)],
  ])('cuts %s text so the JSON fits the byte cap', (_kind, text) => {
    const capped = capOutput({ content: [{ type: 'text', text }], structuredContent: { more: text } }, 2_048);
    const json = JSON.stringify(capped);
    expect(Buffer.byteLength(json)).toBeLessThanOrEqual(2_048);
    expect(Buffer.byteLength(json)).toBeGreaterThan(1_024);
    expect(capped.truncated).toBe(true);
    expect(capped.originalBytes).toBeGreaterThan(2_048);
    expect((capped.content![0] as { text: string }).text).not.toContain('\uFFFD');
  });
});
