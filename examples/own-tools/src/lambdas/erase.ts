import { eraseEntry } from 'retrysafe/lambda/erase';
import { TABLES } from '../tables';

export const handler = eraseEntry(TABLES);
