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

function card(r, format) {
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
    default: throw new Error(format);
  }
}

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
];

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
    case 'ipv4': case 'ipv6': out = ip(r, type === 'ipv4' ? 'ipv4' : format); break;
    case 'secret': out = secret(r, format); break;
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
export function variantsFor(format, field) {
  const sample = format.startsWith('email') || format.startsWith('phone') || /card|bsn|ssn|iban|dni|ipv4/.test(format);
  const out = ['plain', 'text', 'zw'];
  if (/phone|card\/grouped|card\/amex|iban\/grouped|bsn\/spaced|ssn\/spaced|dni/.test(format)) out.push('nbsp');
  if (sample) out.push('fullwidth');
  if (field === 'args') out.push('esc');
  return out;
}

// The text a value is written as: { text, raw } where raw is the value as it
// appears inside `text` (after the variant's change) and text = before + raw
// + after. For `esc`, text is JSON source (already escaped).
export function render(r, v, variant) {
  let raw = v.value;
  switch (variant) {
    case 'plain': case 'text': break;
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
    default: throw new Error(variant);
  }
  const { pre, post = '' } = v;
  if (variant === 'plain') return { before: pre, raw, after: post };
  if (variant === 'esc') return { before: `${JSON.stringify(pre).slice(1, -1)}\\n`, raw, after: JSON.stringify(post).slice(1, -1) };
  const t = r.pick(TEMPLATES)('\u0000').split('\u0000');
  return { before: t[0] + pre, raw, after: post + t[1] };
}

// What a receiver's text means once the tricks are undone: JSON escapes
// decoded (twice: arguments are JSON inside a JSON string), compatibility
// forms folded (NFKC: full-width to ASCII, no-break spaces to spaces), zero-
// width characters removed.
export function normalise(s) {
  for (let i = 0; i < 2; i++) {
    s = s.replace(/\\u([0-9a-fA-F]{4})|\\(["\\/bfnrt])/g, (m, u, c) => (u ? String.fromCharCode(parseInt(u, 16))
      : ({ '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' })[c]));
  }
  return s.normalize('NFKC').replace(/[\u200b-\u200d\u2060\ufeff\u00ad]/g, '');
}
