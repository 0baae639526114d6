// zod/mini (chosen for Lambda bundle size) ships no messages: load English once, where input is parsed.

import { en } from 'zod/locales';
import { config } from 'zod/mini';

config(en());
