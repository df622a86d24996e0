import { Injectable } from '@nestjs/common';
import { promises as fs, statSync } from 'node:fs';
import * as path from 'node:path';
import { AppConfigService } from '../../config/app-config.service';
import { asToolFailure, ToolFailure, type ToolDefinition, type ToolExecuteResult, type ToolExecutionContext } from '../tool-definition';
import { lexicalSegments, isInside, lstatOrNull, notFound, realpathOrNull, resolveWorkspacePath } from '../../common/workspace/workspace-path.util';

export type ListedEntryType = 'file' | 'directory' | 'symlink' | 'other';

export interface ListedEntry {
  /** relative to the project folder, `/`-separated: what read_file and list_files accept */
  path: string;
  type: ListedEntryType;
  /** bytes, files only */
  size?: number;
}

export interface ListFilesOutput {
  path: string;
  recursive: boolean;
  entries: ListedEntry[];
  /** true when MAX_ENTRIES or MAX_DEPTH cut the listing */
  truncated: boolean;
  note?: string;
}

/**
 * Limits of one listing. 1000 entries is about 40 KB of JSON, inside the default
 * TOOL_RESULT_MAX_BYTES (64 KB); 8 levels cover ordinary documentation trees.
 */
export const LIST_MAX_ENTRIES = 1000;
export const LIST_MAX_DEPTH = 8;
/** Folders listed but never descended into: large, generated, and no use to a model. */
export const LIST_NOT_DESCENDED: ReadonlySet<string> = new Set(['.git', 'node_modules']);

/**
 * `list_files { path?: string = ".", recursive?: boolean = false }`: entries under
 * `WORKSPACE_ROOT/<projectId>/path`, sorted by name, depth-first when recursive.
 * Symlinks are reported as `symlink` entries and never followed, so a recursive listing
 * cannot wander out of the project or loop. A project without a folder lists as empty.
 */
@Injectable()
export class ListFilesTool implements ToolDefinition {
  readonly name = 'list_files';
  readonly description =
    'List the files and folders of the current project. `path` is relative to the project folder ("." is the folder itself); ' +
    'set `recursive` to include sub-folders. Symlinks are shown but not followed.';
  readonly origin = 'builtin' as const;
  /** it only reads: a call cut off by an instance's death runs again on the instance that continues the turn */
  readonly hints = { readOnly: true };
  readonly parameters: Record<string, unknown> = {
    type: 'object',
    properties: {
      path: { type: 'string', default: '.', description: 'Folder to list, relative to the project folder, e.g. "docs".' },
      recursive: { type: 'boolean', default: false, description: 'Include the contents of sub-folders.' },
    },
    additionalProperties: false,
  };

  constructor(private readonly config: AppConfigService) {}

  isAvailable(): boolean {
    return true;
  }

  /** A person's edit is refused at once when its path leaves the project folder (the lexical rule; the rest is checked when it runs). */
  checkArguments(args: Record<string, unknown>): string | null {
    try {
      lexicalSegments(args.path ?? '.');
      return null;
    } catch (err) {
      return (err as Error).message;
    }
  }

  async execute(args: Record<string, unknown>, ctx: ToolExecutionContext): Promise<ToolExecuteResult> {
    const recursive = args.recursive === true;
    const target = await resolveWorkspacePath(this.config.get('WORKSPACE_ROOT'), ctx.projectId, args.path ?? '.').catch(asToolFailure);
    if (!target.rootExists) {
      if (target.relative !== '.') asToolFailure(notFound(target.relative));
      const output: ListFilesOutput = { path: '.', recursive, entries: [], truncated: false, note: 'The project folder does not exist yet, so it has no files.' };
      return { output };
    }
    if (!target.exists) asToolFailure(notFound(target.relative));
    // the project folder itself was checked to be a folder by resolveWorkspacePath
    const isFolder = target.absolute === target.root || statSync(target.absolute).isDirectory();
    if (!isFolder) throw new ToolFailure('validation_error', `"${target.relative}" is a file, not a folder; use read_file to read it`);
    return { output: await listTree(target.root, target.absolute, target.relative, recursive, ctx.signal) };
  }
}

/**
 * A folder's names are read asynchronously: that is the one call whose cost grows with the folder
 * (a folder can hold far more than LIST_MAX_ENTRIES), and the await between folders is where a
 * cancelled run stops. What is asked of each listed entry (lstat, realpath) is a synchronous call,
 * like resolveWorkspacePath's (why: there): at most LIST_MAX_ENTRIES of them per listing.
 */
async function listTree(root: string, start: string, startRelative: string, recursive: boolean, signal: AbortSignal): Promise<ListFilesOutput> {
  const entries: ListedEntry[] = [];
  const notes: string[] = [];
  let truncated = false;
  let capped = false;
  // depth-first, names sorted: a stack of folders still to read, nearest last
  const stack: Array<{ abs: string; rel: string; depth: number }> = [{ abs: start, rel: startRelative, depth: 0 }];
  while (stack.length > 0 && !capped) {
    signal.throwIfAborted();
    const dir = stack.pop()!;
    // a folder reached by descending was a real folder when listed; re-check in case it was swapped since
    if (dir.depth > 0) {
      const real = realpathOrNull(dir.abs);
      if (!real || !isInside(root, real) || real !== dir.abs) continue;
    }
    let names: string[];
    try {
      names = (await fs.readdir(dir.abs)).sort();
    } catch {
      notes.push(`"${dir.rel}" could not be read`);
      continue;
    }
    signal.throwIfAborted();
    const children: Array<{ abs: string; rel: string; depth: number }> = [];
    for (const name of names) {
      if (entries.length >= LIST_MAX_ENTRIES) {
        truncated = capped = true;
        notes.push(`stopped at ${LIST_MAX_ENTRIES} entries; list a sub-folder to see more`);
        break;
      }
      const abs = path.join(dir.abs, name);
      const rel = dir.rel === '.' ? name : `${dir.rel}/${name}`;
      const st = lstatOrNull(abs);
      if (!st) continue; // vanished meanwhile
      const type: ListedEntryType = st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'directory' : st.isFile() ? 'file' : 'other';
      entries.push(type === 'file' ? { path: rel, type, size: st.size } : { path: rel, type });
      if (!recursive || type !== 'directory' || LIST_NOT_DESCENDED.has(name)) continue;
      if (dir.depth + 1 >= LIST_MAX_DEPTH) {
        notes.push(`folders deeper than ${LIST_MAX_DEPTH} levels are not listed; list a sub-folder to see them`);
        truncated = true;
        continue;
      }
      children.push({ abs, rel, depth: dir.depth + 1 });
    }
    // depth-first in name order: push in reverse so the first child is read next
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  // entries were pushed folder by folder; order them as a tree (a folder, then its contents)
  entries.sort((a, b) => compareTreePaths(a.path, b.path));
  const output: ListFilesOutput = { path: startRelative, recursive, entries, truncated };
  if (notes.length > 0) output.note = [...new Set(notes)].join('; ');
  else if (entries.length === 0) output.note = 'The folder is empty.';
  return output;
}

/** Orders paths segment by segment, so "a/b" comes right after "a" and before "a-b". */
function compareTreePaths(a: string, b: string): number {
  const as = a.split('/');
  const bs = b.split('/');
  for (let i = 0; i < Math.min(as.length, bs.length); i++) {
    if (as[i] !== bs[i]) return as[i] < bs[i] ? -1 : 1;
  }
  return as.length - bs.length;
}
