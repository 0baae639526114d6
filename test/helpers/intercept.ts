import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * Runs `act` once, just before the next `command` (e.g. `'UpdateItemCommand'`) whose input `when` accepts
 * is sent through `client`: the world changing between two requests of one operation (a takeover between
 * a read and a write, a store that fails). The command is sent after it — unless `act` throws, which is
 * then that command's failure. Through `client`'s middleware, so what `act` sends itself is not caught.
 */
export function beforeNext(
  client: DynamoDBClient,
  command: string,
  act: (input: Record<string, unknown>) => Promise<unknown> | undefined,
  when: (input: Record<string, unknown>) => boolean = () => true,
): void {
  const name = `before-next-${randomUUID()}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      if (context.commandName === command && when(input)) {
        client.middlewareStack.remove(name);
        await act(input);
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
}

/** An error as the AWS SDK raises a throttled request: transient (`isTransientAwsError`). */
export function throttled(): Error {
  return Object.assign(new Error('Rate exceeded'), {
    name: 'ThrottlingException',
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
  });
}
