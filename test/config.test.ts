// Settings from the environment (src/config.ts): defaults, and refusals of values out of range.
import { expect } from 'chai';
import { ConfigError, configFromEnv, defaults } from '../src/config.ts';

describe('config', () => {
  it('bounds a batch at 1000 rows by default, or at ROWBASE_MAX_BATCH_ROWS', () => {
    expect(configFromEnv({}).maxBatchRows).to.equal(1000);
    expect(defaults.maxBatchRows).to.equal(1000);
    expect(configFromEnv({ ROWBASE_MAX_BATCH_ROWS: '3' }).maxBatchRows).to.equal(3);
    expect(configFromEnv({ ROWBASE_MAX_BATCH_ROWS: '5000' }).maxBatchRows).to.equal(5000);
  });

  it('refuses a batch bound below 1 or not an integer', () => {
    for (const value of ['0', '-1', '1.5', 'many']) {
      expect(() => configFromEnv({ ROWBASE_MAX_BATCH_ROWS: value }), value).to.throw(ConfigError, /ROWBASE_MAX_BATCH_ROWS/);
    }
  });

  it('changes at most 10,000 rows by filter by default, or ROWBASE_MAX_ROWS_BY_FILTER, at least 1', () => {
    expect(configFromEnv({}).maxRowsByFilter).to.equal(10_000);
    expect(configFromEnv({ ROWBASE_MAX_ROWS_BY_FILTER: '50' }).maxRowsByFilter).to.equal(50);
    for (const value of ['0', '1.5', 'all']) {
      expect(() => configFromEnv({ ROWBASE_MAX_ROWS_BY_FILTER: value }), value).to.throw(ConfigError, /ROWBASE_MAX_ROWS_BY_FILTER/);
    }
  });

  it('works on 1 MiB of request bodies at once by default, or ROWBASE_MAX_BODY_BYTES_AT_ONCE', () => {
    expect(configFromEnv({}).maxBodyBytesAtOnce).to.equal(1024 * 1024);
    expect(configFromEnv({ ROWBASE_MAX_BODY_BYTES_AT_ONCE: '1' }).maxBodyBytesAtOnce).to.equal(1);
    for (const value of ['0', '-1', '1.5', 'lots']) {
      expect(() => configFromEnv({ ROWBASE_MAX_BODY_BYTES_AT_ONCE: value }), value).to.throw(ConfigError, /ROWBASE_MAX_BODY_BYTES_AT_ONCE/);
    }
  });

  it('trusts no proxy by default, or ROWBASE_TRUSTED_PROXIES in front, from 0 to 100', () => {
    expect(configFromEnv({}).trustedProxies).to.equal(0);
    expect(configFromEnv({ ROWBASE_TRUSTED_PROXIES: '2' }).trustedProxies).to.equal(2);
    for (const value of ['-1', '101', 'yes']) {
      expect(() => configFromEnv({ ROWBASE_TRUSTED_PROXIES: value }), value).to.throw(ConfigError, /ROWBASE_TRUSTED_PROXIES/);
    }
  });
});
