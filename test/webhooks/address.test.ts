// The address rule of webhooks (docs/webhooks.md, "Addresses"), on literals and on an injected lookup,
// and at connection time on this machine's own receiver: no packet leaves 127.0.0.1.
import { expect } from 'chai';
import type { LookupAll } from '../../src/net/guarded-fetch.ts';
import { isLoopbackName, isPublicAddress, urlProblem } from '../../src/webhooks/address.ts';
import { Sender } from '../../src/webhooks/send.ts';
import { Receiver } from '../support/receiver.ts';

describe('webhook addresses', () => {
  describe('isPublicAddress', () => {
    const refused = [
      '127.0.0.1',
      '127.8.9.10',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      'not an address',
    ];
    for (const address of refused) it(`refuses ${address}`, () => expect(isPublicAddress(address)).to.equal(false));
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:2800:220:1::1'])
      it(`takes ${address}`, () => expect(isPublicAddress(address)).to.equal(true));
  });

  describe('isLoopbackName', () => {
    // biome-ignore format: a list
    const loopback = ['localhost', 'localhost.', 'LOCALHOST.', 'localhost..', 'sub.localhost', 'a.b.LocalHost.', '.localhost'];
    for (const name of loopback) it(`refuses ${name}`, () => expect(isLoopbackName(name)).to.equal(true));
    // biome-ignore format: a list
    const other = ['localhost.localdomain', 'localhost.example', 'notlocalhost', 'localhosts', 'localhost-1', 'example.com', '127.0.0.1'];
    for (const name of other) it(`leaves ${name} to its addresses`, () => expect(isLoopbackName(name)).to.equal(false));
  });

  describe('urlProblem', () => {
    // A lookup the test injects: no name is resolved by any server.
    const names: Record<string, string[]> = { 'internal.example': ['93.184.216.34', '10.1.2.3'], 'public.example': ['93.184.216.34'] };
    const resolve = async (host: string) => {
      const addresses = names[host];
      if (!addresses) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
    const scenarios: [string, boolean, RegExp | undefined][] = [
      ['https://public.example/hook', false, undefined],
      ['http://93.184.216.34:8080/hook', false, undefined],
      ['https://unknown.example/hook', false, undefined],
      ['https://internal.example/hook', false, /internal\.example resolves to 10\.1\.2\.3/],
      ['http://127.0.0.1:9/hook', false, /private address \(127\.0\.0\.1\)/],
      ['http://[::1]:9/hook', false, /private address \(::1\)/],
      ['http://[::ffff:7f00:1]/hook', false, /private address/],
      ['http://169.254.169.254/latest/meta-data', false, /private address/],
      ['http://0x7f.1/hook', false, /private address \(127\.0\.0\.1\)/],
      // Loopback names (RFC 6761), none of which the injected lookup knows: refused by name.
      ['http://localhost.:8080/', false, /private address \(localhost\. is a loopback name\)/],
      ['http://LOCALHOST./hook', false, /private address \(localhost\. is a loopback name\)/],
      ['http://localhost../hook', false, /private address \(localhost\.\. is a loopback name\)/],
      ['http://localhost%2E/hook', false, /private address \(localhost\. is a loopback name\)/],
      ['http://sub.localhost/hook', false, /private address \(sub\.localhost is a loopback name\)/],
      ['http://a.b.LocalHost./hook', false, /private address \(a\.b\.localhost\. is a loopback name\)/],
      ['http://sub.localhost:9/hook', true, undefined],
      ['http://127.0.0.1:9/hook', true, undefined],
      ['ftp://public.example/hook', false, /http or https/],
      ['https://user:pass@public.example/hook', false, /credentials/],
      ['https://user@public.example/hook', true, /credentials/],
      ['/relative', false, /absolute/],
      [`https://public.example/${'a'.repeat(2030)}`, false, /2048 characters/],
    ];
    for (const [url, allowPrivate, problem] of scenarios) {
      it(`${problem ? 'refuses' : 'takes'} ${url.slice(0, 60)}${allowPrivate ? ' where private addresses are allowed' : ''}`, async () => {
        const found = await urlProblem(url, allowPrivate, resolve);
        if (problem) expect(found).to.match(problem);
        else expect(found).to.equal(undefined);
      });
    }
  });

  describe('at connection time', () => {
    let receiver: Receiver;
    let sender: Sender;
    before(async () => {
      receiver = await Receiver.start();
      // A lookup the test injects, by which one name is this machine's loopback address.
      const lookupAll: LookupAll = (hostname, _options, callback) =>
        hostname === 'internal.example'
          ? callback(null, [{ address: '127.0.0.1', family: 4 }])
          : callback(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }), []);
      sender = new Sender(2000, false, lookupAll);
    });
    after(async () => {
      await sender.close();
      await receiver.stop();
    });

    it('refuses a loopback literal before connecting, a name that resolves to one and a loopback name (RFC 6761)', async () => {
      const port = new URL(receiver.url).port;
      const refusals: [string, RegExp][] = [
        [receiver.url, /^address refused: 127\.0\.0\.1 is a private address/],
        [`http://internal.example:${port}/hook`, /^address refused: internal\.example resolves to 127\.0\.0\.1/],
        [`http://localhost:${port}/hook`, /^address refused: localhost is a loopback name/],
        [`http://localhost.:${port}/hook`, /^address refused: localhost\. is a loopback name/],
        [`http://sub.LOCALHOST:${port}/hook`, /^address refused: sub\.localhost is a loopback name/],
      ];
      for (const [n, [url, reason]] of refusals.entries()) {
        const result = await sender.send(url, 'whsec_c2VjcmV0', `msg_${n}`, '{}');
        expect(result, url).to.include({ ok: false, status: null });
        expect(result.error, url).to.match(reason);
      }
      expect(receiver.received).to.deep.equal([]);
    });
  });
});
