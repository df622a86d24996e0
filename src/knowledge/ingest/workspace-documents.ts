import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { SAFE_OPEN_FLAGS, assertOpenedInside, isInside, type WorkspaceTarget } from '../../common/workspace/workspace-path.util';
import { docTypeOf, type DocType } from '../chunking/doc-type';

/** A file the knowledge base can index. */
export interface FoundDocument {
  /** relative to the project folder, `/`-separated */
  relative: string;
  /** real path */
  absolute: string;
  docType: DocType;
}

/**
 * Why a file was not indexed:
 * - `unsupported_type`: not a document type the knowledge base reads (only when named explicitly;
 *   during a walk such files are ignored silently, like dotfiles and node_modules);
 * - `symlink`: symlinks are never followed, wherever they point;
 * - `hardlink`: a file with more than one hard link may be a file from outside the project that
 *   a path check cannot tell apart (FILE_ALLOW_HARDLINKS=true indexes it);
 * - `too_large`: over INGEST_MAX_FILE_BYTES; `binary`: contains NUL bytes;
 * - `unreadable`: permission denied, not a regular file, or changed while being opened;
 * - `too_deep`: a folder nested deeper than INGEST_MAX_DEPTH; `limit`: beyond INGEST_MAX_FILES.
 */
export type SkipReason = 'unsupported_type' | 'symlink' | 'hardlink' | 'too_large' | 'binary' | 'unreadable' | 'too_deep' | 'limit';

export interface SkippedFile {
  path: string;
  reason: SkipReason;
}

/** Documentation files are far smaller; anything over 1 MiB is most likely generated or a dump. */
export const INGEST_MAX_FILE_BYTES = 1_048_576;
/** Files indexed per ingest; a project with more is ingested folder by folder. */
export const INGEST_MAX_FILES = 5_000;
/** Folder depth walked below the ingested path. */
export const INGEST_MAX_DEPTH = 32;
/** Folders never walked into (besides every name starting with `.`). */
export const IGNORED_FOLDERS: ReadonlySet<string> = new Set(['node_modules']);

/**
 * The documents at `target` (a checked path inside the project, see resolveWorkspacePath): the
 * file itself, or every supported file below the folder, in name order. Dotfiles, dot-folders
 * and node_modules are not walked; symlinks are reported and never followed, so the walk cannot
 * leave the real project folder.
 */
export async function findDocuments(target: WorkspaceTarget, signal?: AbortSignal): Promise<{ documents: FoundDocument[]; skipped: SkippedFile[] }> {
  const documents: FoundDocument[] = [];
  const skipped: SkippedFile[] = [];
  const rel = (abs: string) => path.relative(target.root, abs).split(path.sep).join('/') || '.';

  const st = await fs.lstat(target.absolute);
  if (!st.isDirectory()) {
    const docType = docTypeOf(target.absolute);
    if (!st.isFile()) skipped.push({ path: rel(target.absolute), reason: 'unreadable' });
    else if (!docType) skipped.push({ path: rel(target.absolute), reason: 'unsupported_type' });
    else documents.push({ relative: rel(target.absolute), absolute: target.absolute, docType });
    return { documents, skipped };
  }

  const walk = async (dir: string, depth: number): Promise<void> => {
    signal?.throwIfAborted();
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch {
      skipped.push({ path: rel(dir), reason: 'unreadable' });
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const abs = path.join(dir, entry.name);
      if (!isInside(target.root, abs)) continue;
      if (entry.isSymbolicLink()) {
        skipped.push({ path: rel(abs), reason: 'symlink' });
      } else if (entry.isDirectory()) {
        if (IGNORED_FOLDERS.has(entry.name)) continue;
        if (depth >= INGEST_MAX_DEPTH) skipped.push({ path: rel(abs), reason: 'too_deep' });
        else await walk(abs, depth + 1);
      } else if (entry.isFile()) {
        const docType = docTypeOf(entry.name);
        if (!docType) continue;
        if (documents.length >= INGEST_MAX_FILES) skipped.push({ path: rel(abs), reason: 'limit' });
        else documents.push({ relative: rel(abs), absolute: abs, docType });
      }
    }
  };
  await walk(target.absolute, 0);
  return { documents, skipped };
}

/**
 * Reads a found document, or says why it cannot be indexed. The file is opened without following
 * a final symlink and the open descriptor is proven to be the checked file inside the project
 * (assertOpenedInside) before anything is read.
 */
export async function readDocument(doc: FoundDocument, root: string, opts: { allowHardLinks?: boolean } = {}): Promise<{ bytes: Buffer } | { skip: SkipReason }> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(doc.absolute, SAFE_OPEN_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { skip: code === 'ELOOP' || code === 'EMLINK' ? 'symlink' : 'unreadable' };
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) return { skip: 'unreadable' };
    if (st.nlink > 1 && !opts.allowHardLinks) return { skip: 'hardlink' };
    if (st.size > INGEST_MAX_FILE_BYTES) return { skip: 'too_large' };
    const target: WorkspaceTarget = { root, rootExists: true, absolute: doc.absolute, relative: doc.relative, exists: true };
    await assertOpenedInside(handle.fd, st, target);
    // read at most one byte past the limit: the file may have grown since fstat
    const buf = Buffer.alloc(Math.min(st.size, INGEST_MAX_FILE_BYTES) + 1);
    let filled = 0;
    while (filled < buf.length) {
      const { bytesRead } = await handle.read(buf, filled, buf.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    if (filled > INGEST_MAX_FILE_BYTES) return { skip: 'too_large' };
    const bytes = buf.subarray(0, filled);
    // PostgreSQL text cannot hold NUL; a NUL byte also marks a binary file (git's and grep's test)
    if (bytes.includes(0)) return { skip: 'binary' };
    return { bytes };
  } catch {
    // changed while being opened (assertOpenedInside), or an I/O error: never fatal to the ingest
    return { skip: 'unreadable' };
  } finally {
    await handle.close().catch(() => undefined);
  }
}
