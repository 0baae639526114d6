import { join } from 'node:path';
import { Annotations, CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpNoneAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { DEFAULT_ROUTE_LAMBDA, ROUTES } from '../api/routes';
import { TABLES, type TableId } from '../store/tables';
import {
  ACCESS_LOG_RETENTION_DAYS,
  BUNDLING,
  FUNCTION_ACCESS,
  FUNCTION_DEFAULTS,
  JWT_DEFAULTS,
  STAGE_THROTTLE,
} from './defaults';
import { KeyStore } from './key-store';
import { tableFromDefinition } from './table';

const PROJECT_ROOT = join(__dirname, '..', '..');

export interface RetrysafeStackProps extends StackProps {
  /**
   * The OIDC issuer the JWT authorizer trusts (for Cognito: `https://cognito-idp.<region>.amazonaws.com/<pool id>`).
   * @default JWT_DEFAULTS.issuer — a placeholder that lets the stack synthesize; set it to deploy
   */
  readonly issuer?: string;
  /**
   * The audience (`aud`) tokens must carry (for Cognito: the app client id).
   * @default 'retrysafe'
   */
  readonly audience?: string;
  /**
   * The claim that names the tenant.
   * @default 'tenant_id'
   */
  readonly tenantClaim?: string;
  /**
   * Delete the tables and their data with the stack.
   * @default false (tables are retained)
   */
  readonly destroyTablesOnRemoval?: boolean;
}

/**
 * retrysafe on AWS: one Lambda per tool and per read behind an HTTP API with a JWT authorizer, the
 * idempotency key store and the domain tables in DynamoDB. Routes, tables and each function's access
 * all come from shared definitions (`lib/api/routes.ts`, `lib/store/tables.ts`, `./defaults.ts`).
 */
export class RetrysafeStack extends Stack {
  public readonly keyStore: KeyStore;
  public readonly tables: Readonly<Record<Exclude<TableId, 'idempotency'>, dynamodb.Table>>;
  public readonly functions: Readonly<Record<string, NodejsFunction>>;
  public readonly api: apigw.HttpApi;

  constructor(scope: Construct, id: string, props: RetrysafeStackProps = {}) {
    super(scope, id, props);
    const removalPolicy = props.destroyTablesOnRemoval ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
    const tenantClaim = props.tenantClaim ?? JWT_DEFAULTS.tenantClaim;

    this.keyStore = new KeyStore(this, 'KeyStore', { destroyOnRemoval: props.destroyTablesOnRemoval });
    this.tables = {
      invoices: tableFromDefinition(this, 'Invoices', TABLES.invoices, { removalPolicy }),
      tickets: tableFromDefinition(this, 'Tickets', TABLES.tickets, { removalPolicy }),
      outbox: tableFromDefinition(this, 'Outbox', TABLES.outbox, { removalPolicy }),
      ledger: tableFromDefinition(this, 'Ledger', TABLES.ledger, { removalPolicy }),
    };
    const environment: Record<string, string> = {
      [TABLES.idempotency.envVar]: this.keyStore.table.tableName,
      ...Object.fromEntries(
        (Object.keys(this.tables) as Array<keyof typeof this.tables>).map((table) => [
          TABLES[table].envVar,
          this.tables[table].tableName,
        ]),
      ),
      TENANT_CLAIM: tenantClaim,
      POWERTOOLS_SERVICE_NAME: FUNCTION_DEFAULTS.serviceName,
      NODE_OPTIONS: '--enable-source-maps',
    };

    const functions: Record<string, NodejsFunction> = {};
    for (const [name, access] of Object.entries(FUNCTION_ACCESS)) {
      const fn = this.#function(name, environment);
      if (access.keyStore === 'claims') this.keyStore.grantClaims(fn);
      if (access.keyStore === 'read') this.keyStore.grantRead(fn);
      for (const [table, actions] of Object.entries(access.tables ?? {})) {
        const target = this.tables[table as keyof typeof this.tables];
        iam.Grant.addToPrincipal({ grantee: fn, actions: [...actions], resourceArns: [target.tableArn] });
      }
      functions[name] = fn;
    }
    this.functions = functions;
    if (!props.issuer) {
      Annotations.of(this).addWarningV2(
        'retrysafe:issuer',
        `No issuer given: the JWT authorizer trusts the placeholder ${JWT_DEFAULTS.issuer} and refuses every token. Deploy with -c issuer=<your OIDC issuer>.`,
      );
    }
    this.api = this.#api(functions, {
      issuer: props.issuer ?? JWT_DEFAULTS.issuer,
      audience: props.audience ?? JWT_DEFAULTS.audience,
    });

    new CfnOutput(this, 'ApiUrl', { value: this.api.apiEndpoint });
    new CfnOutput(this, 'IdempotencyTableName', { value: this.keyStore.table.tableName });
    for (const [table, resource] of Object.entries(this.tables)) {
      new CfnOutput(this, `${table[0]!.toUpperCase()}${table.slice(1)}TableName`, { value: resource.tableName });
    }
  }

  /** One entry point: its own role and log group, Node.js 22 on arm64, a minified bundle without the SDK. */
  #function(name: string, environment: Record<string, string>): NodejsFunction {
    const logGroup = new logs.LogGroup(this, `${name}Logs`, {
      retention: FUNCTION_DEFAULTS.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const role = new iam.Role(this, `${name}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `retrysafe ${name}: its log group and its tables, nothing else`,
    });
    logGroup.grantWrite(role);
    const fn = new NodejsFunction(this, name, {
      entry: join(PROJECT_ROOT, 'lambdas', `${name}.ts`),
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: join(PROJECT_ROOT, 'package-lock.json'),
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: FUNCTION_DEFAULTS.memorySize,
      timeout: Duration.seconds(FUNCTION_DEFAULTS.timeoutSeconds),
      role,
      logGroup,
      environment,
      bundling: {
        ...BUNDLING,
        externalModules: [...BUNDLING.externalModules],
        sourceMap: true,
        format: OutputFormat.CJS,
      },
    });
    Validations.of(fn).acknowledge({
      id: 'AwsSolutions-L1',
      reason: 'nodejs22.x is the deploy target this code is built and tested for (Node 22 LTS).',
    });
    return fn;
  }

  /** The HTTP API: the shared routes, the JWT authorizer on every route but /health, throttling, access logs. */
  #api(functions: Record<string, NodejsFunction>, jwt: { issuer: string; audience: string }): apigw.HttpApi {
    const notFound = functions[DEFAULT_ROUTE_LAMBDA]!;
    const authorizer = new HttpJwtAuthorizer('Jwt', jwt.issuer, {
      jwtAudience: [jwt.audience],
      identitySource: ['$request.header.Authorization'],
    });
    // Every route needs a token by default, $default (unknown routes and tools) included; the public
    // routes opt out one by one.
    const api = new apigw.HttpApi(this, 'Api', {
      description: 'retrysafe: idempotent agent tools',
      createDefaultStage: false,
      defaultAuthorizer: authorizer,
      defaultIntegration: new HttpLambdaIntegration('NotFound', notFound),
    });
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', {
      retention: ACCESS_LOG_RETENTION_DAYS as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    new apigw.HttpStage(this, 'Stage', {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      throttle: STAGE_THROTTLE,
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(accessLogs),
        // Request metadata only: no bodies, no headers, no tokens.
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            time: '$context.requestTime',
            ip: '$context.identity.sourceIp',
            method: '$context.httpMethod',
            route: '$context.routeKey',
            status: '$context.status',
            latency: '$context.responseLatency',
            responseLength: '$context.responseLength',
            authorizerError: '$context.authorizer.error',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
    for (const route of ROUTES) {
      const fn = functions[route.lambda];
      if (!fn) throw new Error(`route ${route.method} ${route.path} names no function ${route.lambda}`);
      const [created] = api.addRoutes({
        path: route.path,
        methods: [apigw.HttpMethod[route.method]],
        integration: new HttpLambdaIntegration(`${route.lambda}Integration`, fn),
        ...(route.auth ? {} : { authorizer: new HttpNoneAuthorizer() }),
      });
      if (!route.auth && created) {
        Validations.of(created).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason: `${route.path} is public by design: it reveals nothing and touches no store.`,
        });
      }
    }
    return api;
  }
}
