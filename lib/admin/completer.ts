import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { Completer, type ToolRuntime } from '../idempotency';
import type { Services } from '../services';
import { IDEMPOTENCY_ATTRIBUTES, tableName } from '../store/tables';
import type { AnyToolModule } from '../tools/tool-module';

/** What the completer is built from: the process's services, its runtime, the registry's tools. */
export interface CompleterComposition {
  readonly services: Services;
  readonly runtime: ToolRuntime;
  readonly tools: readonly AnyToolModule[];
  readonly streams: DynamoDBStreamsClient;
}

/** The completer over this app's idempotency table, able to finish a call of any registered tool. */
export function createCompleter(
  { services, runtime, tools, streams }: CompleterComposition,
  env: NodeJS.ProcessEnv = process.env,
): Completer {
  return new Completer({
    client: services.client,
    streams,
    runtime,
    tools: tools.map((tool) => tool.bind(services)),
    tableName: tableName('idempotency', env),
    attributes: IDEMPOTENCY_ATTRIBUTES,
    logger: services.logger,
    // The stack names the stream; locally it is listed by table name.
    ...(env.IDEMPOTENCY_STREAM_ARN ? { streamArn: env.IDEMPOTENCY_STREAM_ARN } : {}),
  });
}
