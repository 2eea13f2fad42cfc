/* `spillway plan`: the capacity planner's command line (docs/planning.md). */
#ifndef SW_PLAN_PLAN_H
#define SW_PLAN_PLAN_H

/* argv[0] is "plan". Returns the process exit status: 0, 1 (a run failed:
 * bad config or trace, with a clear message on stderr), 2 (usage). */
int sw_plan_main(int argc, char **argv);

#endif
