import { answerTranscript } from './answer.transcript';
import { knowledgeTranscript } from './knowledge.transcript';
import { projectFilesTranscript } from './project-files.transcript';
import type { ReplayTranscript } from './replay-transcript';
import { toolDecisionTranscript } from './tool-decision.transcript';

export type { ReplayContext, ReplayReply, ReplayToolResult, ReplayTranscript } from './replay-transcript';
export { readReplayContext } from './replay-transcript';
export { listFilesFirstTranscript } from './list-files-first.transcript';

/**
 * The bundled transcripts, most specific first; the first that matches answers. A tool-only
 * decision calls the tool its request names (`tool-decision.transcript.ts`). A question
 * about the project's files chains list_files → read_file → answer; a knowledge question calls
 * rag_query → answer; anything else is answered directly. (`listFilesFirstTranscript`, the
 * walking skeleton's "always list first", is kept for custom lists but no longer a default:
 * plain questions get a direct answer.)
 */
export const DEFAULT_REPLAY_TRANSCRIPTS: readonly ReplayTranscript[] = [toolDecisionTranscript, projectFilesTranscript, knowledgeTranscript, answerTranscript];
