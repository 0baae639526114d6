import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { jarFolder } from '../../lib/local/dynamodb-local';

describe('DynamoDB Local’s options (lib/local/dynamodb-local.ts, README "Known limits")', () => {
  it('offer no bind address, so it listens on every interface (the day one appears, use it and drop the limit)', () => {
    const help = execFileSync('java', ['-jar', join(jarFolder(), 'DynamoDBLocal.jar'), '-help'], {
      encoding: 'utf8',
      timeout: 30_000,
    });

    expect(help).toMatch(/-port <port-no\.>/); // the help it printed is the options list
    expect(help).not.toMatch(/bind|host|address|interface/i);
  });
});
