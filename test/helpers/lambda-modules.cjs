// Preloaded (`node -r`) to load a bundle as the Lambda Node.js runtime would resolve its packages: Node's
// own modules, the AWS SDK (with its @smithy packages) and the Powertools layer; any other package a
// bundle (not a package) requires is missing, as it is on Lambda.
const Module = require('node:module');

const RUNTIME = /^(@aws-sdk|@smithy|@aws-lambda-powertools)\//;
const resolve = Module._resolveFilename;
Module._resolveFilename = function resolveAsLambda(request, parent, ...rest) {
  const bare = !request.startsWith('.') && !request.startsWith('/') && !Module.isBuiltin(request);
  const fromPackage = (parent?.filename ?? '').includes('/node_modules/');
  if (bare && !fromPackage && !RUNTIME.test(request)) {
    throw Object.assign(new Error(`Cannot find module '${request}': the Lambda runtime has no such package`), {
      code: 'MODULE_NOT_FOUND',
    });
  }
  return resolve.call(this, request, parent, ...rest);
};
