// `rowbase plans …` as real processes, beside a real `rowbase serve` on the same database
// (contract: "Names and start-up", "Plans and usage").
import { expect } from 'chai';
import { Client } from '../support/client.ts';
import { expectBadArguments, pollUntil, servingWorkspace } from '../support/process.ts';

interface ListedPlan {
  name: string;
  quota: number;
  period: string;
  rate: number | null;
}

describe('rowbase plans', () => {
  const suite = servingWorkspace();
  const { rowbase } = suite;
  async function listPlans(): Promise<ListedPlan[]> {
    const listed = await rowbase('plans', 'list', '--json');
    expect(listed.code, listed.stderr).to.equal(0);
    return JSON.parse(listed.stdout);
  }

  describe('plans list', () => {
    it('lists the built-in plans free and pro', async () => {
      const plans = await listPlans();

      expect(plans.filter((plan) => ['free', 'pro'].includes(plan.name))).to.deep.equal([
        { name: 'free', quota: 10_000, period: 'month', rate: 10 },
        { name: 'pro', quota: 1_000_000, period: 'month', rate: 100 },
      ]);
    });
  });

  describe('plans set', () => {
    it('adds a plan, changes it, and keeps its rate when --rate is not given', async () => {
      const added = await rowbase('plans', 'set', 'team', '--quota', '500', '--period', 'day', '--rate', '5');
      const changed = await rowbase('plans', 'set', 'team', '--quota=700', '--period=hour');

      expect([added.code, changed.code]).to.deep.equal([0, 0]);
      expect(changed.stdout).to.equal('plan team: 700 requests per hour, 5 per second\n');
      expect((await listPlans()).find((plan) => plan.name === 'team')).to.deep.equal({ name: 'team', quota: 700, period: 'hour', rate: 5 });
    });

    it("changes the running server's limits for accounts on the plan within a second", async () => {
      expect((await rowbase('plans', 'set', 'tight', '--quota', '1000', '--period', 'month', '--no-rate')).code).to.equal(0);
      const client = new Client(suite.server.url, await createKey('tight-account', 'tight'));
      expect((await client.get('/v1/usage')).headers.get('ratelimit-limit')).to.equal('1000');

      expect((await rowbase('plans', 'set', 'tight', '--quota', '2000', '--period', 'month')).code).to.equal(0);

      await pollUntil(async () => (await client.get('/v1/usage')).headers.get('ratelimit-limit') === '2000', 1500);
    });

    const mistakes = [
      { mistake: 'a negative --quota', args: ['--quota', '-1', '--period', 'day'], reason: /--quota needs a value/ },
      { mistake: 'a negative --quota=', args: ['--quota=-1', '--period', 'day'], reason: /--quota must be a whole number of at least 0/ },
      { mistake: 'a fractional --quota', args: ['--quota', '1.5', '--period', 'day'], reason: /--quota must be a whole number/ },
      { mistake: 'an exponent --quota', args: ['--quota', '1e3', '--period', 'day'], reason: /--quota must be a whole number/ },
      { mistake: 'a --quota too large to count exactly', args: ['--quota', '9007199254740993', '--period', 'day'], reason: /--quota/ },
      { mistake: 'a --quota without a value', args: ['--period', 'day', '--quota'], reason: /--quota/ },
      { mistake: 'no --quota', args: ['--period', 'day'], reason: /--quota is required/ },
      { mistake: '--period week', args: ['--quota', '5', '--period', 'week'], reason: /--period must be one of hour, day, month/ },
      { mistake: 'no --period', args: ['--quota', '5'], reason: /--period is required/ },
      {
        mistake: '--rate 0',
        args: ['--quota', '5', '--period', 'day', '--rate', '0'],
        reason: /--rate must be a whole number of at least 1/,
      },
      { mistake: '--rate and --no-rate', args: ['--quota', '5', '--period', 'day', '--rate', '2', '--no-rate'], reason: /not both/ },
      { mistake: 'a --quota given twice', args: ['--quota', '5', '--quota', '6', '--period', 'day'], reason: /--quota is given twice/ },
      { mistake: 'an unknown option', args: ['--quota', '5', '--period', 'day', '--burst', '3'], reason: /--burst/ },
    ];
    for (const { mistake, args, reason } of mistakes) {
      it(`exits 2 with one line on stderr for ${mistake}, and changes no plan`, async () => {
        const refused = await rowbase('plans', 'set', 'refused', ...args);

        expectBadArguments(refused);
        expect(refused.stderr).to.match(reason);
        expect((await listPlans()).map((plan) => plan.name)).not.to.include('refused');
      });
    }

    for (const [mistake, args] of [
      ['no plan name', ['plans', 'set', '--quota', '5', '--period', 'day']],
      ['a plan name with a space', ['plans', 'set', 'two words', '--quota', '5', '--period', 'day']],
      ['plans without a subcommand', ['plans']],
    ]) {
      it(`exits 2 with one line on stderr for ${mistake}`, async () => {
        expectBadArguments(await rowbase(...(args as string[])));
      });
    }
  });

  describe('--help', () => {
    for (const { args, describes } of [
      { args: ['plans', 'list', '--help'], describes: ['Usage: rowbase plans list', '--json'] },
      { args: ['plans', 'set', '--help'], describes: ['Usage: rowbase plans set <name>', '--quota', '--period', '--rate', '--no-rate'] },
    ]) {
      it(`rowbase ${args.join(' ')} exits 0 and describes the command`, async () => {
        const help = await rowbase(...args);

        expect(help.code).to.equal(0);
        expect(help.stderr).to.equal('');
        for (const text of describes) expect(help.stdout).to.include(text);
      });
    }
  });

  async function createKey(account: string, plan: string): Promise<string> {
    const created = await rowbase('keys', 'create', '--account', account, '--plan', plan, '--json');
    expect(created.code, created.stderr).to.equal(0);
    return JSON.parse(created.stdout).key;
  }
});
