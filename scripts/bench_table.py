#!/usr/bin/env python3
"""scripts/bench's table: kvsim_bench's JSON (and the fuzz rows, a TSV) -> one table with ratios.

    scripts/bench_table.py MODEL_JSON [FUZZ_TSV]

Exits 1 when a benchmark reported an error (its trace did not pass) or a row is missing.
"""
import json
import sys


def medians(path):
    """benchmark name -> its counters (the median aggregate when there are repetitions)."""
    data = json.load(open(path))
    rows, errors = {}, []
    for b in data["benchmarks"]:
        parts = b.get("run_name", b["name"]).split("/")
        name = "/".join(p for p in parts if ":" not in p and p != "real_time")
        if b.get("error_occurred"):
            errors.append(f"{name}: {b.get('error_message', 'error')}")
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        rows[name] = b
    return rows, errors


def number(value, unit):
    if unit == "s":
        for scale, suffix in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
            if value >= scale:
                return f"{value / scale:.3g} {suffix}"
        return f"{value * 1e9:.3g} ns"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def main():
    rows, errors = medians(sys.argv[1])
    table = []  # (measure, value, note)

    def counter(name, key):
        return rows[name][key] if name in rows else None

    traces = counter("explore", "traces_per_s")
    table.append(("kvsim explore (v0.30.0) traces/s", traces, "", ""))
    running = sorted(int(n.split("/")[1]) for n in rows if n.startswith("concurrency/"))  # text log off
    for n in running:
        table.append((f"request-steps/s, N = {n:,} running", counter(f"concurrency/{n}", "request_steps_per_s"), "",
                      "goal >= 1,000,000"))
    if len(running) > 1:
        lo, hi = running[0], running[-1]
        ratio = counter(f"concurrency/{lo}", "request_steps_per_s") / counter(f"concurrency/{hi}", "request_steps_per_s")
        table.append((f"ratio: time per request-step, N = {hi:,} / N = {lo:,}", ratio, "x", "goal <= 1.5"))
    for name in (n for n in rows if n.startswith("concurrency_text_log/")):
        n = int(name.split("/")[1])
        table.append((f"request-steps/s, N = {n:,} running, text log on", counter(name, "request_steps_per_s"), "", ""))
    pools = sorted(int(n.split("/")[1]) for n in rows if n.startswith("pool/"))
    for b in pools:
        table.append((f"time per step, {b:,} blocks", counter(f"pool/{b}", "s_per_step"), "s", ""))
    if len(pools) > 1:
        ratio = counter(f"pool/{pools[-1]}", "s_per_step") / counter(f"pool/{pools[0]}", "s_per_step")
        table.append((f"ratio: time per step, {pools[-1]:,} / {pools[0]:,} blocks", ratio, "x", "goal <= 1.5"))
    stepping = {}  # blocks -> time per step once the pool is built: (run - setup) / steps
    for b in pools:
        setup = counter(f"pool_setup/{b}", "s_per_run")
        table.append((f"setup per run (engine and checkers, before step 0), {b:,} blocks", setup, "s", ""))
        if setup is not None:
            steps = counter(f"pool/{b}", "steps")
            stepping[b] = (counter(f"pool/{b}", "s_per_step") * steps - setup) / steps
            table.append((f"time per step after setup, {b:,} blocks", stepping[b], "s", ""))
    if len(stepping) > 1:
        lo, hi = min(stepping), max(stepping)
        table.append((f"ratio: time per step after setup, {hi:,} / {lo:,} blocks", stepping[hi] / stepping[lo], "x", ""))
    per_input = {k: counter(f"fuzz_input_{k}", "s_per_input") for k in ("parse", "print", "mutate", "run")}
    if any(v is not None for v in per_input.values()):
        table.append(("fuzz input: parse", per_input["parse"], "s", ""))
        table.append(("fuzz input: print", per_input["print"], "s", ""))
        table.append(("fuzz input: custom mutator (parse, mutate, normalize, print)", per_input["mutate"], "s", ""))
        table.append(("fuzz input: run (no replay, no text log)", per_input["run"], "s", ""))
        if all(v is not None for v in per_input.values()):
            parse_print = per_input["parse"] + per_input["print"]
            table.append(("share: parse + print / the mutator's call", parse_print / per_input["mutate"], "%", ""))
            table.append(("share: parse + print / (mutator + run)",
                          parse_print / (per_input["mutate"] + per_input["run"]), "%", ""))
    if len(sys.argv) > 2:
        for line in open(sys.argv[2]):
            measure, value, note = line.rstrip("\n").split("\t")
            table.append((measure, float(value), "x" if measure.startswith("ratio") else "", note))

    width = max(len(m) for m, *_ in table)
    print(f"{'measure':<{width}}  {'value':>12}  note")
    for measure, value, unit, note in table:
        if value is None:
            shown = "missing"
        elif unit == "x":
            shown = f"x{value:.2f}"
        elif unit == "%":
            shown = f"{100 * value:.1f} %"
        else:
            shown = number(value, unit)
        print(f"{measure:<{width}}  {shown:>12}  {note}".rstrip())
    for e in errors:
        print(f"bench: {e}", file=sys.stderr)
    missing = [m for m, v, *_ in table if v is None]
    return 1 if errors or missing else 0


if __name__ == "__main__":
    sys.exit(main())
