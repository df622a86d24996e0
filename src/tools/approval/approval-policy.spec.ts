import type { ToolDefinition } from '../tool-definition';
import { ToolApprovalPolicy } from './approval-policy';

function def(name: string, origin: ToolDefinition['origin'] = 'builtin', hints?: ToolDefinition['hints']): ToolDefinition {
  return { name, description: name, parameters: { type: 'object' }, origin, hints, isAvailable: () => true, execute: async () => ({ output: null }) };
}

const readFile = def('read_file');
const fsWrite = def('fs__write_file', 'mcp:fs', { readOnly: false, destructive: true });
const fsRead = def('fs__read_text_file', 'mcp:fs', { readOnly: true });
const fsMkdir = def('fs__create_directory', 'mcp:fs', { readOnly: false, destructive: false });
const silent = def('srv__tool', 'mcp:srv');

describe('ToolApprovalPolicy', () => {
  describe('configuration', () => {
    it('built-in tools never wait unless configured, whatever TOOLS_APPROVAL_DEFAULT says', () => {
      for (const mode of ['destructive', 'all', 'none'] as const) {
        expect(new ToolApprovalPolicy([], mode).of(readFile)).toEqual({ required: false, reason: 'none' });
      }
      expect(new ToolApprovalPolicy(['read_file']).of(readFile)).toEqual({ required: true, reason: 'configured' });
    });

    it('TOOLS_APPROVAL_DEFAULT=destructive (the default): destructive or not read-only MCP tools wait, read-only ones do not', () => {
      const policy = new ToolApprovalPolicy([]);
      expect(policy.of(fsWrite)).toEqual({ required: true, reason: 'destructive' });
      expect(policy.of(fsMkdir)).toEqual({ required: true, reason: 'not_read_only' });
      expect(policy.of(silent)).toEqual({ required: true, reason: 'not_read_only' });
      expect(policy.of(fsRead)).toEqual({ required: false, reason: 'none' });
      // a tool that claims both is treated as destructive
      expect(policy.of(def('x__both', 'mcp:x', { readOnly: true, destructive: true }))).toEqual({ required: true, reason: 'destructive' });
    });

    it('TOOLS_APPROVAL_DEFAULT=all and none', () => {
      expect(new ToolApprovalPolicy([], 'all').of(fsRead)).toEqual({ required: true, reason: 'mcp_default_all' });
      expect(new ToolApprovalPolicy([], 'none').of(fsWrite)).toEqual({ required: false, reason: 'none' });
    });

    it('TOOLS_REQUIRE_APPROVAL globs: `*` is any characters, other characters are literal, the whole name must match', () => {
      const policy = new ToolApprovalPolicy(['fs__write*', 'a.b', 'web_*'], 'none');
      expect(policy.of(fsWrite).required).toBe(true);
      expect(policy.of(fsRead).required).toBe(false);
      expect(policy.of(def('a.b')).required).toBe(true);
      expect(policy.of(def('axb')).required).toBe(false); // `.` is not a regex wildcard
      expect(policy.of(def('web_search')).required).toBe(true);
      expect(policy.of(def('my_web_search')).required).toBe(false); // anchored at the start
      expect(new ToolApprovalPolicy(['*']).of(readFile)).toEqual({ required: true, reason: 'configured' });
    });
  });

  describe("the project's override", () => {
    const policy = new ToolApprovalPolicy(['fs__create_directory']);

    it('beats the configuration both ways: require makes a built-in wait, exempt lets a destructive or configured tool run', () => {
      const override = { require: ['read_file'], exempt: ['fs__write_file', 'fs__create_directory'] };
      expect(policy.of(readFile, override)).toEqual({ required: true, reason: 'project_require' });
      expect(policy.of(fsWrite, override)).toEqual({ required: false, reason: 'project_exempt' });
      expect(policy.of(fsMkdir, override)).toEqual({ required: false, reason: 'project_exempt' });
    });

    it('a tool neither list names follows the configuration', () => {
      const override = { require: ['other'], exempt: ['srv__*'] };
      expect(policy.of(fsWrite, override)).toEqual({ required: true, reason: 'destructive' });
      expect(policy.of(fsMkdir, override)).toEqual({ required: true, reason: 'configured' });
      expect(policy.of(readFile, override)).toEqual({ required: false, reason: 'none' });
      expect(policy.of(readFile, null)).toEqual({ required: false, reason: 'none' });
    });

    it('when both lists match, the more specific pattern decides: an exact name over a glob, a longer glob over a shorter one, a tie waits', () => {
      expect(policy.of(fsRead, { require: ['fs__*'], exempt: ['fs__read*'] }).required).toBe(false);
      expect(policy.of(fsWrite, { require: ['fs__*'], exempt: ['fs__read*'] }).required).toBe(true);
      expect(policy.of(fsRead, { require: ['fs__read_text_file'], exempt: ['fs__read_text_*'] }).required).toBe(true);
      expect(policy.of(fsRead, { require: ['fs__read_text_*'], exempt: ['fs__read_text_file'] }).required).toBe(false);
      // eight literal characters each
      expect(policy.of(fsRead, { require: ['fs__read*'], exempt: ['*ext_file'] })).toEqual({ required: true, reason: 'project_require' });
    });
  });

  it("the conversation's `always` comes last: every call waits, an exempt or read-only one too", () => {
    const policy = new ToolApprovalPolicy([]);
    expect(policy.need(fsRead, 'always', { require: [], exempt: ['*'] })).toEqual({ required: true, reason: 'conversation_always' });
    expect(policy.need(readFile, 'always')).toEqual({ required: true, reason: 'conversation_always' });
    expect(policy.need(readFile, 'policy')).toEqual({ required: false, reason: 'none' });
    expect(policy.need(fsWrite, 'policy', { require: [], exempt: ['fs__*'] })).toEqual({ required: false, reason: 'project_exempt' });
  });
});
