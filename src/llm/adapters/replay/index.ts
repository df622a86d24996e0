import { answerTranscript } from './answer.transcript';
import { listFilesFirstTranscript } from './list-files-first.transcript';
import type { ReplayTranscript } from './replay-transcript';

export type { ReplayContext, ReplayReply, ReplayTranscript } from './replay-transcript';
export { readReplayContext } from './replay-transcript';

/** The bundled transcripts, most specific first; the first that matches answers. */
export const DEFAULT_REPLAY_TRANSCRIPTS: readonly ReplayTranscript[] = [listFilesFirstTranscript, answerTranscript];
