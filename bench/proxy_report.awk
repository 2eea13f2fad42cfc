#!/usr/bin/awk -f
# The tables of bench/proxy.sh from its result lines ("TARGET TEST key=value ...",
# TEST being "base" (idle RSS), "wrk" or "sN"): per target, then Spillway's figures divided by each
# other proxy's. Variables: conns, dur, event_ms, window, targets.
{
  t = $1; k = $2
  for (i = 3; i <= NF; i++) { split($i, kv, "="); v[t, k, kv[1]] = kv[2] }
  if (k ~ /^s[0-9]+$/ && !(k in seen)) { seen[k] = 1; tests[++nt] = k }
}
function num(x) { return x == "" ? "-" : x }
function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
function per_stream(t, k) {
  if (v[t, k, "rss_peak_kb"] == "") return ""
  # over the RSS right after start-up: memory kept from earlier runs is not free
  return sprintf("%.1f", (v[t, k, "rss_peak_kb"] - v[t, "base", "rss_kb"]) / v[t, k, "n"])
}
END {
  nt2 = split(targets, tg, " ")
  printf "\nnon-streamed: wrk -t1 -c%s -d%ss, POST 1 KB chat body, canned chat.completion answer\n", conns, dur
  printf "%-9s %9s %9s %9s %11s %8s %7s\n", "target", "req/s", "p50 ms", "p99 ms", "CPU us/req", "RSS MB", "errors"
  split("direct " targets, all, " ")
  for (i = 1; i in all; i++) {
    t = all[i]
    printf "%-9s %9s %9s %9s %11s %8s %7s\n", t, num(v[t, "wrk", "rps"]), num(v[t, "wrk", "p50_ms"]),
      num(v[t, "wrk", "p99_ms"]), num(v[t, "wrk", "cpu_us_req"]), num(v[t, "wrk", "rss_mb"]),
      num(v[t, "wrk", "errors"])
  }
  printf "\nstreams: N at once, one streaming POST each%s, 22 SSE events %s ms apart;\n",
    conn_close == "0" ? " (keep-alive)" : " with Connection: close", event_ms
  printf "at most %s opened and waiting for their first byte\n", window
  printf "%-9s %6s %13s %9s %9s %9s %7s %9s %10s %9s\n", "target", "N", "done/N", "fb p50", "fb p99", "fb max",
    "CPU s", "peak MB", "KB/stream", "up CPU s"
  for (j = 1; j <= nt; j++) {
    k = tests[j]
    for (i = 1; i <= nt2; i++) {
      t = tg[i]
      if (v[t, k, "n"] == "") continue
      printf "%-9s %6s %13s %9s %9s %9s %7s %9.1f %10s %9.2f\n", t, v[t, k, "n"],
        v[t, k, "done"] "/" v[t, k, "n"], v[t, k, "fb_p50_ms"], v[t, k, "fb_p99_ms"],
        v[t, k, "fb_max_ms"], v[t, k, "cpu_s"], v[t, k, "rss_peak_kb"] / 1024, per_stream(t, k),
        v[t, k, "up_cpu_s"]
      if (v[t, k, "done"] < v[t, k, "n"])
        short = short sprintf("  %s, %s streams: %d not done (%d connect errors, %d HTTP errors, %d cut short or no [DONE])\n",
          t, v[t, k, "n"], v[t, k, "n"] - v[t, k, "done"], v[t, k, "connect_err"], v[t, k, "http_err"],
          v[t, k, "n"] - v[t, k, "done"] - v[t, k, "connect_err"] - v[t, k, "http_err"])
    }
  }
  if (short != "") printf "%s", short
  hdr = ""
  for (i = 1; i <= nt2; i++) if (tg[i] != "spillway") { others[++no] = tg[i]; hdr = hdr sprintf(" %16s", "spillway/" tg[i]) }
  if (!no || index(" " targets " ", " spillway ") == 0) exit
  printf "\nratios (Spillway's figure / the other proxy's, same run)\n%-24s%s\n", "figure", hdr
  row("wrk req/s", "wrk", "rps"); row("wrk p50 latency", "wrk", "p50_ms"); row("wrk p99 latency", "wrk", "p99_ms")
  row("wrk CPU us/request", "wrk", "cpu_us_req"); row("wrk RSS", "wrk", "rss_mb")
  for (j = 1; j <= nt; j++) {
    k = tests[j]; n = substr(k, 2)
    row(n " streams done", k, "done"); row(n " streams fb p50", k, "fb_p50_ms")
    row(n " streams fb p99", k, "fb_p99_ms"); row(n " streams CPU s", k, "cpu_s")
    row(n " streams KB/stream", k, "")
  }
}
function row(label, k, f,    i, o, line, a, b) {
  line = sprintf("%-24s", label)
  for (i = 1; i <= no; i++) {
    o = others[i]
    if (f == "") { a = per_stream("spillway", k); b = per_stream(o, k) }
    else { a = v["spillway", k, f]; b = v[o, k, f] }
    line = line sprintf(" %16s", ratio(a, b))
  }
  print line
}
