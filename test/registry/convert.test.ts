// From a registry entry (real server.json examples) to an mcp-fleet config.
import { describe, expect, it } from 'vitest';
import { toServerConfig } from '../../src/mcp-registry/convert.js';
import { MissingInputsError, RegistryError } from '../../src/mcp-registry/registry-errors.js';
import { installInputs } from '../../src/mcp-registry/inputs.js';
import { chooseOption, installOptions } from '../../src/mcp-registry/options.js';
import { RegistryServer } from '../../src/mcp-registry/server-json.js';
import { LocalServerConfig, RemoteServerConfig } from '../../src/config/schema.js';
import { fixtureEntry } from './fixture.js';

const entry = (file: string) => RegistryServer.parse(fixtureEntry(file));

/** The RegistryError `run` throws; a run that throws nothing fails the test. */
function refused(run: () => unknown): RegistryError {
  try {
    run();
  } catch (e) {
    return e as RegistryError;
  }
  throw new Error('not refused');
}

describe('choosing how to run an entry', () => {
  it('lists remotes then packages, with a problem for what cannot run', () => {
    expect(installOptions(entry('filesystem')).map((o) => [o.id, o.problem ?? null])).toEqual([
      ['npm', null],
      ['oci', null],
    ]);
    const [nuget] = installOptions(entry('knapcode-samplemcpserver'));
    expect(nuget?.problem).toContain('package type nuget is not supported');
  });

  it('picks in the order remote, npm, pypi, oci unless --package says', () => {
    expect(chooseOption(entry('filesystem')).id).toBe('npm');
    expect(chooseOption(entry('filesystem'), 'oci').id).toBe('oci');
    expect(chooseOption(entry('remote-weather')).id).toBe('remote');
    const hybrid = RegistryServer.parse({ ...fixtureEntry('brave-search'), remotes: fixtureEntry('mcp-fs').remotes });
    expect(chooseOption(hybrid).type).toBe('remote');
    expect(chooseOption(hybrid, 'npm').type).toBe('npm');
  });

  it('an entry with only unsupported packages is an error naming the type', () => {
    const err = (() => {
      try {
        chooseOption(entry('knapcode-samplemcpserver'));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(RegistryError);
    expect((err as RegistryError).kind).toBe('unsupported');
    expect((err as RegistryError).message).toMatch(/nuget/);
    expect(() => chooseOption(entry('filesystem'), 'pypi')).toThrow('offers no pypi package; it offers: npm, oci');
    expect(() => chooseOption(entry('knapcode-samplemcpserver'), 'nuget')).toThrow(/nuget is not supported/);
  });
});

describe('the inputs an option asks for', () => {
  it('env vars, secrets, arguments and {variables}, with their defaults', () => {
    expect(installInputs(chooseOption(entry('weather-mcp')))).toEqual([
      { kind: 'env', name: 'WEATHER_API_KEY', required: true, secret: true, description: 'API key for weather service' },
      { kind: 'env', name: 'WEATHER_UNITS', required: false, secret: false, description: 'Temperature units (celsius, fahrenheit)', default: 'celsius' },
    ]);
    expect(installInputs(chooseOption(entry('filesystem'), 'oci')).map((i) => `${i.kind}:${i.name}:${i.required}`)).toEqual([
      'variable:source_path:true',
      'variable:target_path:true',
      'env:LOG_LEVEL:false',
    ]);
    expect(installInputs(chooseOption(entry('remote-weather'))).map((i) => `${i.kind}:${i.name}:${i.secret}`)).toEqual([
      'variable:host:false',
      'header:Authorization:true',
    ]);
  });
});

describe('the config', () => {
  it('npm → npx -y pkg@version, with its arguments and env', () => {
    const config = toServerConfig(chooseOption(entry('filesystem')), { arg: { target_dir: '/srv/data' } });
    expect(config).toEqual({
      type: 'local',
      command: ['npx', '-y', '@modelcontextprotocol/server-filesystem@1.0.2', '/srv/data'],
      env: { LOG_LEVEL: 'info' },
    });
    expect(() => LocalServerConfig.parse(config)).not.toThrow();
  });

  it('PyPI → uvx pkg==version; a required secret env var is in env', () => {
    expect(toServerConfig(chooseOption(entry('weather-mcp')), { env: { WEATHER_API_KEY: 'k-1' } })).toEqual({
      type: 'local',
      command: ['uvx', 'weather-mcp-server==0.5.0'],
      env: { WEATHER_API_KEY: 'k-1', WEATHER_UNITS: 'celsius' },
    });
  });

  it('OCI → docker run -i --rm, runtime arguments with variables, -e NAME per env var, the image', () => {
    const config = toServerConfig(chooseOption(entry('filesystem'), 'oci'), { variable: { source_path: '/home/me', target_path: '/project' }, env: { LOG_LEVEL: 'debug' } });
    expect(config).toEqual({
      type: 'local',
      command: ['docker', 'run', '-i', '--rm', '--mount', 'type=bind,src=/home/me,dst=/project', '-e', 'LOG_LEVEL', 'docker.io/mcp/filesystem:1.0.2', '/project'],
      env: { LOG_LEVEL: 'debug' },
    });
    const untagged = RegistryServer.parse({ name: 'a/b', version: '2.0.0', packages: [{ registryType: 'oci', identifier: 'ghcr.io/a/b', version: '2.0.0' }] });
    expect(toServerConfig(chooseOption(untagged))).toEqual({ type: 'local', command: ['docker', 'run', '-i', '--rm', 'ghcr.io/a/b:2.0.0'] });
  });

  it('a remote → type remote with its transport, URL variables filled and headers', () => {
    const config = toServerConfig(chooseOption(entry('remote-weather')), { header: { Authorization: 'Bearer t' } });
    expect(config).toEqual({ type: 'remote', url: 'https://api.example.com/mcp', transport: 'streamable_http', headers: { Authorization: 'Bearer t' } });
    expect(() => RemoteServerConfig.parse(config)).not.toThrow();
    expect(toServerConfig(chooseOption(entry('remote-weather')), { header: { Authorization: 'x' }, variable: { host: 'eu.example.com' } })).toMatchObject({
      url: 'https://eu.example.com/mcp',
    });
    expect(toServerConfig(chooseOption(entry('mcp-fs')))).toEqual({ type: 'remote', url: 'https://mcp-fs.anonymous.modelcontextprotocol.io/http', transport: 'streamable_http' });
  });

  it('a missing required input is an error naming it, never its neighbours’ values', () => {
    const err = (() => {
      try {
        toServerConfig(chooseOption(entry('brave-search')), { env: { OTHER: 'not-this' } });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(MissingInputsError);
    expect((err as MissingInputsError).missing.map((m) => m.name)).toEqual(['BRAVE_API_KEY']);
    expect((err as Error).message).toContain('env BRAVE_API_KEY');
    expect((err as Error).message).not.toContain('not-this');
  });
  it("a required input's default is not taken unasked: it is missing until given", () => {
    // filesystem's target_dir is required, its default an example path (/Users/username/Desktop).
    const missing = (values: Parameters<typeof toServerConfig>[1]) => {
      try {
        toServerConfig(chooseOption(entry('filesystem')), values);
      } catch (e) {
        return e;
      }
    };
    expect(missing({})).toBeInstanceOf(MissingInputsError);
    expect((missing({}) as MissingInputsError).missing.map((m) => `${m.kind}:${m.name}`)).toEqual(['arg:target_dir']);
    expect(missing({ arg: { target_dir: '' } })).toBeInstanceOf(MissingInputsError);
    // The same for a {variable}: target_path's default /project is not assumed either.
    expect(() => toServerConfig(chooseOption(entry('filesystem'), 'oci'), { variable: { source_path: '/home/me' } })).toThrow('missing required input: variable target_path');
    // An optional input still takes its default (LOG_LEVEL=info).
    expect(toServerConfig(chooseOption(entry('filesystem')), { arg: { target_dir: '/srv/data' } })).toMatchObject({ env: { LOG_LEVEL: 'info' } });
  });
  it('a value for an argument or {variable} the option lacks is refused naming it; extra env vars and headers are kept', () => {
    const weather = chooseOption(entry('remote-weather'));
    const nosuch = refused(() => toServerConfig(weather, { header: { Authorization: 'x' }, variable: { nosuch: 'v' } }));
    expect([nosuch.kind, nosuch.input, nosuch.message]).toEqual(['invalid_request', { kind: 'variable', name: 'nosuch' }, 'variable nosuch: this entry has no such variable (it has: host)']);
    const arg = refused(() => toServerConfig(chooseOption(entry('filesystem')), { arg: { target_dir: '/srv', bogus: '1' } }));
    expect([arg.input, arg.message]).toEqual([{ kind: 'arg', name: 'bogus' }, 'arg bogus: this entry has no such argument (it has: target_dir)']);
    expect(toServerConfig(weather, { header: { Authorization: 'x', 'X-Extra': 'y' } })).toMatchObject({ headers: { Authorization: 'x', 'X-Extra': 'y' } });
  });

  it('a {variable} value that does not make a valid URL is refused naming the variable, not the url', () => {
    const err = refused(() => toServerConfig(chooseOption(entry('remote-weather')), { header: { Authorization: 'x' }, variable: { host: 'bad host/x' } }));
    expect(err).toBeInstanceOf(RegistryError);
    expect([err.kind, err.input, err.message]).toEqual([
      'invalid_request',
      { kind: 'variable', name: 'host' },
      'variable host: its value does not make https://{host}/mcp a valid http(s) URL',
    ]);
  });

  it('a header or env value the config cannot hold is refused naming the input it was given as, never quoting it', () => {
    const SECRET = 'canary-convert-SECRET';
    const header = refused(() => toServerConfig(chooseOption(entry('remote-weather')), { header: { Authorization: `Bearer ${SECRET}\r\nX-Injected: 1` } }));
    expect([header.kind, header.input, header.message]).toEqual(['invalid_request', { kind: 'header', name: 'Authorization' }, 'header Authorization: its value holds a line break or NUL character']);
    const env = refused(() => toServerConfig(chooseOption(entry('weather-mcp')), { env: { WEATHER_API_KEY: `${SECRET}\0` } }));
    expect([env.input, env.message]).toEqual([{ kind: 'env', name: 'WEATHER_API_KEY' }, 'env WEATHER_API_KEY: its value holds a NUL character']);
    const arg = refused(() => toServerConfig(chooseOption(entry('filesystem')), { arg: { target_dir: `/srv\0${SECRET}` } }));
    expect(arg.input).toEqual({ kind: 'arg', name: 'target_dir' });
    // Through the entry's own template ("Bearer {token}"), the value came as the variable: it is named.
    const templated = RegistryServer.parse({
      name: 'io.github.example/templated',
      description: 'a header filled from a variable',
      version: '1.0.0',
      remotes: [{ type: 'streamable-http', url: 'https://api.example.com/mcp', headers: [{ name: 'Authorization', value: 'Bearer {token}', variables: { token: { isSecret: true, isRequired: true } } }] }],
    });
    const viaVariable = refused(() => toServerConfig(chooseOption(templated), { variable: { token: `${SECRET}\nX-Injected: 1` } }));
    expect([viaVariable.input, viaVariable.message]).toEqual([{ kind: 'variable', name: 'token' }, 'variable token: its value, filled into header Authorization, holds a line break']);
    for (const err of [header, env, arg, viaVariable]) expect(err.message).not.toContain(SECRET);
  });
});
