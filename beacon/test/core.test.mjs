// Unit tests of the beacon's pure parts, run by go test ./beacon -run TestNodeUnit (it gives Node the build's constants, beacon.ScriptDefine)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { config, rate, proto, serverTiming, sample, client, runID, report, alt, VERSION } from '../src/core.js';

test('proto normalises nextHopProtocol', () => {
  const cases = {
    h3: 'h3', 'h3-29': 'h3', 'h3-Q050': 'h3', hq: 'h3', 'http/2+quic/43': 'h3', H3: 'h3',
    h2: 'h2', h2c: 'h2', 'http/1.1': 'h1', 'http/1.0': 'h1',
    '': 'unknown', undefined: 'unknown', null: 'unknown', 'spdy/3': 'unknown', '0': 'unknown',
  };
  for (const [in_, want] of Object.entries(cases)) {
    const v = in_ === 'undefined' ? undefined : in_ === 'null' ? null : in_;
    assert.equal(proto(v), want, `proto(${JSON.stringify(v)})`);
  }
});

test('config defaults and limits', () => {
  const src = 'https://rum.example.com/h3rum.js';
  assert.ok(!config({ h3: 'https://h3.example.com' }, src, 'shop.example'), 'no h2 origin');
  assert.ok(!config({ h2: 'https://h2.example.com', h3: 'not a url' }, src, 'x'), 'bad h3 origin');
  assert.ok(!config({ h2: 'https://h2.example.com', h3: 'https://h3.example.com' }, '', 'x'), 'no endpoint');
  const c = config({ h3: 'https://H3.example.com/x/', h2: 'https://h2.example.com:8443' }, src, 'shop.example');
  const { first, ...rest } = c;
  assert.deepEqual(rest, {
    h3: 'https://H3.example.com', h2: 'https://h2.example.com:8443', site: 'shop.example',
    n: 5, w: 2, b: 0, trg: 'load', wait: false, ep: 'https://rum.example.com',
  });
  for (const [consent, wait] of [['wait', true], ['', false], ['granted', false], ['WAIT', false], [undefined, false]])
    assert.equal(config({ h3: 'https://a', h2: 'https://b', consent }, src, 'h').wait, wait, `consent ${consent}`);
  const firsts = new Set(Array.from({ length: 100 }, () => config({ h3: 'https://a', h2: 'https://b' }, src, 'h').first));
  assert.deepEqual([...firsts].sort(), ['h2', 'h3'], 'random order');
  const d = config(
    { h3: 'https://a', h2: 'https://b', site: 'shop', sample: '0.05', parallel: '7', warmup: '0', bytes: '1000',
      trigger: 'manual', endpoint: 'https://collect.example.com/', order: 'h2first' }, src, 'h');
  assert.deepEqual([d.site, d.n, d.w, d.b, d.trg, d.ep, d.first],
    ['shop', 7, 0, 1000, 'manual', 'https://collect.example.com', 'h2']);
  const bad = config({ h3: 'https://a', h2: 'https://b', parallel: '99', warmup: '-1', bytes: 'x' }, src, 'h');
  assert.deepEqual([bad.n, bad.w, bad.b], [5, 2, 0]);
  assert.equal(config({ h3: 'https://a', h2: 'https://b', parallel: '0' }, src, 'h').n, 5);
  for (const bad of [undefined, '', 'h3.example.com', '//h3.example.com', 'ftp://h3.example.com', 'javascript:x',
    'HTTPS://h3.example.com', 'https:/h3.example.com', 'https://', 'https:///x'])
    assert.ok(!config({ h3: bad, h2: 'https://b' }, src, 'x'), `h3 origin ${JSON.stringify(bad)}`);
  assert.equal(config({ h3: 'http://[::1]:8443/probe', h2: 'https://b' }, src, 'x').h3, 'http://[::1]:8443');
});

test('rate reads data-sample', () => {
  for (const [s, want] of [[undefined, 1], ['1', 1], ['0', 0], ['0.05', 0.05], ['', 0], ['2', 1], ['-1', 1], ['x', 1]])
    assert.equal(rate(s), want, `rate(${JSON.stringify(s)})`);
});

test('serverTiming maps the collector metrics', () => {
  const list = [
    { name: 'proto', duration: 0, description: 'h3' },
    { name: 'app', duration: 0.0421234, description: '' },
    { name: 'rtt', duration: 12.5, description: '' },
    { name: 'minrtt', duration: 10, description: '' },
    { name: 'rttvar', duration: 1.25, description: '' },
    { name: 'lost', duration: 0, description: '2' },
    { name: 'cid', duration: 0, description: 'q-7f3a' },
    { name: 'creq', duration: 0, description: '3' },
    { name: 'age', duration: 812.4567, description: '' },
    { name: 'resumed', duration: 0, description: '1' },
    { name: 'early', duration: 0, description: '0' },
    { name: 'cdn-cache', duration: 0, description: 'MISS' },
    { name: 'creq', duration: 0, description: 'x' },
  ];
  assert.deepEqual(serverTiming(list), {
    proto: 'h3', app: 0.042, rtt: 12.5, minrtt: 10, rttvar: 1.25, lost: 2, cid: 'q-7f3a', creq: 3, age: 812.457, resumed: 1, early: 0,
  });
  assert.equal(serverTiming([]), undefined);
  assert.equal(serverTiming(undefined), undefined);
  assert.equal(serverTiming([{ name: 'other', duration: 1, description: '' }]), undefined);
  for (const bad of ['', '-1', '1e3', ' 1', '1.5', '0x1', '1234567890'])
    assert.equal(serverTiming([{ name: 'lost', duration: 0, description: bad }]), undefined, `lost;desc=${bad}`);
  assert.deepEqual(serverTiming([{ name: 'lost', duration: 0, description: '999999999' }]), { lost: 999999999 });
  for (const name of ['ap', 'app rtt', 'rtt ', 'constructor', '__proto__'])
    assert.equal(serverTiming([{ name, duration: 1, description: '1' }]), undefined, `metric ${name}`);
});

const entry = (o) => ({
  name: 'https://h3.example.com/probe?r=1', startTime: 1100.12, duration: 30.3000001, nextHopProtocol: 'h3',
  domainLookupStart: 1100.2, domainLookupEnd: 1101.2, connectStart: 1101.2, connectEnd: 1110.2,
  secureConnectionStart: 1102.2, requestStart: 1110.3, responseStart: 1129.4, responseEnd: 1130.4,
  transferSize: 300, serverTiming: [{ name: 'proto', duration: 0, description: 'h3' }], ...o,
});

test('sample breaks a Resource Timing entry down', () => {
  assert.deepEqual(sample(3, 'p', 'h3', entry(), 1000, 1099, ''), {
    q: 3, ph: 'p', w: 'h3', g: 'h3', st: 100.12, d: 30.3, dns: 1, con: 9, tls: 8, tf: 19.1, dl: 1, r: false, ts: 300,
    sv: { proto: 'h3' },
  });
  const reused = sample(4, 'p', 'h2', entry({ nextHopProtocol: 'h2', connectStart: 1100.2, connectEnd: 1100.2,
    domainLookupStart: 1100.2, domainLookupEnd: 1100.2, secureConnectionStart: 0, serverTiming: [] }), 1000, 1099, '');
  assert.deepEqual([reused.g, reused.dns, reused.con, reused.tls, reused.r, reused.sv], ['h2', 0, 0, 0, true, undefined]);
});

test('sample without Timing-Allow-Origin or without entry', () => {
  const opaque = sample(0, 'w', 'h3', entry({ requestStart: 0, responseStart: 0, domainLookupStart: 0,
    domainLookupEnd: 0, connectStart: 0, connectEnd: 0, secureConnectionStart: 0, nextHopProtocol: '',
    transferSize: 0, serverTiming: [] }), 1000, 1099, '');
  assert.deepEqual([opaque.g, opaque.d, opaque.dns, opaque.con, opaque.tls, opaque.tf, opaque.dl, opaque.r],
    ['unknown', 30.3, -1, -1, -1, -1, -1, false]);
  const none = sample(1, 'w', 'h2', undefined, 1000, 1250.5, 'timeout');
  assert.deepEqual(none, { q: 1, ph: 'w', w: 'h2', g: 'unknown', st: 250.5, d: -1, dns: -1, con: -1, tls: -1, tf: -1,
    dl: -1, r: false, ts: 0, sv: undefined, e: 'timeout' });
  assert.equal(sample(1, 'p', 'h2', null, 1000, 1250.5, '').e, 'noentry');
});

// The Safari quirks beacon/webkit reads off WebKitGTK (and the shapes field
// data shows): each entry's sample carries the fields its case wants.
test('sample handles the Safari quirks', () => {
  const { cases } = JSON.parse(readFileSync(new URL('../webkit/testdata/quirks.json', import.meta.url)));
  assert.ok(cases.length >= 4);
  for (const c of cases) {
    const s = sample(3, 'p', 'h3', c.entry, 0, c.entry.startTime, '');
    for (const [k, want] of Object.entries(c.want))
      assert.deepEqual(s[k] ?? null, want, `${c.name}: ${k}`);
  }
});

// Reports built from hostile entries: TestNodeUnit decodes each with
// beacon.Decode, which must accept them all (H3RUM_REPORTS names the file).
const built = [];
after(() => process.env.H3RUM_REPORTS && writeFileSync(process.env.H3RUM_REPORTS, built.map((r) => JSON.stringify(r)).join('\n')));
const partialRun = (s, mt = 1) => {
  const cfg = { ...config({ h3: 'https://a', h2: 'https://b', warmup: '0', parallel: '1' }, 'https://c/h3rum.js', 'h'), id: 'f'.repeat(32),
    alt: 1 + (built.length % 5) };
  built.push(report(cfg, 'https://p', true, mt, {}, [s]));
};

test('sample sends timings it cannot trust as unknown, with the reason', () => {
  const { cases } = JSON.parse(readFileSync(new URL('./untrusted-entries.json', import.meta.url)));
  assert.ok(cases.length >= 8);
  for (const c of cases) {
    const s = sample(0, 'w', 'h2', c.entry, c.t0, c.at, c.err || '', c.now);
    for (const [k, want] of Object.entries(c.want)) assert.deepEqual(s[k] ?? null, want, `${c.name}: ${k}`);
    partialRun(s);
  }
});

test('no entry, however broken, gives a sample or report the collector refuses', () => {
  // Deterministic, so that a failure can be replayed.
  let seed = 1;
  const rnd = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
  const pick = (...v) => v[Math.floor(rnd() * v.length)];
  const time = () => pick(NaN, Infinity, -Infinity, -2981.9, -0.0004, -0.0006, 0, 0.0004, rnd() * 50, rnd() * 1e4, 9999.9995,
    1e4 + 1e-3, 36e5, 36e5 + 1, 1e12);
  const fields = ['domainLookupStart', 'domainLookupEnd', 'connectStart', 'connectEnd', 'secureConnectionStart',
    'requestStart', 'responseStart', 'responseEnd'];
  for (let i = 0; i < 2000; i++) {
    const t0 = pick(0, rnd() * 1e7), at = t0 + pick(0, rnd() * 100, 36e5 + 1, 1e9), e = {
      startTime: at + pick(0, 0.5, -0.5, -2, rnd() * 10, time()), duration: time(), nextHopProtocol: 'h3', transferSize: 300,
      serverTiming: [{ name: __H3RUM_SV_APP__, duration: time(), description: '' }, { name: __H3RUM_SV_AGE__, duration: time(), description: '' }],
    };
    for (const f of fields) e[f] = pick(e.startTime + rnd() * 40, time(), 0);
    const s = sample(0, 'w', 'h2', pick(e, e, null), t0, at, pick('', '', 'timeout'), at + pick(rnd() * 1e4, time()));
    for (const k of ['d', 'dns', 'con', 'tls', 'tf', 'dl'])
      assert.ok(s[k] == -1 || (s[k] >= 0 && s[k] <= __H3RUM_MAX_DURATION_MS__), `case ${i}: ${k} ${s[k]}`);
    assert.ok(s.st >= 0 && s.st <= __H3RUM_MAX_DURATION_MS__, `case ${i}: st ${s.st}`);
    for (const [k, v] of Object.entries(s.sv || {})) assert.ok(v >= 0 && v <= __H3RUM_MAX_DURATION_MS__, `case ${i}: sv.${k} ${v}`);
    assert.ok(s.d == -1 || s.d <= __H3RUM_REQUEST_TIMEOUT_MS__, `case ${i}: d ${s.d} beyond the timeout`);
    partialRun(s, pick(0, 1, -1, NaN, 6e4, 6e4 + 1, 1e9));
  }
});

test('report keeps mt within what the collector takes', () => {
  const cfg = { ...config({ h3: 'https://a', h2: 'https://b' }, 'https://c/h3rum.js', 'h'), id: 'i' };
  for (const [mt, want] of [[0.4567, 0.457], [-1, 0], [NaN, 0], [6e4, 6e4], [1e9, __H3RUM_MAX_MAIN_THREAD_MS__]])
    assert.equal(report(cfg, 'https://p', false, mt, {}, []).mt, want, `mt ${mt}`);
});

test('client reads UA-CH and network information where present', () => {
  assert.deepEqual(JSON.parse(JSON.stringify(client({}))), { wd: false });
  assert.deepEqual(client({
    webdriver: true, userAgentData: { brands: [{ brand: 'Chromium', version: '156' }], platform: 'Linux', mobile: false },
    connection: { effectiveType: '4g', rtt: 50, downlink: 10 },
  }), { br: [['Chromium', '156']], pf: 'Linux', mb: false, et: '4g', rtt: 50, dl: 10, wd: true });
});

test('runID: 128 bits from the CSPRNG, as 32 hex digits', () => {
  const noUUID = { getRandomValues: (a) => globalThis.crypto.getRandomValues(a) }; // as on an http page
  for (const [name, c] of [['randomUUID', globalThis.crypto], ['getRandomValues', noUUID]]) {
    const ids = new Set(Array.from({ length: 1000 }, () => runID(c)));
    assert.equal(ids.size, 1000, name);
    for (const id of ids) assert.match(id, /^[0-9a-f]{32}$/, name);
    // Every digit is random: each of the 16 values shows up at every
    // position (a fixed digit, like a UUID's version, would not).
    for (let i = 0; i < 32; i++) assert.equal(new Set([...ids].map((id) => id[i])).size, 16, `${name}: digit ${i}`);
  }
  // With randomUUID: its 30 random digits, then the last 2 of a second.
  const uuids = ['01234567-89ab-4cde-bf01-23456789abcd', '01234567-89ab-4cde-bf01-23456789abef'];
  let n = 0;
  assert.equal(runID({ randomUUID: () => uuids[n++], getRandomValues: () => assert.fail('getRandomValues used') }),
    '0123456789abcdef0123456789abcdef');
  // Without it: every byte becomes two digits, leading zero kept, in order.
  const fixed = (bytes) => ({ getRandomValues: (a) => (a.set(bytes), a) });
  assert.equal(runID(fixed([0, 1, 15, 16, 127, 128, 254, 255, 0, 0, 0, 0, 10, 11, 12, 13])),
    '00010f107f80feff000000000a0b0c0d');
  let asked;
  runID({ getRandomValues: (a) => ((asked = a), a) });
  assert.ok(asked instanceof Uint8Array && asked.length == 16, 'asks for 16 bytes');
  // Math.random is never the source, not even as a fallback.
  const random = Math.random;
  Math.random = () => assert.fail('Math.random used for a run id');
  try {
    runID(globalThis.crypto);
    runID(noUUID);
  } finally {
    Math.random = random;
  }
});

test('report carries the script errors only when there are some', () => {
  const cfg = { ...config({ h3: 'https://a', h2: 'https://b' }, 'https://c/h3rum.js', 'h'), id: 'i', first: 'h3', alt: 1 };
  const keys = (r) => Object.keys(JSON.parse(JSON.stringify(r)));
  assert.deepEqual(keys(report(cfg, 'https://p', false, 0, {}, [])), ['v', 'id', 'site', 'o', 'bv', 'p', 'mt', 'alt', 'par', 'c', 's']);
  assert.deepEqual(keys(report(cfg, 'https://p', false, 0, {}, [], {})), ['v', 'id', 'site', 'o', 'bv', 'p', 'mt', 'alt', 'par', 'c', 's']);
  const r = JSON.parse(JSON.stringify(report(cfg, 'https://p', false, 0, {}, [], { batch: 2, send: 1 })));
  assert.deepEqual(Object.keys(r), ['v', 'id', 'site', 'o', 'bv', 'p', 'mt', 'alt', 'par', 'c', 'x', 's']);
  assert.deepEqual(r.x, { batch: 2, send: 1 });
});

test('a full run of 2+1 warm-up and 5+5 parallel samples stays under 4 KiB', () => {
  const cfg = config({ h3: 'https://h3.rumtest.example.com', h2: 'https://h2.rumtest.example.com', site: 'shop' },
    'https://rumtest.example.com/h3rum.js', 'x');
  const sv = (p, i) => [
    { name: 'proto', description: p }, { name: 'app', duration: 0.0512 }, { name: 'rtt', duration: 23.456 },
    { name: 'minrtt', duration: 21.012 }, { name: 'rttvar', duration: 3.5 }, { name: 'lost', description: '0' },
    { name: 'cid', description: 'c' + 'f'.repeat(15) }, { name: 'creq', description: String(i) },
    { name: 'resumed', description: '0' }, { name: 'early', description: '0' },
  ];
  const samples = [];
  let q = 0;
  for (const [ph, w, n] of [['w', 'h3', 2], ['w', 'h2', 1], ['p', 'h2', 5], ['p', 'h3', 5]])
    for (let i = 0; i < n; i++)
      samples.push(sample(q++, ph, w, entry({ nextHopProtocol: w, startTime: 1234.5678 + q * 37.1234,
        duration: 123.4567, serverTiming: sv(w, i + 1) }), 1000.0001, 0, q == 4 ? 'http_503' : ''));
  const r = report({ ...cfg, id: runID(globalThis.crypto), first: 'h2', alt: 2 }, 'https://www.shop.example', false, 0.4567,
    client({ userAgentData: { brands: [{ brand: 'Not)A;Brand', version: '8' }, { brand: 'Chromium', version: '156' },
      { brand: 'Google Chrome', version: '156' }], platform: 'Windows', mobile: false },
    connection: { effectiveType: '4g', rtt: 50, downlink: 10 } }), samples);
  const body = JSON.stringify(r);
  assert.ok(body.length < 4096, `payload ${body.length} bytes`);
  assert.equal(r.v, 2);
  assert.equal(r.alt, 2);
  assert.equal(r.bv, VERSION);
  assert.deepEqual(r.par, { n: 5, w: 2, b: 0, ord: 'h2first', trg: 'load' });
  assert.equal(r.s.length, 13);
  console.log(`# payload for 2+1+5+5 samples: ${body.length} bytes`);
});

test('alt: the earliest load from the H3 origin over the network decides', () => {
  const h3 = 'https://h3.example:8443';
  // e is a Resource Timing entry as a page sees it: with Timing-Allow-Origin
  // (or same-origin), transferSize and the protocol are visible.
  const e = (name, p, transferSize = 300, encodedBodySize = 100) => ({ name, nextHopProtocol: p, transferSize, encodedBodySize });
  const page = e('https://www.shop.example/', 'h2'), other = e('https://cdn.example/app.js', 'h3');
  for (const [name, list, want] of [
    ['nothing from the H3 origin', [page, other], 1],
    ['nothing at all', [], 1],
    ['the script over h2', [page, e(h3 + '/h3rum.js?h3=x', 'h2'), other], 2],
    ['the pinned script over http/1.1', [page, e(h3 + '/h3rum.0123456789ab.js', 'http/1.1')], 2],
    ['another load over h2 first', [page, e(h3 + '/img.png', 'h2'), e(h3 + '/h3rum.js', 'h2')], 3],
    ['the page itself from the H3 origin', [e(h3 + '/demo', 'h2'), e(h3 + '/h3rum.js', 'h3')], 3],
    ['already over h3', [page, e(h3 + '/h3rum.js', 'h3'), e(h3 + '/x', 'h2')], 4],
    ['h3-29 is h3', [e(h3 + '/h3rum.js', 'h3-29')], 4],
    ['without Timing-Allow-Origin', [e(h3 + '/h3rum.js', '', 0, 0)], 5],
    ['from the cache: taught nothing', [e(h3 + '/h3rum.js', '', 0, 2500), e(h3 + '/h3rum.js', 'h2', 0, 2500)], 1],
    ['cached, then over h2', [e(h3 + '/h3rum.js', 'h2', 0, 2500), e(h3 + '/x', 'h2')], 3],
    ['another port is another origin', [e('https://h3.example/h3rum.js', 'h2'), e('https://h3.example:8444/x', 'h2')], 1],
    ['a prefix is not the origin', [e(h3 + '0/h3rum.js', 'h2'), e('http://h3.example:8443/h3rum.js', 'h2')], 1],
    ['hostile names and protocols', [{ name: null }, { name: 7, nextHopProtocol: {} }, e(h3, 'h2'), {}], 3],
  ])
    assert.equal(alt(list, h3), want, name);
});
