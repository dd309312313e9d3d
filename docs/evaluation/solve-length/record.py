"""Record every solve and every enforced plan of a virtual replay (opsche periodic, shipped config).

Analysis helper for docs/evaluation.md ("Longer solves disrupt more"), not part of opsche: it wraps
the flow's ``solve_snapshot`` and the enforcer's ``enforce`` to keep each solve's snapshot and plan
in memory, then (with RESOLVE=S) solves every snapshot that got a plan again with S seconds and no
stall stop, or (with VARIANTS='[[name, {"stall": s, "workers": w}], ...]') re-runs every recorded
solve under each variant twice and counts answers equal to, better and worse than the recorded one.

    python record.py TRACE.json DURATION_S OUT_DIR [CONFIG.yaml|-]
"""

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import opsche_daemon.plans.enforcement as enf
import opsche_daemon.plans.flow as flow
from opsche_daemon.config import Trigger, load_config
from opsche_daemon.daemon.logs import configure_logging
from opsche_daemon.optimiser import cpsat
from opsche_daemon.replay.driver import ReplayOptions
from opsche_daemon.simulation.run import replay_virtual_to_file
from opsche_daemon.trace.model import read_trace
from opsche_daemon.trace.result import SchedulerRun

trace_path, duration, out = Path(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3])
cfg_path = Path(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] != "-" else None
out.mkdir(parents=True, exist_ok=True)
solves, plans = [], []
solve = flow.solve_snapshot


def recording_solve(snapshot, **kw):
    plan = solve(snapshot, **kw)
    keep = {k: v for k, v in kw.items() if k not in ("cancel", "extra_filter")}
    solves.append({"snapshot": snapshot, "kw": keep, "plan": plan})
    return plan


enforce = enf.PlanEnforcer.enforce


async def recording_enforce(self, plan, fresh, trigger):
    placed, disrupted = self.placed_total, self.disrupted_total
    outcome = await enforce(self, plan, fresh, trigger)
    plans.append(
        {
            "placements": len(plan.placements),
            "moves": len(plan.moves),
            "evictions": len(plan.evictions),
            "outcome": str(outcome),
            "placed": self.placed_total - placed,
            "disrupted": self.disrupted_total - disrupted,
        }
    )
    return outcome


flow.solve_snapshot = recording_solve
enf.PlanEnforcer.enforce = recording_enforce
config = load_config(cfg_path)
config = replace(config, optimiser=replace(config.optimiser, trigger=Trigger.PERIODIC))
run = SchedulerRun(
    label="periodic", scheduler_name=config.scheduler_name, trigger="periodic",
    blocking=False, preemption=True, settings={"backend": "virtual"},
)  # fmt: skip
options = ReplayOptions(scheduler=run, initial_timeout_s=180, duration_s=duration)
configure_logging("error")
result = replay_virtual_to_file(
    read_trace(trace_path), trace_path, options, config, out / "result.json", out=lambda _: None
)
print(f"solves {len(solves)}, plans {len(plans)}, placed {result.summary.plan_pods_placed}")
(out / "plans.json").write_text(json.dumps(plans))


def figures(plan):
    return len(plan.placements), len(plan.moves) + len(plan.evictions), str(plan.status)


if float(os.environ.get("RESOLVE", "0")):
    rows = []
    for i, sv in enumerate(solves):
        if sv["plan"].empty:
            continue
        kw = {**sv["kw"], "time_limit": float(os.environ["RESOLVE"]), "stall_s": 0.0}
        again = solve(sv["snapshot"], **kw)
        rows.append({"i": i, "recorded": figures(sv["plan"]), "longer": figures(again)})
        print(rows[-1], flush=True)
    (out / "resolve.json").write_text(json.dumps(rows))

if os.environ.get("VARIANTS"):

    def key(plan):  # lexicographic: higher priorities placed first, then fewer disruptions
        return sorted((p.priority for p in plan.placements), reverse=True), -figures(plan)[1]

    recorded = [key(sv["plan"]) for sv in solves]

    for name, spec in json.loads(os.environ["VARIANTS"]):
        cpsat.CpSatSolver.__init__.__kwdefaults__["workers"] = spec.get("workers", 2)
        for rep in range(2):
            started, same, better, worse, placed, disrupted = time.monotonic(), 0, 0, 0, 0, 0
            for sv, before in zip(solves, recorded):
                kw = {**sv["kw"], **({"stall_s": spec["stall"]} if "stall" in spec else {})}
                plan = solve(sv["snapshot"], **kw)
                after = key(plan)
                same, better, worse = (
                    same + (after == before),
                    better + (after > before),
                    worse + (after < before),
                )
                placed, disrupted = placed + len(after[0]), disrupted - after[1]
            took = time.monotonic() - started
            print(
                f"{name} run {rep}: {took / len(solves):.3f} s per solve, same {same}, "
                f"better {better}, worse {worse}; placed {placed}, disrupted {disrupted}"
            )
