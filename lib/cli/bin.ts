#!/usr/bin/env node
// The package's `retrysafe` command (package.json `bin`): `retrysafe dev | token | calls | complete | erase`.
import { runCli } from './main';

runCli();
