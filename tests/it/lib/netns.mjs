// A network to break: one network namespace per backend tier, each joined to the
// root namespace (where the gateway and the test run) by its own veth pair, so each
// tier's link can be shaped (tc netem / tbf), taken down and brought back on its own.
//
//   root ns: gateway, test            swnf-<pid>-local: llmsim (local tier)
//     nf<pid>lh 10.200.x.y+1/30  <-veth->  nf<pid>ln 10.200.x.y+2/30
//     nf<pid>ch 10.201.x.y+1/30  <-veth->  nf<pid>cn 10.201.x.y+2/30   swnf-<pid>-cloud
//
// Needs root, `ip netns` and `tc` (Debian: iproute2). Delay, jitter, loss and
// reordering come from tc netem where the kernel has sch_netem; where it has not,
// each link is instead a pair of TUN devices joined by build/tests/netimp (a small
// userspace link, lib/netimp.c) that applies the same impairments to every IP
// packet, so the kernel's TCP still sees real delay, loss and reordering. tbf
// needs sch_tbf. netCapabilities() says what works here, so a test can skip with
// the reason. Names carry the pid of the run: a run removes what runs that no
// longer exist left behind, and its own namespaces on exit, SIGINT and SIGTERM.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { BUILD, startProcess } from './harness.mjs';

const PREFIX = 'swnf';
const IP = '/usr/sbin/ip';
const TC = '/usr/sbin/tc';
const NETIMP = join(BUILD, 'tests', 'netimp');
const bin = (b) => (spawnSync('sh', ['-c', `command -v ${b} || ls /usr/sbin/${b} /sbin/${b} 2>/dev/null`]).stdout.toString().trim().split('\n')[0] || null);

function run(cmd, args, { ns, allowFail = false } = {}) {
  const full = ns ? [IP, ['netns', 'exec', ns, cmd, ...args]] : [cmd, args];
  const r = spawnSync(full[0], full[1], { encoding: 'utf8' });
  if (r.status !== 0 && !allowFail) {
    throw new Error(`${full[0]} ${full[1].join(' ')}: exit ${r.status ?? r.signal}: ${r.stderr || r.error}`);
  }
  return r;
}

const alive = (pid) => { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } };

// Removes namespaces (and with them their veth pairs) that an earlier run whose
// process is gone left behind. Namespaces of runs still alive are left alone.
export function cleanupStale() {
  const r = run(IP, ['netns', 'list'], { allowFail: true });
  for (const line of (r.stdout || '').split('\n')) {
    const m = line.match(new RegExp(`^(${PREFIX}-(\\d+)-\\w+)`));
    if (m && !alive(Number(m[2]))) run(IP, ['netns', 'del', m[1]], { allowFail: true });
  }
}

let caps = null;
// { ok, reason, netem, netemReason, netimp, tbf, tbfReason }: whether namespaces
// can be built here at all (root, ip netns, tc), which qdiscs the kernel has, and
// whether the userspace link can stand in for netem (netimp: /dev/net/tun and the
// built helper). impair: 'netem' | 'netimp' | null, what delay/loss cells use.
export function netCapabilities() {
  if (caps) return caps;
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return (caps = { ok: false, reason: 'not root (network namespaces need CAP_NET_ADMIN)' });
  if (!bin('ip') || !bin('tc')) return (caps = { ok: false, reason: 'ip or tc not installed (Debian: iproute2)' });
  if (run(IP, ['netns', 'list'], { allowFail: true }).status !== 0) return (caps = { ok: false, reason: '`ip netns` does not work here' });
  cleanupStale();
  const modprobe = bin('modprobe');
  const mp = modprobe ? run(modprobe, ['sch_netem'], { allowFail: true }) : null;
  const ns = `${PREFIX}-${process.pid}-probe`;
  const h = `nf${process.pid}ph`;
  try {
    if (run(IP, ['netns', 'add', ns], { allowFail: true }).status !== 0) return (caps = { ok: false, reason: 'cannot create a network namespace' });
    if (run(IP, ['link', 'add', h, 'type', 'veth', 'peer', 'name', `nf${process.pid}pn`, 'netns', ns], { allowFail: true }).status !== 0) {
      return (caps = { ok: false, reason: 'cannot create a veth pair' });
    }
    const netem = run(TC, ['qdisc', 'add', 'dev', h, 'root', 'netem', 'delay', '1ms'], { allowFail: true });
    run(TC, ['qdisc', 'del', 'dev', h, 'root'], { allowFail: true });
    const tbf = run(TC, ['qdisc', 'add', 'dev', h, 'root', 'tbf', 'rate', '1mbit', 'burst', '32kbit', 'latency', '400ms'], { allowFail: true });
    const netimp = existsSync('/dev/net/tun') && existsSync(NETIMP);
    caps = {
      ok: true,
      netem: netem.status === 0,
      netemReason: netem.status === 0 ? '' : `tc netem unavailable (${netem.stderr.trim()}; modprobe sch_netem: ${mp ? (mp.status === 0 ? 'ok' : mp.stderr.trim() || `exit ${mp.status}`) : 'modprobe not installed'})`
        + (netimp ? '' : `; no stand-in either (${existsSync('/dev/net/tun') ? `${NETIMP} not built: make unit-bins` : 'no /dev/net/tun'})`),
      netimp,
      impair: netem.status === 0 ? 'netem' : netimp ? 'netimp' : null,
      tbf: tbf.status === 0,
      tbfReason: tbf.status === 0 ? '' : `tc tbf unavailable (${tbf.stderr.trim()})`,
    };
    return caps;
  } finally {
    run(IP, ['link', 'del', h], { allowFail: true });
    run(IP, ['netns', 'del', ns], { allowFail: true });
  }
}

// tc netem arguments -> netimp's settings line: the subset the stand-in does
// (delay TIME [JITTER] [distribution normal], loss P%, reorder P% [CORR%]).
export function netemToNetimp(args) {
  const a = args[0] === 'netem' ? args.slice(1) : args;
  const ms = (v) => { const m = /^(\d+(?:\.\d+)?)(us|ms|s)?$/.exec(v || ''); if (!m) throw new Error(`netimp: bad time ${v}`); return Number(m[1]) * ({ us: 0.001, s: 1000 }[m[2]] ?? 1); };
  const pct = (v) => { const m = /^(\d+(?:\.\d+)?)%$/.exec(v || ''); if (!m) throw new Error(`netimp: bad share ${v}`); return Number(m[1]) / 100; };
  const out = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i] === 'delay') {
      out.delay_ms = ms(a[++i]);
      if (/^\d/.test(a[i + 1] || '')) out.jitter_ms = ms(a[++i]);
    } else if (a[i] === 'loss') out.loss = pct(a[++i]);
    else if (a[i] === 'reorder') { out.reorder = pct(a[++i]); if (/%$/.test(a[i + 1] || '')) i++; }
    else if (a[i] === 'distribution' && a[i + 1] === 'normal') i++;
    else throw new Error(`netimp cannot stand in for netem ${a.slice(i).join(' ')}`);
  }
  return Object.entries(out).map(([k, v]) => `${k}=${v}`).join(' ');
}

// A netimp process joining hostDev (root namespace) and nsDev (in ns); resolves
// once both TUN devices exist. send(line) -> the helper's one-line answer.
async function startNetimp(hostDev, ns, nsDev, seed) {
  const proc = spawn(NETIMP, [hostDev, ns, nsDev, String(seed)], { stdio: ['pipe', 'pipe', 'pipe'] });
  let buf = '';
  let err = '';
  const waiters = [];
  proc.stdout.on('data', (d) => {
    buf += d.toString();
    for (let i; (i = buf.indexOf('\n')) >= 0;) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      waiters.shift()?.(line);
    }
  });
  proc.stderr.on('data', (d) => { err += d.toString(); });
  const next = () => new Promise((res, rej) => {
    waiters.push(res);
    proc.once('exit', (c) => rej(new Error(`netimp exited (${c}): ${err}`)));
  });
  const ready = await next();
  if (ready !== 'ready') throw new Error(`netimp: ${ready} ${err}`);
  return {
    proc,
    async send(line) {
      proc.stdin.write(`${line}\n`);
      const answer = await next();
      if (answer.startsWith('error')) throw new Error(`netimp ${line}: ${answer}`);
      return answer;
    },
  };
}

// Builds one namespace per tier name (at most 8) and returns
// { links: { NAME: { ns, hostDev, nsDev, hostIp, nsIp } }, startLlmsim(name, port, args),
//   shape(name, qdiscArgs), clear(name), down(name), up(name), stats(name), destroy() }.
// shape() applies the same qdisc at both ends of the link (both directions); with
// impair 'netimp' the links are TUN pairs and netem arguments go to netimp.
export async function createTopology(names, { impair = 'netem' } = {}) {
  const pid = process.pid;
  const links = {};
  const imps = {};
  const procs = new Set();
  let destroyed = false;
  const destroy = () => {
    if (destroyed) return;
    destroyed = true;
    for (const p of procs) { try { p.kill('SIGKILL'); } catch { /* gone */ } }
    for (const l of Object.values(links)) {
      run(IP, ['route', 'del', 'unreachable', `${l.hostIp.replace(/\.\d+$/, '')}.${Number(l.hostIp.split('.')[3]) - 1}/30`, 'metric', '4000'], { allowFail: true });
      run(IP, ['link', 'del', l.hostDev], { allowFail: true });
      run(IP, ['netns', 'del', l.ns], { allowFail: true });
    }
  };
  const onSignal = (sig) => { destroy(); process.exit(sig === 'SIGINT' ? 130 : 143); };
  process.on('exit', destroy);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    for (const [i, name] of names.entries()) {
      const c = name[0];
      const base = (pid & 63) * 4;
      const net = `10.${200 + i}.${(pid >> 6) & 255}`;
      const l = {
        ns: `${PREFIX}-${pid}-${name}`, hostDev: `nf${pid}${c}h`, nsDev: `nf${pid}${c}n`,
        hostIp: `${net}.${base + 1}`, nsIp: `${net}.${base + 2}`,
      };
      links[name] = l;
      run(IP, ['netns', 'add', l.ns]);
      if (impair === 'netimp') {
        imps[name] = await startNetimp(l.hostDev, l.ns, l.nsDev, pid + i);
        procs.add(imps[name].proc);
        // A point-to-point device has no link-local neighbour: the peer is named.
        run(IP, ['addr', 'add', l.hostIp, 'peer', `${l.nsIp}/30`, 'dev', l.hostDev]);
      } else {
        run(IP, ['link', 'add', l.hostDev, 'type', 'veth', 'peer', 'name', l.nsDev, 'netns', l.ns]);
        run(IP, ['addr', 'add', `${l.hostIp}/30`, 'dev', l.hostDev]);
      }
      run(IP, ['link', 'set', l.hostDev, 'up']);
      if (impair === 'netimp') run(IP, ['addr', 'add', l.nsIp, 'peer', `${l.hostIp}/30`, 'dev', l.nsDev], { ns: l.ns });
      else run(IP, ['addr', 'add', `${l.nsIp}/30`, 'dev', l.nsDev], { ns: l.ns });
      run(IP, ['link', 'set', l.nsDev, 'up'], { ns: l.ns });
      run(IP, ['link', 'set', 'lo', 'up'], { ns: l.ns });
      // Without its link, the tier's subnet must not fall through to the default
      // route (which may reach some other host that answers on that port).
      run(IP, ['route', 'replace', 'unreachable', `${net}.${base}/30`, 'metric', '4000']);
    }
  } catch (e) {
    destroy();
    throw e;
  }
  const link = (name) => links[name] || (() => { throw new Error(`no link ${name}`); })();
  const bothEnds = async (name, args) => {
    const l = link(name);
    if (imps[name] && args[0] === 'netem') {
      await imps[name].send(netemToNetimp(args));
      return;
    }
    run(TC, ['qdisc', 'replace', 'dev', l.hostDev, 'root', ...args]);
    run(TC, ['qdisc', 'replace', 'dev', l.nsDev, 'root', ...args], { ns: l.ns });
  };
  return {
    links,
    // llmsim inside the tier's namespace, listening on its address (a fixed port,
    // so a restart after a crash comes back where the gateway expects it).
    async startLlmsim(name, port, args = []) {
      const l = link(name);
      const p = await startProcess(IP, ['netns', 'exec', l.ns, join(BUILD, 'llmsim'), '--host', l.nsIp, '--port', String(port), ...args]);
      procs.add(p.proc);
      p.proc.on('exit', () => procs.delete(p.proc));
      return { ...p, url: `http://${l.nsIp}:${p.port}` };
    },
    shape: bothEnds,
    async clear(name) {
      const l = link(name);
      await imps[name]?.send('');
      run(TC, ['qdisc', 'del', 'dev', l.hostDev, 'root'], { allowFail: true });
      run(TC, ['qdisc', 'del', 'dev', l.nsDev, 'root'], { ns: l.ns, allowFail: true });
    },
    // The far end goes down: the gateway's side loses carrier and what it sends
    // is dropped, as on a cut cable (connects and reads time out; nothing is refused).
    down(name) {
      const l = link(name);
      run(IP, ['link', 'set', l.nsDev, 'down'], { ns: l.ns });
    },
    up(name) {
      const l = link(name);
      run(IP, ['link', 'set', l.nsDev, 'up'], { ns: l.ns });
      run(IP, ['link', 'set', l.hostDev, 'up']);
    },
    // netimp's counters ({ queued, dropped_loss, dropped_full }), or null on a veth link.
    async stats(name) {
      if (!imps[name]) return null;
      return Object.fromEntries((await imps[name].send('stats')).split(' ').map((kv) => kv.split('=')).map(([k, v]) => [k, Number(v)]));
    },
    destroy() {
      destroy();
      process.off('exit', destroy);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
