import type * as z from 'zod/mini';
import type { GatewayLambdaHandler } from '../agentcore/caller';
import { callerKeyFromEnv } from '../agentcore/caller-key';
import { gatewayReads } from '../agentcore/read';
import { readHandler } from '../http/reads';
import type { ReadModule } from '../tools/read-module';
import { type ComposeServices, processServices } from './core-services';

/**
 * `GET <path>` of one of the app's own reads (`defineReadModule`), bound to the services `compose` builds:
 * its path parameters are its arguments, the caller comes from the token API Gateway verified. Behind an
 * AgentCore Gateway (`agentCoreGateway`: `RETRYSAFE_AGENTCORE_TARGET`), the same handler is the read's
 * Lambda target.
 */
export function readEntry<Svc>(
  read: ReadModule<string, z.ZodMiniObject, z.ZodMiniObject, Svc>,
  compose: ComposeServices<Svc>,
  env: NodeJS.ProcessEnv = process.env,
): GatewayLambdaHandler {
  const core = processServices(env);
  // As `toolEntry`: the construct folds `process.env.RETRYSAFE_AGENTCORE_TARGET` into each bundle.
  const gateway = process.env.RETRYSAFE_AGENTCORE_TARGET === 'true' ? gatewayReads(callerKeyFromEnv(env)) : undefined;
  return readHandler(read, compose(core), core.logger, gateway);
}
