import type { ReplayContext, ReplayReply, ReplayTranscript } from './replay-transcript';
import { errorMessageOf, excerpt, lastResultOf, pickFile, resultObject, textFilesIn, wantsProjectFiles } from './replay-text.util';

/** How much of the file the answer quotes. */
const FILE_QUOTE_CHARS = 300;
/** File names the "nothing to read" answer lists. */
const LISTED_NAMES = 8;

const DEMO = '[replay] This is a recorded demo reply, not a real model.';

/**
 * A chained turn (issue #5, item 9): a question about the project's files (it names a path or
 * a file, or says files/folder/list/readme) makes the replay model call `list_files` on the
 * whole project, then `read_file` on the Markdown or text file the question names — else the
 * first one listed — then answer quoting that file. It needs both tools offered to start;
 * once started it finishes from whatever results it has (a forced final answer, toolChoice
 * `none`, gets text). Works on both routes: tool messages (unified) and "[Tool result #N …]"
 * system messages (two-stage, one call per step).
 */
export const projectFilesTranscript: ReplayTranscript = {
  name: 'project-files',
  matches: (ctx) =>
    lastResultOf(ctx, 'list_files') !== undefined ||
    lastResultOf(ctx, 'read_file') !== undefined ||
    (wantsProjectFiles(ctx.question) && ctx.callableTools.includes('list_files') && ctx.callableTools.includes('read_file') && ctx.toolResults.length === 0),
  reply: (ctx) => {
    const read = lastResultOf(ctx, 'read_file');
    if (read) {
      const o = resultObject(read);
      const path = typeof o?.path === 'string' ? o.path : 'the file';
      if (read.isError) return { text: `${DEMO} I listed the project's files and tried to read ${path}, but the tool failed: ${errorMessageOf(read)}` };
      const content = typeof o?.content === 'string' ? o.content : read.content;
      return { text: `${DEMO} I listed the project's files and read ${path}. It says: "${excerpt(content, FILE_QUOTE_CHARS)}"` };
    }
    const listing = lastResultOf(ctx, 'list_files');
    if (!listing) return { toolCalls: [{ name: 'list_files', arguments: { path: '.', recursive: true } }] };
    if (listing.isError) return { text: `${DEMO} I tried to list the project's files, but the tool failed: ${errorMessageOf(listing)}` };
    return readNext(ctx, textFilesIn(listing), listing.content);
  },
};

function readNext(ctx: ReplayContext, files: string[], listingText: string): ReplayReply {
  const file = pickFile(ctx.question, files);
  if (file && ctx.callableTools.includes('read_file')) return { toolCalls: [{ name: 'read_file', arguments: { path: file } }] };
  if (file) return { text: `${DEMO} The project has ${files.length} Markdown or text file(s), starting with ${files.slice(0, LISTED_NAMES).join(', ')}.` };
  const o = resultObject({ content: listingText, isError: false });
  const entries = Array.isArray(o?.entries) ? (o.entries as Array<{ path?: unknown }>).map((e) => String(e.path)) : undefined;
  const shown = entries ? entries.slice(0, LISTED_NAMES).join(', ') + (entries.length > LISTED_NAMES ? ', …' : '') : excerpt(listingText, 200);
  return {
    text: shown
      ? `${DEMO} I listed the project's files (${shown}) but found no Markdown or text file to read.`
      : `${DEMO} I listed the project's files: the folder has no Markdown or text file to read.`,
  };
}
