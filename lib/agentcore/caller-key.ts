/**
 * The environment variable naming the Secrets Manager secret that holds the key the gateway's interceptor
 * signs callers with and the gateway's functions check them with (set by the construct on exactly those
 * functions, each granted to read it).
 */
export const CALLER_KEY_SECRET_VAR = 'RETRYSAFE_CALLER_KEY_SECRET';

/** The signing key, read on first use. */
export type CallerKey = () => Promise<string>;

/**
 * The signing key from the secret `RETRYSAFE_CALLER_KEY_SECRET` names, read from Secrets Manager on the
 * first gateway call and kept for the life of the process; a read that failed is not kept (the next call
 * tries again). What fails is thrown as it is, before anything runs, and the handler's error boundary
 * answers it: `unavailable` when Secrets Manager is unreachable, else `internal` (unset, denied, missing:
 * a deployment mistake, logged).
 */
export function callerKeyFromEnv(env: NodeJS.ProcessEnv = process.env): CallerKey {
  let key: Promise<string> | undefined;
  return function callerKey() {
    key ??= readCallerKey(env[CALLER_KEY_SECRET_VAR]).catch((error: unknown) => {
      key = undefined;
      throw error;
    });
    return key;
  };
}

async function readCallerKey(secretId: string | undefined): Promise<string> {
  if (!secretId) throw new Error(`${CALLER_KEY_SECRET_VAR} is not set: no key to check a gateway call's caller with`);
  const { GetSecretValueCommand, SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
  const secrets = new SecretsManagerClient({});
  try {
    const { SecretString } = await secrets.send(new GetSecretValueCommand({ SecretId: secretId }));
    if (!SecretString) throw new Error(`${CALLER_KEY_SECRET_VAR}: secret ${secretId} holds no string value`);
    return SecretString;
  } finally {
    secrets.destroy();
  }
}
