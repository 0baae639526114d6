// Every suite talks to the DynamoDB Local that global-setup started; credentials are placeholders
// (DynamoDB Local accepts any). Logs stay quiet unless a test asks for them.
process.env.AWS_REGION ??= 'us-east-1';
process.env.AWS_ACCESS_KEY_ID ??= 'local';
process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
