// Every suite talks to the DynamoDB Local that global-setup started; credentials are placeholders
// (DynamoDB Local accepts any). Logs stay quiet unless a test asks for them.
process.env.AWS_REGION ??= 'us-east-1';
process.env.AWS_ACCESS_KEY_ID ??= 'local';
process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
process.env.POWERTOOLS_LOG_LEVEL ??= 'SILENT';
// This machine runs Node 20; the SDK's notice about its Node 22 requirement is known (see README).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

export {};
