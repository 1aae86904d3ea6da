"""The writing path of a batched replay (``--batch N``): one step's MCAP records of every lane into its bag, lane by
lane (``OutputBag.write_records`` per lane, each from the joined records of all rows: what
``offline.batch_records.BatchRecords`` does when the lanes do not step in lockstep) against all lanes at once
(``io.mcap_file.ChunkRows``: the open chunks as rows of one array, one copy per step).

The records are those of the ``hand 368`` scene of ``bench/replay.py``: 15 TaxelArray messages a step, 21422 bytes
with their heads, each template a separate slice of its row. ms per 1000 steps × N lanes, chunk writes and closing
the bags included, rounds alternating in one process (the machine's speed drifts; compare within a round).

    PYTHONPATH=tactile_sim python bench/chunk_rows.py [--lanes 16] [--steps 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from tactile_sim.io.mcap_file import MESSAGE_HEAD, ChunkRows, message_head
from tactile_sim.offline.output_bag import OutputBag

SIZES = (1194, 1402, 1714) * 5
"""Each record's bytes (head included) of a hand-368 step."""
MSGTYPE = "tactile_sim_msgs/msg/TaxelArray"


def _bags(directory: Path, lanes: int) -> tuple[list[OutputBag], list[tuple[int, ...]]]:
    """``lanes`` new bags with the step's topics declared, and each one's channel ids."""
    bags = [OutputBag(directory / f"lane{k}.mcap", node_name="tactile_sim_node") for k in range(lanes)]
    return bags, [tuple(bag.channels([(f"~/pad{j}", MSGTYPE) for j in range(len(SIZES))])) for bag in bags]


def _memory(lanes: int, channels: tuple[int, ...]) -> tuple[np.ndarray, list[slice]]:
    """Template rows (a gap between records, as in a template memory) with heads, and each record's slice."""
    row, runs = [], []
    for channel, size in zip(channels, SIZES):
        at = len(row) + 16
        row += [0] * 16 + list(message_head(channel, size - MESSAGE_HEAD, 0)) + [7] * (size - MESSAGE_HEAD)
        runs.append(slice(at, at + size))
    return np.tile(np.array(row, np.uint8), (lanes, 1)), runs


def run(directory: Path, lanes: int, steps: int, rows: bool) -> float:
    """Seconds to write ``steps`` steps of ``lanes`` lanes and close the bags."""
    bags, channels = _bags(directory, lanes)
    memory, runs = _memory(lanes, channels[0])
    offsets = tuple(np.concatenate([[0], np.cumsum(SIZES)[:-1]]).tolist())
    joined = np.empty((lanes, sum(SIZES)), np.uint8)
    layouts = [(c, offsets) for c in channels]
    chunk_rows = ChunkRows(lanes, 1 << 18)
    log = [10**9 * (k + 1) for k in range(lanes)]
    t = time.perf_counter()
    if rows:
        chunk_rows.hold([bag.mcap_file for bag in bags], list(range(lanes)))
    for step in range(steps):
        parts = [memory[:, r] for r in runs]
        if rows:
            chunk_rows.write(layouts, np.array(log, np.uint64) + step * 10**7, parts)
        else:
            np.concatenate(parts, axis=1, out=joined)
            for k, bag in enumerate(bags):
                bag.write_records(log[k] + step * 10**7, joined[k], channels[k], offsets)
    for bag in bags:
        bag.close()
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lanes", type=int, default=16)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    scale = 1000 / args.steps * 1e3
    print(f"{'round':>5} | {'lane by lane ms':>15} | {'rows ms':>8} | ratio   (per 1000 steps x {args.lanes} lanes)")
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            times = {}
            for rows in ((False, True) if r % 2 == 0 else (True, False)):
                times[rows] = run(Path(tmp) / "bags", args.lanes, args.steps, rows) * scale
                shutil.rmtree(Path(tmp) / "bags")
            print(f"{r:>5} | {times[False]:>15.1f} | {times[True]:>8.1f} | {times[False] / times[True]:.2f}")


if __name__ == "__main__":
    main()
