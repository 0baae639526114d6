import { toolEntry } from 'retrysafe/lambda/tool';
import { services } from '../services';
import { openAccount } from '../tools/open-account';

export const handler = toolEntry(openAccount, services);
