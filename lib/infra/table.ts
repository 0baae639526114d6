import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import type { TableSchema } from '../store/tables';

export interface DefinedTableOptions {
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * A DynamoDB table built from its shared definition (the schema the tests create it from, too): on-demand billing, point-in-time recovery,
 * encryption at rest with a DynamoDB-owned key, TTL where the definition has one.
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
  });
}
