import { codedException } from '../common/errors/orion.exception';

export enum KnowledgeExceptionCode {
  /** the path leaves the project folder, is absolute, or cannot be resolved safely */
  INVALID_PATH = 'knowledge_invalid_path',
  /** the project folder, or the path inside it, does not exist */
  PATH_NOT_FOUND = 'knowledge_path_not_found',
}

const KNOWLEDGE_STATUS: Record<KnowledgeExceptionCode, number> = {
  [KnowledgeExceptionCode.INVALID_PATH]: 400,
  [KnowledgeExceptionCode.PATH_NOT_FOUND]: 404,
};

/** Errors of the knowledge base that a client causes (AllExceptionsFilter maps them to 4xx). */
export class KnowledgeException extends codedException(KNOWLEDGE_STATUS) {}
