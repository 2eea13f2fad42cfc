// Seeded generator of personal data and secrets as people type them, for the
// privacy canary (tests/it/privacy_canary.test.mjs). No external dependency.
//
// Every value is valid for its kind: phone numbers follow each country's
// numbering plan (mobile and geographic ranges, trunk prefix, international
// notation with `+` and `00`), IBANs carry a correct mod-97 check, cards are
// Luhn valid, BSNs pass the 11-proef, DNI/NIE carry their check letter, SSNs
// keep the SSA rules. The notations are the ones people write, chosen without
// looking at the detector.
//
// A value is { type, format, pre, value, post }: `value` is what must never
// leave (its fragments are checked), `pre` a context word people write in
// front of it ("BSN ", "SSN "), `post` what follows it (an IPv6 zone), neither
// of them protected.

// ---- Deterministic randomness ----
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  return {
    next,
    int,
    pick: (arr) => arr[int(arr.length)],
    digits: (n) => Array.from({ length: n }, () => int(10)).join(''),
    // digits whose first one is in [lo, 9]
    digitsFrom: (n, lo) => String(lo + int(10 - lo)) + Array.from({ length: n - 1 }, () => int(10)).join(''),
    chars: (n, alphabet) => Array.from({ length: n }, () => alphabet[int(alphabet.length)]).join(''),
  };
}

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGIT = '0123456789';
const ALNUM = UPPER + LOWER + DIGIT;

// ---- Checksums ----
export function luhnOk(num) {
  let sum = 0;
  for (let i = 0; i < num.length; i++) {
    let d = Number(num[num.length - 1 - i]);
    if (i % 2 === 1) { d *= 2; if (d > 9) d -= 9; }
    sum += d;
  }
  return sum % 10 === 0;
}
function luhnComplete(body) {
  for (let c = 0; c < 10; c++) if (luhnOk(body + c)) return body + c;
  throw new Error('unreachable');
}
const mod97 = (s) => {
  let r = 0;
  for (const ch of s) {
    const v = /[A-Z]/.test(ch) ? String(ch.charCodeAt(0) - 55) : ch;
    for (const d of v) r = (r * 10 + Number(d)) % 97;
  }
  return r;
};
export const ibanOk = (iban) => mod97(iban.slice(4) + iban.slice(0, 4)) === 1;
function ibanOf(cc, bban) {
  const check = 98 - mod97(`${bban}${cc}00`);
  return `${cc}${String(check).padStart(2, '0')}${bban}`;
}
export const elfproefOk = (d) => d.length === 9
  && [...d].reduce((s, c, i) => s + Number(c) * (i === 8 ? -1 : 9 - i), 0) % 11 === 0;
const DNI_LETTERS = 'TRWAGMYFPDXBNJZSQVHLCKE';
export const dniLetter = (n) => DNI_LETTERS[Number(n) % 23];

// ---- Generators by type ----
const FIRST = ['jan', 'sanne', 'pieter', 'lotte', 'thomas', 'anna', 'lukas', 'marie', 'camille', 'lucas', 'elena', 'pablo', 'giulia', 'marco', 'olivia', 'james', 'emma', 'noah', 'fatima', 'mohammed', 'daan', 'sophie', 'jonas', 'chloe'];
const LAST = ['devries', 'jansen', 'bakker', 'mueller', 'schmidt', 'dupont', 'lefevre', 'peeters', 'janssens', 'garcia', 'martinez', 'rossi', 'bianchi', 'smith', 'jones', 'johnson', 'williams', 'visser', 'meyer', 'moreau'];
const DOMAINS = ['gmail.com', 'outlook.com', 'hotmail.nl', 'ziggo.nl', 'kpnmail.nl', 'web.de', 'gmx.de', 'orange.fr', 'free.fr', 'telenet.be', 'skynet.be', 'telefonica.es', 'libero.it', 'btinternet.com', 'yahoo.co.uk', 'comcast.net', 'proton.me', 'acme-corp.eu'];

const IDN_LOCAL = ['jürgen', 'müller', 'josé', 'françois', 'søren', 'łukasz', 'zoë', 'ñoño', 'δημήτρης', 'иван', 'пётр', 'ольга', '山田', '李明', 'محمد', 'राहुल', 'ömer'];
const IDN_LAST = ['müller', 'garcía', 'lefèvre', 'jørgensen', 'wiśniewski', 'παππάς', 'петров', '太郎', 'شریفی', 'शर्मा', 'çelik'];
const IDN_DOMAINS = ['münchen.de', 'bücher.ch', 'straße.de', 'españa.es', 'пример.рф', 'почта.рф', '例え.jp', 'ελλάδα.gr', 'köln-bonn.de', 'gemeinde-zürich.ch'];
function email(r, format) {
  const f = r.pick(FIRST);
  const l = r.pick(LAST);
  const n = r.int(100) < 60 ? String(r.int(1000)) : '';
  const d = r.pick(DOMAINS);
  switch (format) {
    case 'email/plain': return `${f}.${l}${n}@${d}`;
    case 'email/plus-tag': return `${f}${n}+${r.pick(['newsletter', 'shop', 'work', 'bank', 'spam'])}@${d}`;
    case 'email/subdomain': return `${f[0]}.${l}${n}@${r.pick(['mail', 'staff', 'mx1', 'eu'])}.${r.pick(['corp', 'intern', 'billing'])}.${d}`;
    case 'email/upper': return `${f[0].toUpperCase()}${f.slice(1)}.${l.toUpperCase()}${n}@${d.toUpperCase()}`;
    // Internationalised addresses (RFC 6531): a local part in another
    // script or with accents, or an IDN domain, as mail clients accept them.
    case 'email/idn-local': return `${r.pick(IDN_LOCAL)}${r.int(2) ? `.${r.pick(IDN_LAST)}` : ''}${n}@${d}`;
    case 'email/idn-domain': return r.int(3) ? `${f}.${l}${n}@${r.pick(IDN_DOMAINS)}` : `${r.pick(IDN_LOCAL)}${n}@${r.pick(IDN_DOMAINS)}`;
    default: throw new Error(format);
  }
}

// National significant numbers (no trunk prefix) per country and kind, and
// how they are grouped when written.
const COUNTRIES = {
  NL: {
    cc: '31', trunk: '0',
    mobile: (r) => { const s = `6${r.digitsFrom(8, 1)}`; return { nsn: s, area: '6', rest: s.slice(1) }; },
    geo: (r) => { const a = r.pick(['20', '10', '30', '70', '40', '513', '575', '346']); const s = a + r.digitsFrom(9 - a.length, 2); return { nsn: s, area: a, rest: s.slice(a.length) }; },
    nat: [(p) => `0${p.area} ${grp(p.rest, GROUPS[p.rest.length])}`, (p) => `0${p.area}-${p.rest}`, (p) => `(0${p.area}) ${grp(p.rest, [3, 2, 2])}`, (p) => `0${p.nsn}`, (p) => `0${p.area} ${grp(p.rest, [2, 2, 2, 2])}`, (p) => `0${p.area}.${grp(p.rest, [3, 4], '.')}`],
  },
  DE: {
    cc: '49', trunk: '0',
    mobile: (r) => { const a = r.pick(['151', '152', '157', '160', '170', '171', '176', '178']); const s = a + r.digitsFrom(a === '176' || a === '151' ? 8 : 7, 1); return { nsn: s, area: a, rest: s.slice(3) }; },
    geo: (r) => { const a = r.pick(['30', '40', '89', '69', '221', '211']); const s = a + r.digitsFrom(a.length === 2 ? 8 : 7, 2); return { nsn: s, area: a, rest: s.slice(a.length) }; },
    nat: [(p) => `0${p.area} ${p.rest}`, (p) => `0${p.area}/${p.rest}`, (p) => `0${p.area}-${grp(p.rest, [3, 3, 9])}`, (p) => `(0${p.area}) ${p.rest}`, (p) => `0${p.area} ${grp(p.rest, [4, 9])}`, (p) => `0${p.nsn}`],
  },
  FR: {
    cc: '33', trunk: '0',
    mobile: (r) => { const s = r.pick(['6', '7']) + r.digits(8); return { nsn: s, area: s[0], rest: s.slice(1) }; },
    geo: (r) => { const s = String(1 + r.int(5)) + r.digitsFrom(8, 1); return { nsn: s, area: s[0], rest: s.slice(1) }; },
    nat: [(p) => `0${p.area} ${grp(p.rest, [2, 2, 2, 2])}`, (p) => `0${p.area}.${grp(p.rest, [2, 2, 2, 2], '.')}`, (p) => `0${p.area}-${grp(p.rest, [2, 2, 2, 2], '-')}`, (p) => `0${p.nsn}`],
    intl: (p) => `${p.area} ${grp(p.rest, [2, 2, 2, 2])}`,
  },
  BE: {
    cc: '32', trunk: '0',
    mobile: (r) => { const a = `4${7 + r.int(3)}${r.int(10)}`; const s = a + r.digits(6); return { nsn: s, area: a, rest: s.slice(3) }; },
    geo: (r) => { const a = r.pick(['2', '3', '9']); const s = a + r.digitsFrom(7, 2); return { nsn: s, area: a, rest: s.slice(1) }; },
    nat: [(p) => `0${p.area} ${grp(p.rest, p.rest.length === 6 ? [2, 2, 2] : [3, 2, 2])}`, (p) => `0${p.area}/${grp(p.rest, p.rest.length === 6 ? [2, 2, 2] : [3, 2, 2], '.')}`, (p) => `0${p.nsn}`],
  },
  ES: {
    cc: '34', trunk: '',
    mobile: (r) => { const s = r.pick(['6', '6', '7']) + (r.int(2) ? r.digitsFrom(8, 1) : `${1 + r.int(4)}${r.digits(7)}`); return { nsn: s, area: s.slice(0, 3), rest: s.slice(3) }; },
    geo: (r) => { const a = r.pick(['91', '93', '95', '96']); const s = a + r.digitsFrom(7, 2); return { nsn: s, area: a, rest: s.slice(2) }; },
    nat: [(p) => `${p.area} ${grp(p.rest, p.rest.length === 6 ? [3, 3] : [3, 2, 2])}`, (p) => p.nsn, (p) => grp(p.nsn, [3, 2, 2, 2]), (p) => grp(p.nsn, [3, 3, 3], '-')],
  },
  IT: {
    cc: '39', trunk: '', // the leading 0 of geographic numbers is kept internationally
    mobile: (r) => { const a = `3${r.pick(['20', '28', '33', '35', '40', '47', '48', '49', '66', '89', '93'])}`; const s = a + r.digits(7); return { nsn: s, area: a, rest: s.slice(3) }; },
    geo: (r) => { const a = r.pick(['06', '02', '011', '055']); const s = a + r.digitsFrom(10 - a.length, 2); return { nsn: s, area: a, rest: s.slice(a.length) }; },
    nat: [(p) => `${p.area} ${grp(p.rest, p.rest.length === 7 ? [3, 4] : [4, 4])}`, (p) => `${p.area}-${p.rest}`, (p) => `${p.area}/${p.rest}`, (p) => p.nsn, (p) => `${p.area}.${grp(p.rest, [3, 9], '.')}`],
  },
  UK: {
    cc: '44', trunk: '0',
    mobile: (r) => { const a = `7${r.pick(['4', '5', '7', '8', '9'])}${r.digits(2)}`; const s = a + r.digits(6); return { nsn: s, area: a, rest: s.slice(4) }; },
    geo: (r) => { const a = r.pick(['20', '161', '131', '117', '113']); const s = a === '20' ? `20${r.pick(['3', '7', '8'])}${r.digits(7)}` : a + r.digitsFrom(7, 2); return { nsn: s, area: a, rest: s.slice(a.length) }; },
    nat: [(p) => `0${p.area} ${grp(p.rest, p.rest.length === 8 ? [4, 4] : [3, 3, 4])}`, (p) => `(0${p.area}) ${grp(p.rest, p.rest.length === 8 ? [4, 4] : [3, 4])}`, (p) => `0${p.nsn}`, (p) => `0${p.area}-${grp(p.rest, [3, 3, 4], '-')}`],
  },
  US: {
    cc: '1', trunk: '1',
    mobile: (r) => usNumber(r),
    geo: (r) => usNumber(r),
    nat: [(p) => `(${p.area}) ${p.rest.slice(0, 3)}-${p.rest.slice(3)}`, (p) => `${p.area}-${p.rest.slice(0, 3)}-${p.rest.slice(3)}`, (p) => `${p.area}.${p.rest.slice(0, 3)}.${p.rest.slice(3)}`, (p) => `${p.area} ${p.rest.slice(0, 3)} ${p.rest.slice(3)}`, (p) => p.nsn, (p) => `1-${p.area}-${p.rest.slice(0, 3)}-${p.rest.slice(3)}`],
    intl: (p) => `${p.area} ${p.rest.slice(0, 3)} ${p.rest.slice(3)}`,
  },
};
function usNumber(r) {
  const a = r.pick(['212', '415', '312', '617', '206', '713', '305', '646', '503', '702']);
  let x;
  do x = r.digitsFrom(3, 2); while (x.slice(1) === '11');
  const s = a + x + r.digits(4);
  return { nsn: s, area: a, rest: s.slice(3) };
}
const GROUPS = { 5: [2, 3], 6: [3, 3], 7: [3, 4], 8: [4, 4], 9: [3, 3, 3] };
function grp(s, sizes, sep = ' ') {
  const out = [];
  let i = 0;
  for (const n of sizes) { if (i >= s.length) break; out.push(s.slice(i, i + n)); i += n; }
  if (i < s.length) out[out.length - 1] += s.slice(i);
  return out.join(sep);
}
function phone(r, format) {
  const [, country, notation] = format.split('/');
  const c = COUNTRIES[country];
  const p = (r.int(2) ? c.mobile : c.geo)(r);
  if (notation === 'nat') {
    // A bare run of digits with no trunk 0 (Spanish, Italian mobile, US) is a
    // documented limit (docs/privacy.md: too many order numbers and ids look
    // the same); everything else people write is generated.
    const forms = c.trunk === '0' && country !== 'IT' ? c.nat : c.nat.filter((f) => !/^\d+$/.test(f({ area: '1', rest: '2', nsn: '12' })));
    return r.pick(forms)(p);
  }
  // International: the number without its trunk prefix (Italy keeps its 0).
  const body = c.intl ? c.intl(p) : `${p.area} ${r.int(3) ? grp(p.rest, GROUPS[p.rest.length] ?? [9]) : p.rest}`;
  const trunk = c.trunk === '0' && r.int(3) === 0 ? ' (0)' : '';
  if (notation === 'plus') return r.pick([`+${c.cc}${trunk} ${body}`, `+${c.cc}${p.nsn}`, `+${c.cc}-${body.replace(/ /g, '-')}`]);
  return r.pick([`00${c.cc} ${body}`, `00${c.cc}${p.nsn}`, `00 ${c.cc} ${body}`]);
}

const IBAN_BBAN = {
  NL: (r) => r.pick(['ABNA', 'INGB', 'RABO', 'SNSB', 'TRIO']) + r.digits(10),
  DE: (r) => r.digits(18),
  FR: (r) => r.digits(10) + r.chars(11, UPPER + DIGIT) + r.digits(2),
  BE: (r) => { const b = r.digits(10); const k = Number(BigInt(b) % 97n) || 97; return b + String(k).padStart(2, '0'); },
  ES: (r) => r.digits(20),
  IT: (r) => r.chars(1, UPPER) + r.digits(10) + r.chars(12, UPPER + DIGIT),
  GB: (r) => r.pick(['NWBK', 'BARC', 'LOYD', 'HBUK', 'MIDL']) + r.digits(14),
};
function iban(r, format) {
  const cc = r.pick(Object.keys(IBAN_BBAN));
  const v = ibanOf(cc, IBAN_BBAN[cc](r));
  if (!ibanOk(v)) throw new Error(`bad IBAN ${v}`);
  if (format === 'iban/compact') return v;
  const grouped = v.match(/.{1,4}/g).join(' ');
  return format === 'iban/grouped' ? grouped : (r.int(2) ? grouped : v).toLowerCase();
}

// Cards as people also write them: dots or slashes between the groups of
// four, and the groupings other card lengths use (Amex 4-6-5 with dots or
// slashes, Diners 4-6-4, 13-digit Visa 4-4-5, 19 digits 4-4-4-4-3, two
// halves of eight).
function cardOther(r, format) {
  const cut = (v, sizes, sep) => { const out = []; let i = 0; for (const n of sizes) { out.push(v.slice(i, i + n)); i += n; } return out.join(sep); };
  const sixteen = () => { const p = r.int(2) ? '4' : String(51 + r.int(5)); return luhnComplete(p + r.digits(15 - p.length)); };
  if (format === 'card/dots' || format === 'card/slashes') {
    return cut(sixteen(), [4, 4, 4, 4], format === 'card/dots' ? '.' : '/');
  }
  const kind = r.int(5);
  if (kind === 0) { const v = luhnComplete(r.pick(['34', '37']) + r.digits(12)); return cut(v, [4, 6, 5], r.pick(['.', '/', ' ', '-'])); }
  if (kind === 1) { const v = luhnComplete(r.pick(['300', '305', '36', '38']).padEnd(4, String(r.int(10))) + r.digits(9)); return cut(v, [4, 6, 4], r.pick([' ', '-', '.'])); }
  if (kind === 2) { const v = luhnComplete(`4${r.digits(11)}`); return cut(v, [4, 4, 5], r.pick([' ', '-'])); }
  if (kind === 3) { const v = luhnComplete(r.pick(['4', '6011', '62']).padEnd(4, String(r.int(10))) + r.digits(14)); return cut(v, [4, 4, 4, 4, 3], r.pick([' ', '-'])); }
  return cut(sixteen(), [8, 8], r.pick([' ', '-']));
}
function card(r, format) {
  if (format !== 'card/plain' && format !== 'card/grouped' && format !== 'card/amex') return cardOther(r, format);
  if (format === 'card/amex') {
    const v = luhnComplete(r.pick(['34', '37']) + r.digits(12));
    return r.pick([v, `${v.slice(0, 4)} ${v.slice(4, 10)} ${v.slice(10)}`, `${v.slice(0, 4)}-${v.slice(4, 10)}-${v.slice(10)}`]);
  }
  const prefix = r.int(2) ? '4' : (r.int(2) ? String(51 + r.int(5)) : String(2221 + r.int(500)));
  const v = luhnComplete(prefix + r.digits(15 - prefix.length));
  if (!luhnOk(v)) throw new Error('bad card');
  if (format === 'card/plain') return v;
  return v.match(/.{4}/g).join(r.pick([' ', '-']));
}

function bsnDigits(r) {
  for (;;) {
    const d = r.digitsFrom(8, 1);
    let s = 0;
    for (let i = 0; i < 8; i++) s += Number(d[i]) * (9 - i);
    const last = s % 11;
    if (last < 10) { const v = d + last; if (elfproefOk(v)) return v; }
  }
}
const BSN_WORDS = ['BSN ', 'BSN: ', 'burgerservicenummer ', 'mijn BSN is ', 'sofinummer: ', 'citizen service number '];
function bsn(r, format) {
  const d = bsnDigits(r);
  if (format === 'bsn/context') return { pre: r.pick(BSN_WORDS), value: d };
  // 4.2.3 dots are a BSN's own shape; 3.3.3 groups need a BSN word (docs/privacy.md).
  if (format === 'bsn/dotted') return r.int(2) ? { pre: '', value: `${d.slice(0, 4)}.${d.slice(4, 6)}.${d.slice(6)}` } : { pre: r.pick(BSN_WORDS), value: `${d.slice(0, 3)}.${d.slice(3, 6)}.${d.slice(6)}` };
  // Nine digits in 3-3-3 groups are a BSN only after a BSN word (docs/privacy.md:
  // without it 30 % of such groups in prose are not BSNs), so the word comes with them.
  return { pre: r.pick(BSN_WORDS), value: `${d.slice(0, 3)} ${d.slice(3, 6)} ${d.slice(6)}` };
}

function dni(r, format) {
  if (format === 'dni/dni') {
    const n = r.digitsFrom(8, 0);
    const l = dniLetter(n);
    return r.pick([`${n}${l}`, `${n}-${l}`, `${n.slice(0, 2)}.${n.slice(2, 5)}.${n.slice(5)}-${l}`, `${n} ${l}`]);
  }
  const p = r.pick(['X', 'Y', 'Z']);
  const n = r.digits(7);
  const l = dniLetter(String('XYZ'.indexOf(p)) + n);
  return r.pick([`${p}${n}${l}`, `${p}-${n}-${l}`, `${p} ${n} ${l}`, `${p}${n}-${l}`]);
}

function ssnParts(r) {
  let a;
  do a = 1 + r.int(899); while (a === 666);
  return [String(a).padStart(3, '0'), String(1 + r.int(99)).padStart(2, '0'), String(1 + r.int(9999)).padStart(4, '0')];
}
function ssn(r, format) {
  const [a, g, s] = ssnParts(r);
  if (format === 'ssn/dashed') return { pre: r.pick(['', 'SSN ']), value: `${a}-${g}-${s}` };
  if (format === 'ssn/spaced') return { pre: r.pick(['SSN ', 'SSN: ', 'social security number ']), value: `${a} ${g} ${s}` };
  return { pre: r.pick(['SSN ', 'SSN# ', 'social security ']), value: `${a}${g}${s}` };
}

const hex = (r, n) => r.chars(n, '0123456789abcdef');
function ip(r, format) {
  if (format === 'ipv4/zeros') {
    // Octets zero-padded to three digits, as in config files and some
    // network tools' output (at least one of them padded).
    const o = [r.pick([10, 81, 145, 192, 172, 62]), r.int(256), r.int(256), 1 + r.int(254)];
    const short = 1 + r.int(3);
    o[short] = 1 + r.int(99);
    const pad = (1 << short) | r.int(16);
    return o.map((x, i) => ((pad >> i) & 1 ? String(x).padStart(3, '0') : String(x))).join('.');
  }
  if (format === 'ipv4') {
    const first = r.pick([81, 84, 145, 185, 192, 10, 172, 62, 213, 94]);
    return `${first}.${r.int(256)}.${r.int(256)}.${1 + r.int(254)}`;
  }
  const groups = [r.pick(['2001', '2a02', '2a01', '2604', '2003']), hex(r, 4), hex(r, 4).replace(/^0+/, '') || '0', String(1 + r.int(9999)).padStart(4, '0'), hex(r, 4), hex(r, 4), hex(r, 4), hex(r, 3) + r.int(10)];
  if (format === 'ipv6/full') return groups.join(':');
  return r.pick([
    `${groups.slice(0, 3).join(':')}::${groups[6]}:${groups[7]}`,
    // The zone is not part of the address (and not protected).
    { value: `fe80::${hex(r, 3)}${r.int(10)}:${hex(r, 4)}:${hex(r, 4)}`, post: `%${r.pick(['eth0', 'en0', 'wlan0'])}` },
    `${groups[0]}:${groups[1]}::${groups[3]}`,
  ]);
}

const b64url = (s) => Buffer.from(s).toString('base64url');
function secret(r, format) {
  const mixed = (n) => { for (;;) { const s = r.chars(n, ALNUM); if (/[A-Z]/.test(s) && /[a-z]/.test(s) && /\d/.test(s)) return s; } };
  switch (format) {
    case 'secret/sk': return r.pick(['sk-proj-', 'sk-', 'sk-svcacct-']) + mixed(48);
    case 'secret/akia': return `AKIA${r.chars(16, UPPER + '234567')}`;
    case 'secret/ghp': return `ghp_${mixed(36)}`;
    case 'secret/jwt': {
      const head = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
      const body = b64url(JSON.stringify({ sub: r.digits(8), name: `${r.pick(FIRST)} ${r.pick(LAST)}`, iat: 1700000000 + r.int(9e7) }));
      return `${head}.${body}.${r.chars(43, ALNUM + '-_')}`;
    }
    default: return agentSecret(r, format, mixed);
  }
}

// Secrets a coding agent reads out of a repository: key files, `.env` and
// config files, shell history, CI settings. `pre` and `post` are the file's
// own syntax around the secret (not protected); `protect` lists the pieces
// that are, when the value carries more than one (an AWS key pair).
const B64 = `${ALNUM}+/`;
const wrap = (s, n) => s.match(new RegExp(`.{1,${n}}`, 'g')).join('\n');
function password(r) {
  const words = ['Winter', 'Tulip', 'Falcon', 'Harbor', 'Copper', 'Maple', 'Orbit', 'Velvet', 'Canal', 'Zomer'];
  switch (r.int(3)) {
    case 0: return `${r.pick(words)}${r.pick(['', '-', '_', '.'])}${r.pick(words)}${r.digits(2 + r.int(3))}${r.pick(['!', '#', '$', '?', '%', '&', '*'])}`;
    case 1: return r.chars(16 + r.int(9), `${ALNUM}!#%*_-.`);
    default: return `${r.pick(words).toLowerCase()}${r.digits(4)}${r.chars(4, UPPER)}`;
  }
}
function agentSecret(r, format, mixed) {
  const urlsafe = `${ALNUM}_-`;
  switch (format) {
    case 'secret/pem': {
      const kind = r.pick(['RSA PRIVATE KEY', 'PRIVATE KEY', 'EC PRIVATE KEY', 'OPENSSH PRIVATE KEY', 'ENCRYPTED PRIVATE KEY', 'DSA PRIVATE KEY']);
      const body = Buffer.from(Array.from({ length: 90 + r.int(200) }, () => r.int(256))).toString('base64');
      return { pre: `-----BEGIN ${kind}-----\n`, value: wrap(body, kind.startsWith('OPENSSH') ? 70 : 64), post: `\n-----END ${kind}-----` };
    }
    case 'secret/pgp': {
      const body = Buffer.from(Array.from({ length: 120 + r.int(200) }, () => r.int(256))).toString('base64');
      const crc = r.chars(4, B64);
      return { pre: `-----BEGIN PGP PRIVATE KEY BLOCK-----\n${r.int(2) ? 'Version: GnuPG v2\n' : ''}${r.int(2) ? 'Comment: backup of my key\n' : ''}\n`, value: `${wrap(body, 64)}\n=${crc}`, post: '\n-----END PGP PRIVATE KEY BLOCK-----' };
    }
    case 'secret/aws-pair': {
      const id = `${r.pick(['AKIA', 'ASIA'])}${r.chars(16, `${UPPER}234567`)}`;
      const key = r.chars(40, B64);
      const [a, b, end] = r.pick([
        ['[default]\naws_access_key_id = ', '\naws_secret_access_key = ', ''],
        ['AWS_ACCESS_KEY_ID=', '\nAWS_SECRET_ACCESS_KEY=', ''],
        ['export AWS_ACCESS_KEY_ID=', ' AWS_SECRET_ACCESS_KEY=', ''],
        ['"AccessKeyId": "', '",\n  "SecretAccessKey": "', '"'],
        ['aws configure set aws_access_key_id ', ' && aws configure set aws_secret_access_key ', ''],
      ]);
      return { pre: a, value: `${id}${b}${key}`, post: end, protect: [id, key] };
    }
    case 'secret/basic': {
      const cred = Buffer.from(`${r.pick(FIRST)}${r.pick(['', '.', '_'])}${r.pick(LAST)}:${password(r)}`).toString('base64');
      const [pre, post] = r.pick([['Authorization: Basic ', ''], ['curl -H "Authorization: Basic ', '" https://api.internal/v1/'], ['authorization: basic ', ''], ['"Authorization": "Basic ', '"']]);
      return { pre, value: cred, post };
    }
    case 'secret/env': {
      const name = r.pick(['DB_PASSWORD', 'POSTGRES_PASSWORD', 'MYSQL_ROOT_PASSWORD', 'REDIS_PASSWORD', 'SMTP_PASS', 'SECRET_KEY', 'JWT_SECRET', 'API_TOKEN', 'ADMIN_PASSWORD', 'APP_SECRET', 'DJANGO_SECRET_KEY', 'MAIL_PASSWORD']);
      const [pre, post] = r.pick([[`${name}=`, ''], [`${name}="`, '"'], [`export ${name}='`, "'"], [`${name.toLowerCase()}: `, ''], [`"${name.toLowerCase()}": "`, '"'], [`${name} = `, '']]);
      return { pre, value: password(r), post };
    }
    case 'secret/npm': return r.int(2) ? `npm_${mixed(36)}` : { pre: '//registry.npmjs.org/:_authToken=', value: `npm_${mixed(36)}` };
    case 'secret/sendgrid': return `SG.${r.chars(22, urlsafe)}.${r.chars(43, urlsafe)}`;
    case 'secret/azure':
      if (r.int(2)) return { pre: `DefaultEndpointsProtocol=https;AccountName=${r.pick(LAST)}store;AccountKey=`, value: `${r.chars(86, B64)}==`, post: ';EndpointSuffix=core.windows.net' };
      return { pre: r.pick(['AZURE_CLIENT_SECRET=', 'client_secret: ', '']), value: `${r.chars(3, ALNUM)}${r.int(10)}Q~${r.chars(34, `${ALNUM}_~.-`)}` };
    case 'secret/github': return r.int(2) ? `github_pat_11${r.chars(20, `${UPPER}${DIGIT}`)}_${mixed(59)}` : `${r.pick(['gho_', 'ghs_', 'ghu_', 'ghr_'])}${mixed(36)}`;
    case 'secret/slack':
      if (r.int(3) === 0) return { pre: 'https://hooks.slack.com/services/', value: `T${r.chars(8, `${UPPER}${DIGIT}`)}/B${r.chars(10, `${UPPER}${DIGIT}`)}/${mixed(24)}` };
      return `${r.pick(['xoxb', 'xoxp', 'xoxa'])}-${r.digitsFrom(11, 1)}-${r.digitsFrom(12, 1)}-${mixed(24)}`;
    case 'secret/stripe': return `${r.pick(['sk_live_', 'rk_live_', 'sk_test_'])}${mixed(r.pick([24, 34, 99]))}`;
    case 'secret/conn': {
      const pw = password(r).replace(/[#%&*?]/g, '!');
      const [pre, post] = r.pick([
        [`postgres://${r.pick(['app', 'admin', 'postgres'])}:`, `@db.${r.pick(['internal', 'prod', 'eu-west'])}:5432/${r.pick(['app', 'orders'])}`],
        ['mongodb+srv://admin:', `@cluster0.${r.chars(5, LOWER + DIGIT)}.mongodb.net/test?retryWrites=true`],
        ['mysql://root:', '@mysql:3306/app'],
        ['redis://:', '@cache:6379/0'],
        ['amqp://guest:', '@rabbit:5672/'],
        [`Server=tcp:${r.pick(LAST)}.database.windows.net,1433;Database=app;User ID=sa;Password=`, ';Encrypt=True;'],
        ['DATABASE_URL=postgresql://app:', '@localhost/app'],
      ]);
      return { pre, value: pw, post };
    }
    default: throw new Error(format);
  }
}

// ---- Values as bare JSON numbers, binary content ----
// A card, a BSN or a phone number in E.164 digits stored as a JSON number
// (a CRM export, a form's JSON): `value` is the digits, the body carries
// the number. Every value stays below 2^53, so it survives JSON.parse.
function numberValue(r, format) {
  switch (format) {
    case 'number/card': { const p = r.int(2) ? '4' : String(51 + r.int(5)); return luhnComplete(p + r.digits(15 - p.length)); }
    case 'number/bsn': return bsnDigits(r);
    case 'number/phone': {
      const c = r.pick(['NL', 'DE', 'FR', 'BE', 'UK', 'US', 'IT']);
      const p = COUNTRIES[c].mobile(r);
      return `${COUNTRIES[c].cc}${p.nsn}`;
    }
    default: throw new Error(format);
  }
}
// A small PNG (with a text chunk) or PDF whose content is personal: the base64
// is what must not leave (the scanner cannot read it).
function binaryValue(r, format) {
  const who = `${r.pick(FIRST)} ${r.pick(LAST)} ${bsnDigits(r)} ${r.digits(12)}`;
  if (format === 'binary/pdf') {
    const pdf = `%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n4 0 obj <</Length 60>> stream\nBT /F1 12 Tf 72 720 Td (Patient ${who}) Tj ET\nendstream endobj\n%%EOF\n`;
    return Buffer.from(pdf).toString('base64');
  }
  const png = Buffer.concat([
    Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex'),
    Buffer.from('1f15c4890000000d49444154789c63f8cfc0f01f0005000201', 'hex'),
    Buffer.from(`tEXtComment\0${who}`),
    Buffer.from(Array.from({ length: 24 }, () => r.int(256))),
    Buffer.from('0000000049454e44ae426082', 'hex'),
  ]);
  return png.toString('base64');
}

export const NEW_FORMATS = ['email/idn-local', 'email/idn-domain', 'card/dots', 'card/slashes', 'card/groupings', 'ipv4/zeros',
  'secret/pem', 'secret/pgp', 'secret/aws-pair', 'secret/basic', 'secret/env', 'secret/npm', 'secret/sendgrid',
  'secret/azure', 'secret/github', 'secret/slack', 'secret/stripe', 'secret/conn'];
export const FORMATS = [
  'email/plain', 'email/plus-tag', 'email/subdomain', 'email/upper',
  ...Object.keys(COUNTRIES).flatMap((c) => ['nat', 'plus', '00'].map((n) => `phone/${c}/${n}`)),
  'iban/compact', 'iban/grouped', 'iban/lower',
  'card/plain', 'card/grouped', 'card/amex',
  'bsn/context', 'bsn/dotted', 'bsn/spaced',
  'dni/dni', 'dni/nie',
  'ssn/dashed', 'ssn/spaced', 'ssn/plain',
  'ipv4', 'ipv6/full', 'ipv6/short',
  'secret/sk', 'secret/akia', 'secret/ghp', 'secret/jwt',
  // As people also type them: other scripts' addresses, card separators and
  // groupings, zero-padded IPv4, and what an agent reads out of a repository.
  ...NEW_FORMATS,
];
// Formats that only fit their own fields: bare JSON numbers, binary parts.
export const NUMBER_FORMATS = ['number/card', 'number/bsn', 'number/phone'];
export const BINARY_FORMATS = ['binary/png', 'binary/pdf'];

// One value of `format`: { type, format, pre, value, post }.
export function generate(r, format) {
  const type = format.split('/')[0];
  let out;
  switch (type) {
    case 'email': out = email(r, format); break;
    case 'phone': out = phone(r, format); break;
    case 'iban': out = iban(r, format); break;
    case 'card': out = card(r, format); break;
    case 'bsn': out = bsn(r, format); break;
    case 'dni': out = dni(r, format); break;
    case 'ssn': out = ssn(r, format); break;
    case 'ipv4': case 'ipv6': out = ip(r, format); break;
    case 'secret': out = secret(r, format); break;
    case 'number': out = numberValue(r, format); break;
    case 'binary': out = binaryValue(r, format); break;
    default: throw new Error(format);
  }
  return typeof out === 'string' ? { type, format, pre: '', post: '', value: out } : { type, format, pre: '', post: '', ...out };
}

// ---- Variants: how the same value reaches a field ----
const ZW = ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff'];
const NBSP = ['\u00a0', '\u202f'];
export const TEMPLATES = [
  (v) => `Please contact me at ${v} tomorrow.`,
  (v) => `Mijn gegevens: ${v}, graag bevestigen.`,
  (v) => `Meine Angaben lauten ${v}, danke.`,
  (v) => `Voici mes coordonnées : ${v}. Merci !`,
  (v) => `Mis datos son ${v}, gracias.`,
  (v) => `I miei dati sono ${v}, grazie.`,
];
const toFullwidth = (s) => s.replace(/[0-9@+]/g, (c) => String.fromCodePoint(c.charCodeAt(0) + 0xfee0));

// Which variants apply to a value in a field. `esc` (the value JSON-escaped
// inside tool-call arguments, after a `\n`) exists only in arguments.
// The other-script digits apply to values with digits, Unicode dashes to
// those whose groups may be written with `-`, a line break or tab to those
// written in groups, `%40`/`&#64;` to e-mail addresses, a PEM or PGP
// block written with literal `\n` (as in a `.env` or JSON config) to keys.
// Bare JSON numbers have one form; a binary part is a data: URL or a base64
// source, with whitespace, a BOM or upper case before it.
export const SCRIPT_DIGITS = { arabic: 0x0660, persian: 0x06f0, devanagari: 0x0966 };
export const NEW_VARIANTS = ['arabic', 'persian', 'devanagari', 'dash', 'wsplit', 'pct40', 'ent64', 'litnl'];
export const BINARY_VARIANTS = ['plain', 'space', 'nl', 'bom', 'upper', 'tab'];
export function variantsFor(format, field) {
  if (format.startsWith('number/')) return ['json'];
  if (format.startsWith('binary/')) return BINARY_VARIANTS;
  const sample = format.startsWith('email') || format.startsWith('phone') || /card|bsn|ssn|iban|dni|ipv4/.test(format);
  const out = ['plain', 'text', 'zw'];
  if (/phone|card\/grouped|card\/amex|iban\/grouped|bsn\/spaced|ssn\/spaced|dni/.test(format)) out.push('nbsp');
  if (sample) out.push('fullwidth');
  if (field === 'args') out.push('esc');
  if (/^(phone|card|iban|bsn|ssn|dni|ipv4)/.test(format)) out.push('arabic', 'persian', 'devanagari');
  if (/^phone|card\/(grouped|amex|groupings)|ssn\/(dashed|spaced)|dni/.test(format)) out.push('dash');
  if (/^phone|card\/(plain|grouped|amex|groupings)|iban\/grouped|bsn\/spaced|ssn\/spaced/.test(format)) out.push('wsplit');
  if (format.startsWith('email')) out.push('pct40', 'ent64');
  if (/secret\/(pem|pgp)/.test(format)) out.push('litnl');
  return out;
}

const DASHES = ['\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2212', '\ufe63', '\uff0d'];
const toScript = (s, zero) => s.replace(/[0-9]/g, (d) => String.fromCodePoint(zero + Number(d)));
// Separators between digit groups: a space or a dash with a digit (or a
// letter, IBAN groups) on either side.
const SEP = /(?<=[0-9A-Za-z])[ -](?=[0-9A-Za-z])/g;

// The text a value is written as: { before, raw, after } where raw is the
// value as it appears (after the variant's change). For `esc`, the text is
// JSON source (already escaped). A variant that writes the value's own
// separators differently (`dash`, `wsplit`) returns the value with them
// folded too (`value`), which is what the leak rule compares.
export function render(r, v, variant) {
  let raw = v.value;
  let value;
  if (v.type === 'binary') {
    const media = v.format === 'binary/pdf' ? 'application/pdf' : 'image/png';
    const lead = { plain: '', space: ' ', nl: '\n', bom: '\ufeff', upper: '', tab: '\t ' }[variant];
    if (lead === undefined) throw new Error(variant);
    const prefix = variant === 'upper' ? `DATA:${media.toUpperCase()};BASE64,` : `data:${media};base64,`;
    // `before` is the data: URL's head (a base64 source has none: its
    // `lead` is still prepended there).
    return { before: lead + prefix, raw, after: '', media, lead };
  }
  switch (variant) {
    case 'plain': case 'text': case 'json': break;
    case 'zw': {
      const cut = 1 + r.int(raw.length - 1);
      const cut2 = 1 + r.int(raw.length - 1);
      const [a, b] = [Math.min(cut, cut2), Math.max(cut, cut2)];
      raw = a === b ? raw.slice(0, a) + r.pick(ZW) + raw.slice(a)
        : raw.slice(0, a) + r.pick(ZW) + raw.slice(a, b) + r.pick(ZW) + raw.slice(b);
      break;
    }
    case 'nbsp': raw = raw.replace(/ /g, () => r.pick(NBSP)); break;
    case 'fullwidth': raw = v.type === 'email' ? raw.replace('@', '\uff20') : toFullwidth(raw); break;
    case 'esc': raw = raw.replace(/[@+]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`); break;
    case 'arabic': case 'persian': case 'devanagari': raw = toScript(raw, SCRIPT_DIGITS[variant]); break;
    case 'dash': {
      const d = r.pick(DASHES);
      raw = raw.replace(SEP, d);
      value = v.value.replace(SEP, '-');
      break;
    }
    case 'wsplit': {
      // One space between groups becomes a line break or a tab (a number
      // wrapped by an editor or a mail client, or pasted from two cells); a
      // card written without groups is wrapped between its two halves.
      const ws = r.pick(['\n', '\t', '\n', ' \n']);
      const seps = [...raw.matchAll(SEP)].filter((m) => m[0] === ' ').map((m) => m.index);
      let at;
      if (seps.length === 0 && !(v.type === 'card' && /^\d+$/.test(raw))) break;
      if (seps.length === 0) {
        const digits = [...raw.matchAll(/(?<=[0-9])(?=[0-9])/g)].map((m) => m.index);
        at = [digits[Math.floor(digits.length / 2)]];
        raw = raw.slice(0, at[0]) + ws + raw.slice(at[0]);
        value = v.value.slice(0, at[0]) + ' '.repeat(ws.length) + v.value.slice(at[0]);
      } else {
        at = [r.pick(seps)];
        const put = (s, c) => [...s].map((ch, i) => (at.includes(i) ? c : ch)).join('');
        raw = put(raw, ws);
        value = put(v.value, ' '.repeat(ws.length));
      }
      break;
    }
    case 'pct40': raw = raw.replace('@', '%40'); break;
    case 'ent64': raw = raw.replace('@', r.pick(['&#64;', '&#x40;', '&#064;'])); break;
    case 'litnl': break; // the newlines of the block, below
    default: throw new Error(variant);
  }
  let { pre, post = '' } = v;
  if (variant === 'litnl') { raw = raw.replace(/\n/g, '\\n'); pre = pre.replace(/\n/g, '\\n'); post = post.replace(/\n/g, '\\n'); }
  const out = value === undefined ? {} : { value };
  if (variant === 'plain' || variant === 'json') return { before: pre, raw, after: post, ...out };
  // (the escaped line break goes before the value's own text: "mysql://root:"
  // and the password it prefixes stay on one line, as they are written)
  if (variant === 'esc') return { before: `\\n${JSON.stringify(pre).slice(1, -1)}`, raw, after: JSON.stringify(post).slice(1, -1), ...out };
  const t = r.pick(TEMPLATES)('\u0000').split('\u0000');
  return { before: t[0] + pre, raw, after: post + t[1], ...out };
}

// What a receiver's text means once the tricks are undone: JSON escapes
// decoded (twice: arguments are JSON inside a JSON string), compatibility
// forms folded (NFKC: full-width to ASCII, no-break spaces to spaces), zero-
// width characters removed, the decimal digits of every script read as
// ASCII digits, every dash and minus as `-`, tabs and line breaks as spaces,
// `%40` and `&#64;` as `@`.
const ndZero = new Map();
function asciiDigit(c) {
  const cp = c.codePointAt(0);
  if (cp < 0x80) return c;
  let z = ndZero.get(cp);
  if (z === undefined) {
    // The start of the run of decimal digits this one belongs to (scripts'
    // digit sets are runs of ten from 0; the mathematical ones, of fifty).
    z = cp;
    while (/\p{Nd}/u.test(String.fromCodePoint(z - 1))) z--;
    ndZero.set(cp, z);
  }
  return String((cp - z) % 10);
}
export function normalise(s) {
  for (let i = 0; i < 2; i++) {
    s = s.replace(/\\u([0-9a-fA-F]{4})|\\(["\\/bfnrt])/g, (m, u, c) => (u ? String.fromCharCode(parseInt(u, 16))
      : ({ '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' })[c]));
  }
  return s.normalize('NFKC').replace(/[\u200b-\u200d\u2060\ufeff\u00ad]/g, '')
    .replace(/\p{Nd}/gu, asciiDigit)
    .replace(/[\u2010-\u2015\u2043\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d]/g, '-')
    .replace(/[\t\n\r\v\f]/g, ' ')
    .replace(/%40/gi, '@')
    .replace(/&#0*64;|&#x0*40;|&commat;/gi, '@');
}
