import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import type { TableSchema } from '../store/tables';

export interface DefinedTableOptions {
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * DynamoDB's deletion protection: the table cannot be deleted (by CloudFormation or by hand) until it is
   * turned off. Off for a table deleted with its stack (`RemovalPolicy.DESTROY`), or the stack's deletion
   * would fail on it.
   * @default true, unless `removalPolicy` is `RemovalPolicy.DESTROY`
   */
  readonly deletionProtection?: boolean;
}

/**
 * A DynamoDB table built from its shared definition (the schema the tests create it from, too): on-demand billing, point-in-time recovery,
 * encryption at rest with a DynamoDB-owned key, deletion protection, TTL where the definition has one.
 */
export function tableFromDefinition(
  scope: Construct,
  id: string,
  definition: TableSchema,
  options: DefinedTableOptions = {},
): dynamodb.Table {
  return new dynamodb.Table(scope, id, {
    partitionKey: { name: definition.partitionKey.name, type: dynamodb.AttributeType.STRING },
    ...(definition.sortKey ? { sortKey: { name: definition.sortKey.name, type: dynamodb.AttributeType.STRING } } : {}),
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: dynamodb.TableEncryption.AWS_MANAGED,
    ...(definition.ttlAttribute ? { timeToLiveAttribute: definition.ttlAttribute } : {}),
    ...(definition.stream ? { stream: dynamodb.StreamViewType.NEW_IMAGE } : {}),
    removalPolicy: options.removalPolicy ?? RemovalPolicy.RETAIN,
    deletionProtection: options.deletionProtection ?? options.removalPolicy !== RemovalPolicy.DESTROY,
  });
}
