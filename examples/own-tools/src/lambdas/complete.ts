import { completerEntry } from 'retrysafe/lambda/completer';
import { services } from '../services';
import { TOOLS } from '../tools';

export const handler = completerEntry(TOOLS, services);
