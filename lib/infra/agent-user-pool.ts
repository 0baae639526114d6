import { Duration, Fn, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import { Construct } from 'constructs';
import { USER_POOL_DEFAULTS } from './defaults';

export interface AgentUserPoolProps {
  /**
   * What becomes of the pool when the stack is deleted. Its app clients' ids are the tenants of the data in
   * the tables: a new pool has new clients, so new tenants.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * A Cognito user pool where agent runtimes log in as machines: the OAuth client-credentials grant at the
 * pool domain's token endpoint, for a resource server's scopes, with one app client (id and secret) that
 * is one tenant.
 *
 * The tenant is the token's `client_id`, which Cognito writes from the client that authenticated: the
 * client cannot set it, and no user can sign in through the client (client credentials only, no user
 * auth flows), so nothing can be written through it either. The pool has no self sign-up and no tenant
 * attribute a user could write.
 */
export class AgentUserPool extends Construct {
  public readonly userPool: cognito.UserPool;
  public readonly resourceServer: cognito.UserPoolResourceServer;
  public readonly domain: cognito.UserPoolDomain;
  /** The agents' app client: client credentials with a secret, the resource server's scopes. */
  public readonly agentClient: cognito.UserPoolClient;
  /** The issuer (`iss`) of the pool's tokens: `https://cognito-idp.<region>.amazonaws.com/<pool id>`. */
  public readonly issuer: string;
  /**
   * Whom tokens must be issued to: the agents' client id. A Cognito access token names it in
   * `client_id`, not `aud`; API Gateway's JWT authorizer and the MCP function check `client_id` then.
   */
  public readonly audience: string;
  /** The claim that names the tenant: `client_id`. */
  public readonly tenantClaim: string = USER_POOL_DEFAULTS.tenantClaim;
  /** Where agents get a token: the pool domain's `/oauth2/token`. */
  public readonly tokenUrl: string;
  /** The scopes the agents' client may ask for, as tokens name them (`retrysafe/tools`). */
  public readonly scopes: readonly string[];

  constructor(scope: Construct, id: string, props: AgentUserPoolProps = {}) {
    super(scope, id);
    this.userPool = new cognito.UserPool(this, 'Pool', {
      // Essentials is Cognito's plan for a new pool; machines are priced per client and per token on
      // every plan. It also allows access-token customization, should a pre-token trigger be added.
      featurePlan: cognito.FeaturePlan.ESSENTIALS,
      selfSignUpEnabled: false,
      // No user signs in today; should an operator add users, they get a strong password policy.
      passwordPolicy: {
        minLength: 12,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
      },
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    Validations.of(this.userPool).acknowledge(
      {
        id: 'AwsSolutions-COG2',
        reason:
          'MFA applies to users signing in; this pool has no users and no self sign-up: agents log in with the client-credentials grant.',
      },
      {
        id: 'AwsSolutions-COG8',
        reason:
          'The Plus plan adds threat protection for user sign-ins; this pool has no users and no self sign-up, only a client-credentials client.',
      },
    );
    const scopes = USER_POOL_DEFAULTS.scopes.map(
      (scope) => new cognito.ResourceServerScope({ scopeName: scope.name, scopeDescription: scope.description }),
    );
    this.resourceServer = this.userPool.addResourceServer('Tools', {
      identifier: USER_POOL_DEFAULTS.resourceServerId,
      scopes,
    });
    // A prefix domain is unique per region across every account: the stack's own id (its UUID's first
    // group, known only at deploy) keeps two stacks, or two accounts, apart.
    const stackUuid = Fn.select(2, Fn.split('/', Stack.of(this).stackId));
    this.domain = this.userPool.addDomain('Domain', {
      cognitoDomain: {
        domainPrefix: Fn.join('-', [USER_POOL_DEFAULTS.domainPrefix, Fn.select(0, Fn.split('-', stackUuid))]),
      },
    });
    this.agentClient = this.userPool.addClient('AgentClient', {
      generateSecret: true,
      // Client credentials only. `authFlows` names no user flow: Cognito gets ALLOW_REFRESH_TOKEN_AUTH alone,
      // and the client credentials grant issues no refresh token.
      authFlows: { user: false },
      oAuth: {
        flows: { clientCredentials: true },
        scopes: scopes.map((scope) => cognito.OAuthScope.resourceServer(this.resourceServer, scope)),
      },
      accessTokenValidity: Duration.minutes(USER_POOL_DEFAULTS.accessTokenValidityMinutes),
    });
    this.scopes = scopes.map((scope) => `${USER_POOL_DEFAULTS.resourceServerId}/${scope.scopeName}`);
    // `ProviderURL` is the issuer without its scheme (`cognito-idp.<region>.amazonaws.com/<pool id>`).
    this.issuer = `https://${this.userPool.userPoolProviderUrl}`;
    this.audience = this.agentClient.userPoolClientId;
    this.tokenUrl = `${this.domain.baseUrl()}/oauth2/token`;
  }
}
