import { OrionException } from '../common/errors/orion.exception';

export enum KnowledgeExceptionCode {
  /** the path leaves the project folder, is absolute, or cannot be resolved safely */
  INVALID_PATH = 'knowledge_invalid_path',
  /** the project folder, or the path inside it, does not exist */
  PATH_NOT_FOUND = 'knowledge_path_not_found',
}

/** Errors of the knowledge base that a client causes (AllExceptionsFilter maps them to 4xx). */
export class KnowledgeException extends OrionException<KnowledgeExceptionCode> {
  httpStatus(): number {
    switch (this.code) {
      case KnowledgeExceptionCode.INVALID_PATH:
        return 400;
      case KnowledgeExceptionCode.PATH_NOT_FOUND:
        return 404;
    }
  }
}
