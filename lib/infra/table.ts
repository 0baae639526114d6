import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import type { TableDefinition, TableSchema } from '../store/tables';

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
  definition: TableSchema & Pick<Partial<TableDefinition>, 'globalSecondaryIndexes'>,
  options: DefinedTableOptions = {},
): dynamodb.Table {
  const table = new dynamodb.Table(scope, id, {
    partitionKey: { name: definition.partitionKey.name, type: dynamodb.AttributeType.STRING },
    ...(definition.sortKey ? { sortKey: { name: definition.sortKey.name, type: dynamodb.AttributeType.STRING } } : {}),
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: dynamodb.TableEncryption.AWS_MANAGED,
    ...(definition.ttlAttribute ? { timeToLiveAttribute: definition.ttlAttribute } : {}),
    ...(definition.stream ? { stream: dynamodb.StreamViewType.NEW_IMAGE } : {}),
    removalPolicy: options.removalPolicy ?? RemovalPolicy.RETAIN,
  });
  for (const index of definition.globalSecondaryIndexes ?? []) {
    table.addGlobalSecondaryIndex({
      indexName: index.indexName,
      partitionKey: { name: index.partitionKey.name, type: dynamodb.AttributeType.STRING },
      ...(index.sortKey ? { sortKey: { name: index.sortKey.name, type: dynamodb.AttributeType.STRING } } : {}),
      projectionType: dynamodb.ProjectionType.KEYS_ONLY,
    });
  }
  return table;
}
