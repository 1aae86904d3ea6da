"""Start-up as a new user meets it: each row a fresh ``python -m tactile_sim …`` process, timed from its start to its
exit (wall seconds; min and max over the repeats, which alternate between this tree and the baseline).

* ``cold demo``: ``tactile-sim demo`` for one step (0.01 s at 100 Hz, no pictures) with an empty Warp kernel cache
  (a fresh folder per run, as on a new machine or after a Warp upgrade): imports, compiling every kernel the demo
  launches, building the sensors, the first step;
* ``warm demo``: the same with the kernel cache that run left: imports, building, the first step;
* ``config error``: ``tactile-sim replay`` of a configuration that is an empty file (the error every command must
  report before anything large happens);
* ``import suite``: ``python -c "import tactile_sim.suite"``, the library's import cost.

Second table (``--breakdown``), what the cold demo's compile is made of, per tree: the Warp modules it compiles, one at
a time (each module's first load timed in a fresh process with an empty cache), their sum, the smallest (about Warp's
fixed cost per module) and the largest.

'warp lines': lines of Warp's own output (banner, driver warning, one per loaded module) the command printed.
Baseline (``--baseline PATH``, optional): another checkout's ``tactile_sim`` package folder (for instance of a
``git worktree add /tmp/base <commit>``), run the same way, alternating with this tree; ratio = baseline / this tree. Targets: cold demo ≤ 20 s, warm demo ≤ 5 s, config error ≤
1 s (issue #18).

    python bench/startup.py [--repeat N] [--baseline PATH] [--breakdown]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WARP_LINE_MARKS = ("Warp ", "Module ", "CUDA driver", "Kernel cache:", "Devices:", '"cpu"')
CASES = ("cold demo", "warm demo", "config error", "import suite")
BREAKDOWN = """
import os, sys, time
import warp._src.context as context
os.cpu_count = lambda: 1  # the library compiles one module at a time: each load is that module's own cost
first_load = {}
load = context.Module.load
def timed_load(module, *args, **kwargs):
    start = time.perf_counter()
    loaded = load(module, *args, **kwargs)
    first_load.setdefault(module.name, time.perf_counter() - start)
    return loaded
context.Module.load = timed_load
from tactile_sim.offline.demo import run_demo
run_demo(sys.argv[1], duration=0.01, pictures=False, progress=False)
for name, seconds in first_load.items():
    print(f"{seconds:.3f} {name}")
"""


def run(package_root: Path, args: list[str], cache: Path) -> tuple[float, int, str]:
    """(wall s, Warp lines printed, combined output) of ``python <args>`` with ``package_root`` importable first and
    ``cache`` as Warp's kernel cache."""
    env = {**os.environ, "PYTHONPATH": str(package_root), "WARP_CACHE_PATH": str(cache), "OMP_NUM_THREADS": "1"}
    env.pop("WARP_LOG_LEVEL", None)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cache.parent)
    wall = time.perf_counter() - start
    output = done.stdout + done.stderr
    return wall, sum(any(m in line for m in WARP_LINE_MARKS) for line in output.splitlines()), output


def cases(scratch: Path) -> dict[str, list[str]]:
    """The command line of each of :data:`CASES` (files and folders inside ``scratch``)."""
    empty = scratch / "empty.yaml"
    empty.write_text("")
    demo = ["-m", "tactile_sim", "demo", "--duration", "0.01", "--no-pictures", "--no-progress", "-o",
            str(scratch / "demo")]
    return {CASES[0]: demo, CASES[1]: demo,
            CASES[2]: ["-m", "tactile_sim", "replay", str(scratch / "none.mcap"), "--config", str(empty), "-o",
                             str(scratch / "out.mcap")],
            CASES[3]: ["-c", "import tactile_sim.suite"]}


def breakdown(package_root: Path, scratch: Path) -> list[tuple[float, str]]:
    """(s, module name) of every module the cold demo compiles, largest first (see the module docstring)."""
    cache = scratch / f"breakdown_{package_root.parent.name}"
    _, _, output = run(package_root, ["-c", BREAKDOWN, str(scratch / "demo")], cache)
    rows = [line.split(" ", 1) for line in output.splitlines() if line[:1].isdigit() and " " in line]
    return sorted(((float(t), name) for t, name in rows if float(t) > 0.02), reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another checkout's tactile_sim package folder to compare with")
    parser.add_argument("--breakdown", action="store_true", help="also time the cold demo's modules one by one")
    args = parser.parse_args()
    trees = {"this": ROOT / "tactile_sim"}
    if args.baseline is not None and args.baseline.resolve() != trees["this"].resolve():
        if not args.baseline.is_dir():
            raise SystemExit(f"--baseline {args.baseline}: not a folder; allowed: a checkout's tactile_sim package folder")
        trees["baseline"] = args.baseline
    times: dict[tuple[str, str], list[float]] = {}
    lines: dict[tuple[str, str], int] = {}
    with tempfile.TemporaryDirectory(prefix="tactile_sim_startup_") as tmp:
        scratch = Path(tmp)
        for r in range(args.repeat):
            for tree, package_root in trees.items():
                cache = scratch / f"cache_{tree}_{r}"  # empty for the cold row, then warm
                for case, argv in cases(scratch).items():
                    wall, warp_lines, output = run(package_root, argv, cache)
                    if case == "warm demo" and "steps at" not in output:
                        raise SystemExit(f"{tree}: the demo failed:\n{output}")
                    times.setdefault((tree, case), []).append(wall)
                    lines[(tree, case)] = warp_lines
        modules = {tree: breakdown(root, scratch) for tree, root in trees.items()} if args.breakdown else {}
    print(f"wall s per command, min–max of {args.repeat} (fresh process each; {os.cpu_count()} cores)")
    head = f"{'command':>14} | {'this':>13} {'warp lines':>10}"
    if "baseline" in trees:
        head += f" | {'baseline':>13} {'warp lines':>10} | {'ratio':>6}"
    print(head)
    for case in CASES:
        t = times[("this", case)]
        row = f"{case:>14} | {min(t):6.2f}–{max(t):6.2f} {lines[('this', case)]:>10}"
        if "baseline" in trees:
            b = times[("baseline", case)]
            row += f" | {min(b):6.2f}–{max(b):6.2f} {lines[('baseline', case)]:>10} | {min(b) / min(t):5.1f}x"
        print(row)
    for tree, rows in modules.items():
        seconds = [t for t, _ in rows]
        print(f"\n{tree}: the cold demo compiles {len(rows)} modules, one at a time {sum(seconds):.1f} s "
              f"(smallest {min(seconds):.2f} s, largest {max(seconds):.2f} s)")
        for t, name in rows:
            print(f"  {t:6.2f}  {name}")


if __name__ == "__main__":
    main()
