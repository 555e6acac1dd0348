// A root hook of every run (.mocharc.json's `require`): after each test, the prototypes every value
// inherits from, and their constructors, have the own properties they had when the tests began. A
// request whose input reached one (prototype pollution: `?expand=__proto__` set Object.prototype.expand)
// changes every later request of the server under test, for every account; this fails the test that
// sent it, naming what it added or took away, rather than whichever test comes next.

/** The intrinsics watched: what a name from a request could reach through `__proto__` or `constructor`. */
const watched = [Object, Function, Array, String, Number, Boolean, Symbol, BigInt, Date, RegExp, Promise, Map, Set, Error];

/** Each watched value's own property names, by where they are. */
function ownNames() {
  const names = new Map();
  for (const made of watched) {
    names.set(`${made.name}`, Reflect.ownKeys(made).map(String));
    names.set(`${made.name}.prototype`, Reflect.ownKeys(made.prototype).map(String));
  }
  return names;
}

let atStart;

exports.mochaHooks = {
  beforeAll() {
    atStart = ownNames();
  },
  afterEach() {
    const changed = [];
    for (const [where, names] of ownNames()) {
      const before = new Set(atStart.get(where));
      const added = names.filter((name) => !before.has(name));
      const gone = [...before].filter((name) => !names.includes(name));
      if (added.length > 0) changed.push(`${where} gained ${added.join(', ')}`);
      if (gone.length > 0) changed.push(`${where} lost ${gone.join(', ')}`);
    }
    if (changed.length > 0) throw new Error(`The test changed what every value inherits: ${changed.join('; ')}`);
  },
};
