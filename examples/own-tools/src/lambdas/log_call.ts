import { toolEntry } from 'retrysafe/lambda/tool';
import { services } from '../services';
import { logCall } from '../tools/log-call';

export const handler = toolEntry(logCall, services);
