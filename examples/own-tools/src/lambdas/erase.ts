import { eraseEntry } from 'retrysafe/lambda/erase';
import { TABLES } from '../tables';
import { TOOLS } from '../tools';

// A table waits only for the calls in flight whose tools access it (their `access` declarations).
export const handler = eraseEntry(TABLES, process.env, TOOLS);
