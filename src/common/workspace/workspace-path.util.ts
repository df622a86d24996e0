import { constants as fsConstants, lstatSync, promises as fs, realpathSync, statSync, type Stats } from 'node:fs';
import * as path from 'node:path';
import { PROJECT_ID_PATTERN } from './project-id';

/**
 * Containment of the file tools: project P sees only `WORKSPACE_ROOT/P`, nothing else.
 *
 * Order of checks (each failure is a WorkspacePathError, which the tool runner reports as a
 * `validation_error` and the knowledge routes as a 400):
 * 1. lexical: a string without NUL, not absolute in POSIX or Windows form (`/x`, `C:\x`, `C:x`,
 *    `\\server\share`), not starting with `~`; `\` is read as a separator; `.`/`..` segments are
 *    resolved lexically and may never climb above the project folder;
 * 2. physical: `realpath` of the target (or, when it does not exist, of its nearest existing
 *    parent) must be the real project folder or lie under `realpath(folder) + sep`. Symlinks are
 *    thereby resolved; any resolution error other than "does not exist" fails closed.
 *
 * Nothing is decoded or normalized beyond that: `%2e%2e%2f`, `\u2025` or `．．` are ordinary
 * file names inside the project (usually "not found"), never a way out.
 */

/** A requested path that is not usable inside the project folder; the message says why. */
export class WorkspacePathError extends Error {
  /**
   * How a tool fared on it: a path that is not allowed is a bad argument (`validation_error`);
   * a path that is allowed but names nothing is the world differing from the model's guess,
   * an `exception`-class outcome like any other failed lookup.
   */
  constructor(
    message: string,
    readonly outcome: 'validation_error' | 'exception' = 'validation_error',
  ) {
    super(message);
    this.name = 'WorkspacePathError';
  }
}

/** Longest path a tool accepts; PATH_MAX is 4096 on Linux, real project paths are far shorter. */
export const MAX_PATH_CHARS = 1024;

export interface WorkspaceTarget {
  /** realpath of the project folder (the lexical folder when it does not exist) */
  root: string;
  /** whether the project folder exists */
  rootExists: boolean;
  /** realpath of the target; for a missing target, its lexical place under the real root */
  absolute: string;
  /** the requested path normalized, relative to the project folder, `/`-separated, `.` for the folder */
  relative: string;
  exists: boolean;
}

/** `WORKSPACE_ROOT/<projectId>` after checking the id (it becomes a path segment). */
export function projectFolder(workspaceRoot: string, projectId: string): string {
  if (typeof projectId !== 'string' || !PROJECT_ID_PATTERN.test(projectId)) {
    throw new WorkspacePathError('invalid projectId: it must match [A-Za-z0-9_-]{1,64}');
  }
  return path.join(path.resolve(workspaceRoot), projectId);
}

/** Step 1: the requested path as normalized segments under the project folder, or a WorkspacePathError. */
export function lexicalSegments(requested: unknown): string[] {
  if (typeof requested !== 'string') throw new WorkspacePathError('path must be a string');
  if (requested.includes('\0')) throw new WorkspacePathError('path must not contain NUL characters');
  if (requested.length > MAX_PATH_CHARS) throw new WorkspacePathError(`path is longer than ${MAX_PATH_CHARS} characters`);
  if (path.posix.isAbsolute(requested) || path.win32.isAbsolute(requested) || /^[A-Za-z]:/.test(requested)) {
    throw new WorkspacePathError(`path "${requested}" is absolute; give a path relative to the project folder (e.g. "docs/readme.md")`);
  }
  if (requested.startsWith('~')) {
    throw new WorkspacePathError(`path "${requested}" starts with "~"; home folders are not reachable, give a path relative to the project folder`);
  }
  const segments: string[] = [];
  for (const seg of requested.replace(/\\/g, '/').split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (segments.length === 0) throw escapeFailure(requested);
      segments.pop();
    } else {
      segments.push(seg);
    }
  }
  return segments;
}

/**
 * Resolves a tool's `path` argument inside the project folder (both steps above).
 *
 * The path checks are synchronous calls: each is one metadata system call on the local project
 * folder (a few µs), where the promise form hands every call to libuv's thread pool and back, at
 * 50–60 µs of CPU per call on a 2-core VM (several per tool call, on every turn that touches a
 * file). A project folder on a network mount would block the event loop while it answers: see
 * the README's WORKSPACE_ROOT. File contents are still read asynchronously.
 */
export async function resolveWorkspacePath(workspaceRoot: string, projectId: string, requested: unknown): Promise<WorkspaceTarget> {
  const folder = projectFolder(workspaceRoot, projectId);
  const segments = lexicalSegments(requested);
  const relative = segments.length === 0 ? '.' : segments.join('/');
  const lexical = path.join(folder, ...segments);

  let root: string;
  try {
    root = realpathSync.native(folder);
  } catch (err) {
    if (code(err) === 'ENOENT') return { root: folder, rootExists: false, absolute: lexical, relative, exists: false };
    throw unresolvable(requested);
  }
  const rootStat = statOrNull(root);
  if (!rootStat?.isDirectory()) throw unresolvable(requested);
  // the folder itself ("." or a path that climbs back to it): its realpath was just taken
  if (segments.length === 0) return { root, rootExists: true, absolute: root, relative, exists: true };

  try {
    const real = realpathSync.native(lexical);
    if (!isInside(root, real)) throw escapeFailure(requested as string);
    return { root, rootExists: true, absolute: real, relative, exists: true };
  } catch (err) {
    if (err instanceof WorkspacePathError) throw err;
    if (code(err) !== 'ENOENT' && code(err) !== 'ENOTDIR') throw unresolvable(requested);
  }
  // missing target: its nearest existing parent must still be inside (a dangling `link/x` with link -> /etc is an escape)
  for (let i = segments.length - 1; i >= 0; i--) {
    const parent = path.join(folder, ...segments.slice(0, i));
    let realParent: string;
    try {
      realParent = realpathSync.native(parent);
    } catch (err) {
      if (code(err) === 'ENOENT' || code(err) === 'ENOTDIR') continue;
      throw unresolvable(requested);
    }
    if (!isInside(root, realParent)) throw escapeFailure(requested as string);
    // the next component exists but does not resolve: a dangling symlink (it may point anywhere); fail closed
    if (exists(path.join(realParent, segments[i]))) throw unresolvable(requested);
    return { root, rootExists: true, absolute: path.join(realParent, ...segments.slice(i)), relative, exists: false };
  }
  return { root, rootExists: true, absolute: lexical, relative, exists: false };
}

/** `target` is `root` itself or lies under `root + sep` (so `/w/proj-evil` is not inside `/w/proj`). */
export function isInside(root: string, target: string): boolean {
  if (target === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return target.startsWith(prefix);
}

/**
 * After opening: proves the open descriptor is the file that was checked, closing the window
 * between `realpath` and `open` (a path component swapped for a symlink). On Linux the
 * kernel's own name for the descriptor (/proc/self/fd/N) must lie inside the root; elsewhere
 * the path is resolved again and its device/inode must equal the descriptor's.
 */
export async function assertOpenedInside(fd: number, opened: Stats, target: WorkspaceTarget): Promise<void> {
  let procPath: string | null = null;
  try {
    procPath = await fs.readlink(`/proc/self/fd/${fd}`);
  } catch {
    procPath = null;
  }
  if (procPath !== null) {
    if (procPath !== target.absolute || !isInside(target.root, procPath)) throw changedFailure(target.relative);
    return;
  }
  let again: string;
  try {
    again = await fs.realpath(target.absolute);
  } catch {
    throw changedFailure(target.relative);
  }
  const st = await fs.stat(again).catch(() => null);
  if (!isInside(target.root, again) || !st || st.ino !== opened.ino || st.dev !== opened.dev) throw changedFailure(target.relative);
}

/**
 * Flags for opening a checked path: no following of a final-component symlink, and no
 * blocking on a FIFO planted in the workspace (O_NONBLOCK; the type is checked right after).
 */
export const SAFE_OPEN_FLAGS = fsConstants.O_RDONLY | (fsConstants.O_NOFOLLOW ?? 0) | (fsConstants.O_NONBLOCK ?? 0);

export function notFound(relative: string): WorkspacePathError {
  return new WorkspacePathError(`not found: "${relative}" does not exist in the project folder (list_files shows what exists)`, 'exception');
}

function escapeFailure(requested: string): WorkspacePathError {
  return new WorkspacePathError(`path "${requested}" leads outside the project folder; only files inside it can be used`);
}

function unresolvable(requested: unknown): WorkspacePathError {
  return new WorkspacePathError(`path "${String(requested)}" could not be resolved safely inside the project folder`);
}

function changedFailure(relative: string): WorkspacePathError {
  return new WorkspacePathError(`"${relative}" changed while it was being opened; refusing to read it`);
}

/** Whether anything (a dangling symlink included) is at `p`; an error answers no, as for a missing entry. */
function exists(p: string): boolean {
  return lstatOrNull(p) !== null;
}

/** lstat of `p` (the link itself), or null when it is missing or cannot be read; synchronous (see resolveWorkspacePath). */
export function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

function statOrNull(p: string): Stats | null {
  try {
    return statSync(p, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

/** realpath of `p`, or null when it does not resolve; synchronous (see resolveWorkspacePath). */
export function realpathOrNull(p: string): string | null {
  try {
    return realpathSync.native(p);
  } catch {
    return null;
  }
}

function code(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException)?.code;
}
