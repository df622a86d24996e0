import { Injectable } from '@nestjs/common';
import { promises as fs } from 'node:fs';
import { AppConfigService } from '../../config/app-config.service';
import { asToolFailure, ToolFailure, type ToolDefinition, type ToolExecuteResult, type ToolExecutionContext } from '../tool-definition';
import { lexicalSegments, SAFE_OPEN_FLAGS, assertOpenedInside, notFound, resolveWorkspacePath } from '../../common/workspace/workspace-path.util';

export interface ReadFileOutput {
  path: string;
  /** size of the whole file in bytes */
  size: number;
  /** bytes of `content` (UTF-8) */
  bytes: number;
  truncated: boolean;
  content: string;
  note?: string;
}

export const READ_DEFAULT_MAX_BYTES = 65_536;
/** Upper bound of `maxBytes`: 1 MiB. Results larger than TOOL_RESULT_MAX_BYTES are cut by the runner anyway. */
export const READ_MAX_BYTES_LIMIT = 1_048_576;
/** A NUL byte within this many leading bytes marks a file as binary (the heuristic git and grep use). */
export const BINARY_SNIFF_BYTES = 8192;

/**
 * `read_file { path: string, maxBytes?: integer = 65536 }`: the first `maxBytes` bytes of a
 * text file under `WORKSPACE_ROOT/<projectId>`, decoded as UTF-8 and cut on a character
 * boundary. Folders, binary files (NUL in the first 8 KB), FIFOs and devices are refused.
 *
 * The file is opened with O_NOFOLLOW|O_NONBLOCK at its checked real path and the open
 * descriptor is verified to be that file before a byte is read (see assertOpenedInside).
 */
@Injectable()
export class ReadFileTool implements ToolDefinition {
  readonly name = 'read_file';
  readonly description =
    'Read a text file of the current project. `path` is relative to the project folder (list_files shows what exists); ' +
    'at most `maxBytes` bytes are returned and the answer says when the file was longer.';
  readonly origin = 'builtin' as const;
  /** it only reads: a call cut off by an instance's death runs again on the instance that continues the turn */
  readonly hints = { readOnly: true };
  readonly parameters: Record<string, unknown> = {
    type: 'object',
    properties: {
      path: { type: 'string', minLength: 1, description: 'File to read, relative to the project folder, e.g. "docs/roadmap.md".' },
      maxBytes: {
        type: 'integer',
        minimum: 1,
        maximum: READ_MAX_BYTES_LIMIT,
        default: READ_DEFAULT_MAX_BYTES,
        description: `Largest number of bytes to return (1..${READ_MAX_BYTES_LIMIT}).`,
      },
    },
    required: ['path'],
    additionalProperties: false,
  };

  constructor(private readonly config: AppConfigService) {}

  isAvailable(): boolean {
    return true;
  }

  /** A person's edit is refused at once when its path leaves the project folder (the lexical rule; the rest is checked when it runs). */
  checkArguments(args: Record<string, unknown>): string | null {
    try {
      lexicalSegments(args.path);
      return null;
    } catch (err) {
      return (err as Error).message;
    }
  }

  async execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolExecuteResult> {
    const maxBytes = typeof args.maxBytes === 'number' ? args.maxBytes : READ_DEFAULT_MAX_BYTES;
    const target = await resolveWorkspacePath(this.config.get('WORKSPACE_ROOT'), ctx.projectId, args.path).catch(asToolFailure);
    if (!target.exists) asToolFailure(notFound(target.relative));
    ctx.signal.throwIfAborted();

    let handle: fs.FileHandle;
    try {
      handle = await fs.open(target.absolute, SAFE_OPEN_FLAGS);
    } catch (err) {
      throw openFailure(err, target.relative);
    }
    try {
      const st = await handle.stat();
      if (st.isDirectory()) throw new ToolFailure('validation_error', `"${target.relative}" is a folder; use list_files to see what it contains`);
      if (!st.isFile()) throw new ToolFailure('validation_error', `"${target.relative}" is not a regular file (a device, socket or pipe); only text files can be read`);
      await assertOpenedInside(handle.fd, st, target).catch(asToolFailure);
      // a hard link to a file outside the workspace has an inside path: only the link count shows it
      if (st.nlink > 1 && !this.config.get('FILE_ALLOW_HARDLINKS')) {
        throw new ToolFailure('validation_error', `"${target.relative}" has ${st.nlink} hard links; files with more than one are refused (FILE_ALLOW_HARDLINKS=true allows them)`);
      }

      // read one byte beyond maxBytes to know whether there is more, and at least enough to sniff for binary
      const want = Math.max(maxBytes + 1, BINARY_SNIFF_BYTES);
      const buf = Buffer.alloc(want);
      let filled = 0;
      while (filled < want) {
        ctx.signal.throwIfAborted();
        const { bytesRead } = await handle.read(buf, filled, want - filled, filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      if (buf.subarray(0, Math.min(filled, BINARY_SNIFF_BYTES)).includes(0)) {
        throw new ToolFailure('validation_error', `"${target.relative}" looks like a binary file (it contains NUL bytes); read_file reads text files only`);
      }
      const truncated = filled > maxBytes;
      const content = decodeUtf8Prefix(buf.subarray(0, Math.min(filled, maxBytes)));
      const bytes = Buffer.byteLength(content, 'utf8');
      // metadata and note first: if the runner has to cut a long result, they survive the cut
      const output: ReadFileOutput = { path: target.relative, size: st.size, bytes, truncated } as ReadFileOutput;
      if (truncated) {
        output.note =
          `Showing the first ${bytes} of ${Math.max(st.size, filled)} bytes. ` +
          (maxBytes < READ_MAX_BYTES_LIMIT ? `Call read_file again with a larger maxBytes (up to ${READ_MAX_BYTES_LIMIT}) to read more.` : 'This is the most read_file returns.');
      }
      output.content = content;
      return { output };
    } finally {
      await handle.close().catch(() => undefined);
    }
  }
}

/** Decodes UTF-8, dropping a character cut in half at the end (it would otherwise show as U+FFFD). */
function decodeUtf8Prefix(bytes: Buffer): string {
  let end = bytes.length;
  // walk back over at most 3 continuation bytes to the lead byte of the last character
  let i = end - 1;
  while (i >= 0 && i >= end - 4 && (bytes[i] & 0xc0) === 0x80) i--;
  if (i >= 0) {
    const lead = bytes[i];
    const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (end - i < need) end = i;
  }
  return bytes.subarray(0, end).toString('utf8');
}

function openFailure(err: unknown, relative: string): unknown {
  switch ((err as NodeJS.ErrnoException)?.code) {
    case 'ENOENT':
    case 'ENOTDIR':
      return new ToolFailure('exception', notFound(relative).message);
    case 'ELOOP':
    case 'EMLINK':
      return new ToolFailure('validation_error', `"${relative}" changed into a symlink while it was being opened; refusing to read it`);
    case 'EACCES':
    case 'EPERM':
      return new ToolFailure('validation_error', `"${relative}" is not readable (permission denied)`);
    case 'EISDIR':
      return new ToolFailure('validation_error', `"${relative}" is a folder; use list_files to see what it contains`);
    default:
      return err;
  }
}
