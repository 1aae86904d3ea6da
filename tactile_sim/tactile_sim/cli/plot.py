"""``tactile-sim plot``: the demo's pictures (and summary) from any bag this project wrote."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import USAGE_ERROR, describe_files, fail

DESCRIPTION = """\
Read a bag written by `tactile-sim demo`, `tactile-sim replay` or a recording of tactile_sim_node (one message at a
time) and write its pictures: a heat map per taxel sensor at the moment of largest load, a temperature slice per
thermal grid, joint effort over time per JointTorque sensor, and overview.png. Also prints the per-sensor summary."""


def default_picture_folder(bag: Path) -> Path:
    """Where pictures go by default: next to the bag folder (the folder holding it), or next to a lone file."""
    folder = bag.parent if bag.is_file() else bag
    if (folder / "metadata.yaml").is_file():
        return folder.parent
    return folder if bag.is_file() else bag.parent


def add_plot_command(commands: argparse._SubParsersAction) -> None:
    """Register ``plot`` on the ``tactile-sim`` sub-command parsers."""
    p = commands.add_parser("plot", help="pictures of the sensors in a bag", description=DESCRIPTION,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bag", metavar="BAG", help="rosbag2 folder, .mcap or .db3 file")
    p.add_argument("--sensor", action="append", metavar="NAME",
                   help="only this sensor's pictures (repeatable; default: every sensor and the overview)")
    p.add_argument("-o", "--output", metavar="DIR", help="picture folder (default: the folder holding the bag)")
    p.add_argument("--ground-truth", action="store_true", help="draw the ground-truth topics instead")
    p.set_defaults(func=run_plot_command)


def run_plot_command(args: argparse.Namespace) -> int:
    from ..config.paths import file_in_the_way, in_the_way
    from ..offline.bag_inputs import BagInputError, open_bag
    from ..offline.digest import RunDigest
    from ..offline.plots import write_pictures
    from ..offline.summary import format_table

    bag = Path(args.bag)
    digest = RunDigest(ground_truth=args.ground_truth)
    malformed = (f"bag {str(bag)!r}: a sensor message does not hold what its type says (array sizes that disagree, "
                 "no taxels or cells); allowed: messages as tactile-sim writes them")
    try:
        with open_bag(bag) as reader:
            for topic, log_ns, msg in reader.messages():
                digest.add(topic, log_ns, msg)
        series = digest.series  # every pending message reduced
    except BagInputError as exc:
        return fail("plot", str(exc))
    except (ValueError, IndexError, TypeError, ZeroDivisionError) as exc:  # the digest's reductions of bad arrays
        return fail("plot", f"{malformed} ({type(exc).__name__}: {exc})")
    except Exception as exc:  # noqa: BLE001 - a damaged bag raises many kinds mid-way
        return fail("plot", f"bag {str(bag)!r}: reading stopped: {type(exc).__name__}: {exc}")
    if not series:
        return fail("plot", f"bag {str(bag)!r}: no sensor messages of this project "
                            f"({'ground truth' if args.ground_truth else 'measured'} branch)")
    folder = Path(args.output) if args.output else default_picture_folder(bag)
    blocking = file_in_the_way(folder)
    if blocking is not None:
        return fail("plot", f"picture folder {str(folder)!r} (-o): {str(blocking)!r} {in_the_way(blocking)}, not a "
                            "folder; allowed: a folder, created when missing")
    unknown = set(args.sensor or ()) - {s.name for s in series.values()}  # write_pictures refuses these
    try:
        written = write_pictures(digest, folder, args.sensor, title=f"tactile_sim: {bag.name}")
        table = format_table(digest)
    except ValueError as exc:
        return fail("plot", str(exc) if unknown else f"{malformed} ({exc})", USAGE_ERROR)
    except (IndexError, TypeError, ZeroDivisionError) as exc:
        return fail("plot", f"{malformed} ({type(exc).__name__}: {exc})", USAGE_ERROR)
    print(table)
    print("pictures:\n" + describe_files(written))
    return 0
