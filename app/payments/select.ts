import type { GetSecretValueCommandOutput } from '@aws-sdk/client-secrets-manager';
import { InternalError, isTransientAwsError, UnavailableError } from 'retrysafe/tools';
import type { LedgerPaymentProvider } from './ledger';
import type { PaymentProvider, ProviderRefund, RefundRequest } from './provider';
import type { StripeApiBase, StripePaymentProviderOptions } from './stripe';

/** The providers `PAYMENT_PROVIDER` may name. */
export const PAYMENT_PROVIDERS = ['ledger', 'stripe'] as const;
export type PaymentProviderName = (typeof PAYMENT_PROVIDERS)[number];

/**
 * Where the Stripe secret key comes from: the key itself (local runs, tests) or the ARN of a Secrets
 * Manager secret whose value is the key (deployments: the key never sits in the function's
 * configuration or the template). Exactly one.
 */
export type StripeKeySource =
  | { readonly key: string; readonly secretArn?: never }
  | { readonly secretArn: string; readonly key?: never };

/** Stripe's settings, read from the environment and checked up front. */
export interface StripeSettings {
  readonly keySource: StripeKeySource;
  readonly apiBase?: StripeApiBase;
}

/**
 * The payment provider the environment asks for, checked when the services are built (a misconfigured
 * deployment fails at start in every entry point, not at its first refund):
 *
 * - `PAYMENT_PROVIDER`: `ledger` (default: `ledger`, the DynamoDB stand-in) or `stripe`.
 * - `STRIPE_SECRET_KEY` or `STRIPE_SECRET_ARN` (with `stripe`): the key, or the Secrets Manager secret
 *   holding it.
 * - `STRIPE_API_BASE` (with `stripe`, optional): `http://127.0.0.1:12111`, for tests and stripe-mock.
 *
 * Stripe is loaded, and its secret read, on the first refund: the SDK weighs ~240 KB minified and most
 * entry points never refund, so they neither load it nor call Secrets Manager.
 */
export function createPaymentProvider(
  env: NodeJS.ProcessEnv,
  ledger: LedgerPaymentProvider,
  stripeOptions: StripePaymentProviderOptions = {},
): PaymentProvider {
  const name = env.PAYMENT_PROVIDER || 'ledger';
  if (name === 'ledger') return ledger;
  if (name === 'stripe') {
    const settings = stripeSettingsFrom(env);
    return new DeferredPaymentProvider(function loadStripe() {
      return stripeProvider(settings, stripeOptions);
    });
  }
  throw new Error(`PAYMENT_PROVIDER: ${JSON.stringify(name)} is not one of ${PAYMENT_PROVIDERS.join(', ')}`);
}

/** Stripe's settings from the environment; every problem is reported in one error. */
export function stripeSettingsFrom(env: NodeJS.ProcessEnv): StripeSettings {
  const problems: string[] = [];
  const key = env.STRIPE_SECRET_KEY || undefined;
  const secretArn = env.STRIPE_SECRET_ARN || undefined;
  if (key && secretArn) problems.push('set STRIPE_SECRET_KEY or STRIPE_SECRET_ARN, not both');
  if (!key && !secretArn) problems.push('STRIPE_SECRET_KEY or STRIPE_SECRET_ARN is required');
  // A publishable key (pk_) cannot refund; say so here rather than as a 401 at the first refund.
  if (key && !/^(sk|rk)_/.test(key)) problems.push('STRIPE_SECRET_KEY must be a secret (sk_) or restricted (rk_) key');
  if (secretArn && !secretArn.startsWith('arn:')) problems.push('STRIPE_SECRET_ARN must be a secret ARN');
  const apiBase = env.STRIPE_API_BASE ? apiBaseFrom(env.STRIPE_API_BASE) : undefined;
  if (typeof apiBase === 'string') problems.push(`STRIPE_API_BASE ${apiBase}`);
  if (problems.length > 0) throw new Error(`PAYMENT_PROVIDER=stripe: ${problems.join('; ')}`);
  return {
    keySource: key ? { key } : { secretArn: secretArn! },
    ...(typeof apiBase === 'object' ? { apiBase } : {}),
  };
}

/** `http://127.0.0.1:12111` as the SDK's settings, or what is wrong with it. */
function apiBaseFrom(value: string): StripeApiBase | string {
  const wanted = 'must be protocol, host and port, for example http://127.0.0.1:12111';
  if (!URL.canParse(value)) return wanted;
  const url = new URL(value);
  const protocol = url.protocol.slice(0, -1);
  if ((protocol !== 'http' && protocol !== 'https') || url.pathname !== '/' || url.search || url.hash) return wanted;
  const port = url.port ? Number(url.port) : protocol === 'https' ? 443 : 80;
  // Node's http takes an IPv6 host without its URL brackets.
  return { protocol, host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

async function stripeProvider(
  settings: StripeSettings,
  options: StripePaymentProviderOptions,
): Promise<PaymentProvider> {
  const apiKey = await stripeKey(settings.keySource);
  const { StripePaymentProvider, createStripeClient } = await import('./stripe');
  return new StripePaymentProvider(createStripeClient(apiKey, { apiBase: settings.apiBase }), options);
}

async function stripeKey(source: StripeKeySource): Promise<string> {
  if (source.key !== undefined) return source.key;
  const { GetSecretValueCommand, SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
  const secrets = new SecretsManagerClient({});
  let secret: GetSecretValueCommandOutput;
  try {
    secret = await secrets.send(new GetSecretValueCommand({ SecretId: source.secretArn }));
  } catch (error) {
    if (isTransientAwsError(error)) {
      throw new UnavailableError('the payment provider is unavailable; retry with the same key', { cause: error });
    }
    // A denied read or a missing secret: a deployment mistake, for the log.
    throw new InternalError(`STRIPE_SECRET_ARN: secret ${source.secretArn} could not be read`, { cause: error });
  } finally {
    secrets.destroy();
  }
  const key = secret.SecretString?.trim();
  if (!key) throw new InternalError(`STRIPE_SECRET_ARN: secret ${source.secretArn} holds no string value`);
  return key;
}

/**
 * A provider built on first use and kept for the life of the process. A build that failed (Secrets
 * Manager unreachable) is not kept: the next refund tries again.
 */
class DeferredPaymentProvider implements PaymentProvider {
  #provider: Promise<PaymentProvider> | undefined;

  constructor(private readonly build: () => Promise<PaymentProvider>) {}

  async refund(request: RefundRequest): Promise<ProviderRefund> {
    this.#provider ??= this.build().catch((error: unknown) => {
      this.#provider = undefined;
      throw error;
    });
    return (await this.#provider).refund(request);
  }
}
