/**
 * The environment variable that names the recheck queue (the construct sets it on the completer). Plain
 * data, apart from the queue's code: the construct reads it at synth without loading the SQS client.
 */
export const RECHECK_QUEUE_URL_VAR = 'RECHECK_QUEUE_URL';
