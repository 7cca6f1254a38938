/** A statement's call as its commits see it: a transaction commits only while the client is there (live-call.ts). */
export {
  beforeCommitPoint,
  checkLive,
  clientGone,
  liveSignal,
  liveSteps,
  regardlessOfClient,
  whileLive,
  type LiveCall,
} from './live-call.js';
/** An AbortController that follows another signal (AbortSignal.any without its composite). */
export { followSignal } from './follow-signal.js';
