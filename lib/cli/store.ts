import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DevError } from '../dev/dev-error';
import { outputValues, tableOutputId } from '../infra/output-names';
import { type CoreServices, createCoreServices } from '../lambda/core-services';
import { IDEMPOTENCY_TABLE, type TableSchema, tableEnvVar } from '../store/tables';
import { UsageError } from './args';

/** What a running `retrysafe dev` leaves for the operations commands: how to reach its DynamoDB Local. */
interface DevState {
  readonly pid: number;
  readonly endpoint: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly region: string;
  readonly tables: Readonly<Record<string, string>>;
}

/** The file a running `retrysafe dev` writes in the app's `.local/` (readable by this user only). */
export function devStateFile(cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(cwd, env.DEV_KEY_DIR || '.local', 'dev-store.json');
}

export function writeDevState(file: string, state: DevState): void {
  mkdirSync(resolve(file, '..'), { recursive: true, mode: 0o700 });
  writeFileSync(file, JSON.stringify(state), { mode: 0o600 });
}

export function removeDevState(file: string, pid: number): void {
  try {
    if ((JSON.parse(readFileSync(file, 'utf8')) as DevState).pid === pid) rmSync(file, { force: true });
  } catch {
    // gone already
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The state a running `retrysafe dev` left, or undefined when none runs. */
function runningDev(file: string): DevState | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as DevState;
    return alive(state.pid) ? state : undefined;
  } catch {
    return undefined;
  }
}

/** What an operations command says when it was given no store and found no running `retrysafe dev`. */
function noDevFound(cwd: string, env: NodeJS.ProcessEnv): string {
  return (
    `no running retrysafe dev found (no live one recorded in ${devStateFile(cwd, env)}): start \`npx retrysafe dev\` ` +
    'in this directory and run this again from a second terminal; or name the store: DYNAMODB_ENDPOINT for ' +
    'a DynamoDB of yours, --aws --region R for the deployed tables'
  );
}

/** Flags every operations command takes to name its store. */
export const STORE_FLAGS = {
  aws: { type: 'boolean' },
  region: { type: 'string' },
  outputs: { type: 'string' },
  table: { type: 'string', multiple: true },
} as const;

export const STORE_USAGE = `Where (in this order):
  DYNAMODB_ENDPOINT set        that DynamoDB (with AWS_ACCESS_KEY_ID as its key)
  a running retrysafe dev      its DynamoDB Local (found in .local/dev-store.json)
  --aws, or neither            AWS: region from --region or AWS_REGION, credentials from the SDK's chain
Table names (AWS): --outputs FILE (cdk deploy --outputs-file: IdempotencyTableName, <Name>TableName),
  --table NAME=PHYSICAL (repeatable; NAME is idempotency or a table of the config), or IDEMPOTENCY_TABLE
  and <NAME>_TABLE in the environment.`;

/** The store an operations command works on, announced in `where`. */
export interface Store {
  readonly core: CoreServices;
  readonly env: NodeJS.ProcessEnv;
  readonly where: string;
  readonly idempotencyTable: string;
}

/**
 * `--outputs`: a `cdk deploy --outputs-file` JSON, `{ Stack: { IdempotencyTableName, AccountsTableName } }`
 * — at the stack's top (this repository's stack) or under the `Retrysafe` construct's path and hash.
 */
function tablesFromOutputs(file: string, names: readonly string[]): Record<string, string> {
  let outputs: Record<string, Record<string, string>>;
  try {
    outputs = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new DevError(`--outputs: cannot read ${file}: ${(error as Error).message}`);
  }
  const found: Record<string, string> = {};
  for (const name of ['idempotency', ...names]) {
    const values = [...new Set(outputValues(outputs, tableOutputId(name)))];
    if (values.length > 1) {
      throw new DevError(
        `--outputs: ${file} names ${values.length} tables for ${name} (${values.join(', ')}): pass --table ${name}=PHYSICAL`,
      );
    }
    if (values[0]) found[name] = values[0];
  }
  return found;
}

/**
 * The store the flags and the environment name. Every table's name lands in `<NAME>_TABLE` of the
 * returned environment, as the construct sets it on a function.
 */
export function openStore(
  values: { aws?: boolean; region?: string; outputs?: string; table?: string[] },
  tables: Readonly<Record<string, TableSchema>>,
  usage: string,
  cwd: string,
  baseEnv: NodeJS.ProcessEnv = process.env,
): Store {
  const env: NodeJS.ProcessEnv = { ...baseEnv, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
  env.POWERTOOLS_LOG_LEVEL ||= 'WARN';
  env.POWERTOOLS_METRICS_DISABLED ||= 'true';
  const named: Record<string, string> = {};
  if (values.outputs) Object.assign(named, tablesFromOutputs(values.outputs, Object.keys(tables)));
  for (const pair of values.table ?? []) {
    const [name, physical] = pair.split('=', 2);
    if (!name || !physical) throw new UsageError(`--table: "${pair}" is not NAME=PHYSICAL`, usage);
    if (name !== 'idempotency' && !Object.hasOwn(tables, name)) {
      throw new UsageError(
        `--table: ${name} is not a table of the config (${['idempotency', ...Object.keys(tables)].join(', ')})`,
        usage,
      );
    }
    named[name] = physical;
  }
  let where: string;
  const dev = values.aws || env.DYNAMODB_ENDPOINT ? undefined : runningDev(devStateFile(cwd, env));
  if (values.aws) delete env.DYNAMODB_ENDPOINT;
  if (env.DYNAMODB_ENDPOINT) {
    env.AWS_REGION ||= 'us-east-1';
    where = `DynamoDB at ${env.DYNAMODB_ENDPOINT}`;
  } else if (dev) {
    env.DYNAMODB_ENDPOINT = dev.endpoint;
    env.AWS_ACCESS_KEY_ID = dev.accessKeyId;
    env.AWS_SECRET_ACCESS_KEY = dev.secretAccessKey;
    env.AWS_REGION = dev.region;
    delete env.AWS_SESSION_TOKEN;
    for (const [name, physical] of Object.entries(dev.tables)) named[name] ??= physical;
    where = `retrysafe dev's DynamoDB Local (pid ${dev.pid}, ${dev.endpoint})`;
  } else {
    if (values.region) env.AWS_REGION = values.region;
    if (!env.AWS_REGION) {
      if (values.aws) throw new UsageError('--aws: no region (--region, or AWS_REGION)', usage);
      throw new DevError(noDevFound(cwd, env));
    }
    where = `AWS, ${env.AWS_REGION}`;
  }
  for (const [name, physical] of Object.entries(named))
    env[name === 'idempotency' ? IDEMPOTENCY_TABLE.envVar : tableEnvVar(name)] = physical;
  // Locally a table has its default name; on AWS every name must be given.
  const local = env.DYNAMODB_ENDPOINT !== undefined;
  const missing: string[] = [];
  if (!env[IDEMPOTENCY_TABLE.envVar]) {
    if (local) env[IDEMPOTENCY_TABLE.envVar] = IDEMPOTENCY_TABLE.defaultName;
    else missing.push('idempotency (IDEMPOTENCY_TABLE)');
  }
  for (const [name, schema] of Object.entries(tables)) {
    if (env[tableEnvVar(name)]) continue;
    if (local) env[tableEnvVar(name)] = schema.defaultName ?? name;
    else missing.push(`${name} (${tableEnvVar(name)})`);
  }
  if (missing.length > 0) {
    const names = `no name for the tables ${missing.join(', ')}: --outputs FILE, --table NAME=PHYSICAL, or the variables`;
    // Without --aws, AWS was only the fallback: the dev server the user meant to reach is what is missing.
    if (!values.aws) throw new DevError(`${noDevFound(cwd, env)}\n(for AWS, ${env.AWS_REGION}: ${names})`);
    throw new UsageError(`AWS: ${names}`, usage);
  }
  const core = createCoreServices(env, {
    ...(env.AWS_REGION ? { region: env.AWS_REGION } : {}),
    ...(local && env.AWS_ACCESS_KEY_ID
      ? { credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY || 'local' } }
      : {}),
  });
  return { core, env, where, idempotencyTable: env[IDEMPOTENCY_TABLE.envVar]! };
}
