import { allowedHostNames } from '../../lib/local/api-server';
import { jwtSettings } from '../../lib/local/dev-auth';

describe('jwtSettings: the dev issuer is a URL', () => {
  it.each([
    ['the server URL on the default port', {}, 'http://127.0.0.1:3000'],
    ['the server URL on PORT', { PORT: '8123' }, 'http://127.0.0.1:8123'],
    ['JWT_ISSUER when set', { PORT: '8123', JWT_ISSUER: 'https://auth.example.com/' }, 'https://auth.example.com/'],
  ])('names %s', (_label, env, issuer) => {
    expect(jwtSettings(env).issuer).toBe(issuer);
  });

  it.each(['retrysafe-local', 'auth.example.com', 'urn:example:issuer'])('refuses JWT_ISSUER=%s', (issuer) => {
    expect(() => jwtSettings({ JWT_ISSUER: issuer })).toThrow(/JWT_ISSUER/);
  });
});

describe('allowedHostNames: ALLOWED_HOSTS', () => {
  it.each([
    [undefined, []],
    ['', []],
    ['tunnel.example', ['tunnel.example']],
    [' Tunnel.Example , proxy.internal,', ['tunnel.example', 'proxy.internal']],
    ['[fd00::1]', ['[fd00::1]']],
  ])('reads %p as %p', (value, names) => {
    expect(allowedHostNames(value === undefined ? {} : { ALLOWED_HOSTS: value })).toEqual(names);
  });

  it.each(['tunnel.example:443', 'https://tunnel.example', 'a b'])('refuses %p, which is no host name', (value) => {
    expect(() => allowedHostNames({ ALLOWED_HOSTS: value })).toThrow(/ALLOWED_HOSTS/);
  });
});
