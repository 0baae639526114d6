import { toolEntry } from 'retrysafe/lambda/tool';
import { services } from '../services';
import { pushContact } from '../tools/push-contact';

export const handler = toolEntry(pushContact, services);
