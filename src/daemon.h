/* The daemon's lifecycle: load and validate the config and its PII engine,
 * build the live state, serve on one libevent loop, reload (SIGHUP,
 * POST /admin/reload, a change of the file), drain on SIGTERM/SIGINT (a
 * second signal exits at once), tear down. main.c only parses flags. */
#ifndef SW_DAEMON_H
#define SW_DAEMON_H

/* Loads and validates the config at path and builds its PII engine, printing
 * every error to stderr. 0 when valid, else 1 (the exit status of
 * --check-config). Prints nothing on success. */
int sw_daemon_check_config(const char *path);

/* Runs the gateway with the config at path until a signal stops it. Returns
 * the process exit status: 0 after a drain (or a second signal), 1 when the
 * config is invalid or the daemon could not start. */
int sw_daemon_run(const char *path);

#endif
