// A network to break: one network namespace per backend tier, each joined to the
// root namespace (where the gateway and the test run) by its own veth pair, so each
// tier's link can be shaped (tc netem / tbf), taken down and brought back on its own.
//
//   root ns: gateway, test            swnf-<pid>-local: llmsim (local tier)
//     nf<pid>lh 10.200.x.y+1/30  <-veth->  nf<pid>ln 10.200.x.y+2/30
//     nf<pid>ch 10.201.x.y+1/30  <-veth->  nf<pid>cn 10.201.x.y+2/30   swnf-<pid>-cloud
//
// Needs root, `ip netns` and `tc` (Debian: iproute2). Netem needs the sch_netem
// module, tbf sch_tbf; netCapabilities() says what works here, so a test can skip
// with the reason. Names carry the pid of the run: a run removes what runs that no
// longer exist left behind, and its own namespaces on exit, SIGINT and SIGTERM.
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { BUILD, startProcess } from './harness.mjs';

const PREFIX = 'swnf';
const IP = '/usr/sbin/ip';
const TC = '/usr/sbin/tc';
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
// { ok, reason, netem, netemReason, tbf, tbfReason }: whether namespaces can be
// built here at all (root, ip netns, tc), and which qdiscs the kernel has.
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
    caps = {
      ok: true,
      netem: netem.status === 0,
      netemReason: netem.status === 0 ? '' : `tc netem unavailable (${netem.stderr.trim()}; modprobe sch_netem: ${mp ? (mp.status === 0 ? 'ok' : mp.stderr.trim() || `exit ${mp.status}`) : 'modprobe not installed'})`,
      tbf: tbf.status === 0,
      tbfReason: tbf.status === 0 ? '' : `tc tbf unavailable (${tbf.stderr.trim()})`,
    };
    return caps;
  } finally {
    run(IP, ['link', 'del', h], { allowFail: true });
    run(IP, ['netns', 'del', ns], { allowFail: true });
  }
}

// Builds one namespace per tier name (at most 8) and returns
// { links: { NAME: { ns, hostDev, nsDev, hostIp, nsIp } }, startLlmsim(name, port, args),
//   shape(name, qdiscArgs), clear(name), down(name), up(name), destroy() }.
// shape() applies the same qdisc at both ends of the link (both directions).
export function createTopology(names) {
  const pid = process.pid;
  const links = {};
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
    names.forEach((name, i) => {
      const c = name[0];
      const base = (pid & 63) * 4;
      const net = `10.${200 + i}.${(pid >> 6) & 255}`;
      const l = {
        ns: `${PREFIX}-${pid}-${name}`, hostDev: `nf${pid}${c}h`, nsDev: `nf${pid}${c}n`,
        hostIp: `${net}.${base + 1}`, nsIp: `${net}.${base + 2}`,
      };
      links[name] = l;
      run(IP, ['netns', 'add', l.ns]);
      run(IP, ['link', 'add', l.hostDev, 'type', 'veth', 'peer', 'name', l.nsDev, 'netns', l.ns]);
      run(IP, ['addr', 'add', `${l.hostIp}/30`, 'dev', l.hostDev]);
      run(IP, ['link', 'set', l.hostDev, 'up']);
      run(IP, ['addr', 'add', `${l.nsIp}/30`, 'dev', l.nsDev], { ns: l.ns });
      run(IP, ['link', 'set', l.nsDev, 'up'], { ns: l.ns });
      run(IP, ['link', 'set', 'lo', 'up'], { ns: l.ns });
      // Without its link, the tier's subnet must not fall through to the default
      // route (which may reach some other host that answers on that port).
      run(IP, ['route', 'replace', 'unreachable', `${net}.${base}/30`, 'metric', '4000']);
    });
  } catch (e) {
    destroy();
    throw e;
  }
  const link = (name) => links[name] || (() => { throw new Error(`no link ${name}`); })();
  const bothEnds = (name, args) => {
    const l = link(name);
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
    clear(name) {
      const l = link(name);
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
    destroy() {
      destroy();
      process.off('exit', destroy);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
