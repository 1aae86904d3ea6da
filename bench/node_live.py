"""The node as it runs: ``tactile-sim node --transport dds|rclpy`` as its own process, driven with JointStates.

This process is the controller and the consumer, over the DDS transport on loopback (the rclpy node runs
rmw_cyclonedds on the same loopback-only configuration). It publishes joint states (alternating between two
configurations, so every update has work to do) either at a fixed rate (``--loop open``) or in a closed loop
(``--loop closed``: the next one when the answer to the previous one has arrived, and not before its slot at
``--rate``). An *answer* is complete when every sensor topic of the scene has delivered its message of one update;
the round trip of a joint state is the time from handing it to DDS to the completion of the first update stamped at
or after that moment (node clock = this machine's wall clock), so in the timer mode it includes the wait for the
next tick, in the ``step_on: joint_states`` mode it is the answer to that joint state.

Reported per run, over ``--duration`` s after ``--warmup`` s: achieved rate (complete answers per second), round
trip median / p99 / max, the node's CPU share of one core (utime + stime of the child from /proc, every thread),
and the node's own per-update breakdown from its ``/diagnostics`` (means over the 1 s windows of the run: decode
per joint state, world, suite_step, encode, publish, and step = world + suite_step + encode), the deadline misses
it counted, and its longest update ('longest', ms: a miss with short updates is a late wake-up). What it leaves out:
the executor's own time (waking up, taking the sample, dispatching), which shows only in the round trip and the CPU
share; the client shares the machine's two cores with the node.

Scenes (as ``bench/node_core.py``): ``demo pads`` (the demo gripper's two 30-taxel pads), ``hand 368`` (15 pads,
368 taxels), ``demo`` (all 10 sensors of ``config/demo_sensors.yaml``) and ``echo``: the floor of the transport,
a process on the same transport (and rclpy executor) that answers each joint state at once with a stamped
``std_msgs/Header`` and does nothing else. The rclpy rows need a sourced ROS 2 (rclpy, rmw_cyclonedds_cpp) with
``tactile_sim_msgs`` built; without one they are skipped with the reason.

    python bench/node_live.py --step-on joint_states --rate 1000 --loop closed --runs 3
    python bench/node_live.py --transports rclpy --executors events single_threaded --scenes echo "hand 368"
    python bench/node_live.py --step-on timer --rate 100 --loop open --runs 3
    python bench/node_live.py --transports dds --step-on timer --rate 200 --loop open --scenes demo --duration 60 \
        --realtime-priorities 0 50
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from node_core import hand_config, hand_urdf  # bench/node_core.py: the same 368-taxel hand
from tactile_sim.config import load_config
from tactile_sim.demo_trajectory import DEMO_URDF, OPEN, SQUEEZE
from tactile_sim.io.msg_types import new_message, serialize_cdr
from tactile_sim.io.stamps import time_msg
from tactile_sim.ros.node_core import NodeCore
from tactile_sim.ros.node_params import EXECUTORS, NodeParams
from tactile_sim.ros.node_runtime import JOINT_STATES_QOS, TF_STATIC_QOS
from tactile_sim.ros.update_stats import PHASES
from tactile_sim.transport.base import DEFAULT, QosProfile
from tactile_sim.transport.dds import LOOPBACK_CONFIG, DdsTransport

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tactile_sim"
DEMO_YAML = PACKAGE / "config" / "demo_sensors.yaml"
NODE = "/tactile_sim_node"
START_TIMEOUT = 120.0
ANSWER_TIMEOUT = 1.0
"""s a closed loop waits for an answer before it counts a miss and sends the next joint state."""
STAMP = struct.Struct("<iI")
"""header.stamp (sec, nanosec) right after the 4-byte CDR encapsulation of every message the node publishes."""
CDR_LE = b"\x00\x01\x00\x00"
"""CDR encapsulation header: plain CDR, little endian."""
EMPTY_STRING = struct.pack("<I", 1) + b"\x00"
"""A CDR string of length 0 (its length 1 counts the terminating NUL)."""
ECHO_TOPIC = "/tactile_sim_node/echo"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def start_node(transport: str, domain: int, config: Path | None, executor: str, args, log: Path,
               priority: int) -> subprocess.Popen:
    """The node under test on ``transport`` (dds on loopback, or rclpy with rmw_cyclonedds on the loopback
    configuration and the ``executor`` parameter), markers off, one torch thread, ``realtime_priority`` (its output
    in ``log``); ``config`` None: the echo floor (normal scheduling)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PACKAGE), os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", ROS_DOMAIN_ID=str(domain))
    if transport == "rclpy":
        uri = log.with_suffix(".xml")
        uri.write_text(LOOPBACK_CONFIG)
        env.update(RMW_IMPLEMENTATION="rmw_cyclonedds_cpp", CYCLONEDDS_URI=f"file://{uri}")
    if config is None:
        command = [sys.executable, str(Path(__file__).resolve()), "--echo-node", transport, str(domain), executor]
    else:
        command = [sys.executable, "-m", "tactile_sim", "node", "--transport", transport, "--config", str(config),
                   "-p", f"update_rate:={args.rate}", "-p", f"step_on:={args.step_on}", "-p", "viz_rate:=0",
                   "-p", f"executor:={executor}", "-p", f"realtime_priority:={priority}"]
        if transport == "dds":
            command += ["--loopback", "--domain-id", str(domain)]
    return subprocess.Popen(command, cwd=PACKAGE, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)


def header_now() -> bytes:
    """CDR of a ``std_msgs/Header`` stamped with the wall clock, empty frame_id: the echo floor's answer."""
    now = time.time_ns()
    return CDR_LE + STAMP.pack(now // 1_000_000_000, now % 1_000_000_000) + EMPTY_STRING


def echo_node(transport: str, domain: int, executor: str) -> None:
    """The transport's floor: answer every joint state at once with :func:`header_now` on :data:`ECHO_TOPIC`
    (raw CDR both ways, no decoding, no sensor work) until SIGTERM/SIGINT."""
    if transport == "dds":
        t = DdsTransport("tactile_sim_node", domain_id=domain, config=LOOPBACK_CONFIG, log=lambda *a: None)
        pub = t.create_publisher(ECHO_TOPIC, "std_msgs/msg/Header", DEFAULT)
        t.create_subscription("/joint_states", "sensor_msgs/msg/JointState", lambda raw: pub.publish_cdr(header_now()),
                              JOINT_STATES_QOS, raw=True)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: t.shutdown())
        t.spin()
        t.close()
        return
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Header

    from tactile_sim.ros.node import make_executor, rclpy_qos

    rclpy.init()
    node = rclpy.create_node("tactile_sim_node")
    pub = node.create_publisher(Header, ECHO_TOPIC, rclpy_qos(DEFAULT))
    node.create_subscription(JointState, "/joint_states", lambda raw: pub.publish(header_now()),
                             rclpy_qos(JOINT_STATES_QOS), raw=True)
    ex = make_executor(executor, markers=False)
    ex.add_node(node)
    try:
        ex.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        ex.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


def stop(node: subprocess.Popen) -> None:
    """End a node process: SIGINT (it shuts down cleanly, as at Ctrl-C), SIGKILL after 20 s."""
    node.send_signal(signal.SIGINT)
    try:
        node.wait(timeout=20)
    except subprocess.TimeoutExpired:
        node.kill()


def publish_demo_base(t: DdsTransport) -> None:
    """The demo's static world -> base_link transform (identity), latched on ``t``."""
    base = new_message("geometry_msgs/msg/TransformStamped", child_frame_id="base_link",
                       header=new_message("std_msgs/msg/Header", frame_id="world"),
                       transform=new_message("geometry_msgs/msg/Transform",
                                             rotation=new_message("geometry_msgs/msg/Quaternion", w=1.0)))
    t.create_publisher("/tf_static", "tf2_msgs/msg/TFMessage", TF_STATIC_QOS).publish(
        new_message("tf2_msgs/msg/TFMessage", transforms=[base]))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time (s) of process ``pid`` so far, all its threads (/proc/<pid>/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Client:
    """Publishes joint states; records the completion (wall ns) of every update whose messages all arrived."""

    def __init__(self, domain: int, names: list[str], topics: list[tuple[str, str]]):
        self.t = DdsTransport("node_live_bench", domain_id=domain, config=LOOPBACK_CONFIG, log=lambda *a: None)
        self.names = names
        self.joints = self.t.create_publisher("/joint_states", "sensor_msgs/msg/JointState", DEFAULT)
        self.n_topics = len(topics)
        self._pending: dict[int, int] = {}
        self.completed: list[tuple[int, int]] = []
        """(update stamp ns, wall ns when its last message arrived), in completion order."""
        self.subs = [self.t.create_subscription(topic, typ, self._on_message, QosProfile(depth=100), raw=True)
                     for topic, typ in topics]
        self.diagnostics: list[tuple[int, dict[str, str]]] = []
        self.t.create_subscription("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", self._on_diagnostics,
                                   DEFAULT)
        publish_demo_base(self.t)  # the demo's world -> base_link

    def _on_message(self, raw: bytes) -> None:
        sec, nanosec = STAMP.unpack_from(raw, 4)
        stamp = sec * 1_000_000_000 + nanosec
        count = self._pending.get(stamp, 0) + 1
        if count == self.n_topics:
            self._pending.pop(stamp, None)
            self.completed.append((stamp, time.time_ns()))
        else:
            self._pending[stamp] = count

    def _on_diagnostics(self, msg) -> None:
        self.diagnostics.append((time.time_ns(), {kv.key: kv.value for kv in msg.status[0].values}))

    def send(self, q: np.ndarray) -> int:
        """Publish a joint state at ``q``; the wall time (ns) just before its bytes were handed to DDS."""
        data = serialize_cdr(new_message("sensor_msgs/msg/JointState", name=self.names, position=q,
                                         velocity=np.zeros(len(q)),
                                         header=new_message("std_msgs/msg/Header", stamp=time_msg(time.time()))))
        sent = time.time_ns()
        self.joints.publish_cdr(data)
        return sent

    def answered(self, sent_ns: int, start: int) -> int | None:
        """Wall ns of the first completed update (from index ``start``) stamped at or after ``sent_ns``."""
        return next((wall for stamp, wall in self.completed[start:] if stamp >= sent_ns), None)


def drive(client: Client, configs: tuple[np.ndarray, np.ndarray], rate: float, loop: str, seconds: float) -> list:
    """Send joint states for ``seconds``; [(sent ns, index into client.completed at the time)] per joint state."""
    period = 1.0 / rate
    sends = []
    start = time.perf_counter()
    k = 0
    while (now := time.perf_counter()) - start < seconds:
        slot = start + k * period
        if now < slot:
            client.t.spin(timeout=slot - now)
            continue
        first = len(client.completed)
        sent = client.send(configs[k % 2])
        sends.append((sent, first))
        k += 1
        if loop == "closed":
            client.t.spin(until=lambda: client.answered(sent, first) is not None, timeout=ANSWER_TIMEOUT)
        elif loop == "open" and k * period < now - start - 1.0:  # more than 1 s behind: restart the schedule
            start, k = now, 0
    return sends


def row_name(transport: str, priority: int) -> str:
    """The table's first column: the transport (and executor), with ``/rt<priority>`` under SCHED_FIFO."""
    return f"{transport}/rt{priority}" if priority else transport


def run_once(scene: dict, transport: str, executor: str, args, work: Path, index: int, priority: int) -> dict:
    """One run of one scene with the node at real-time ``priority`` (0: normal): start the node, warm up, measure;
    the figures of the run."""
    domain = random.Random(f"{os.getpid()} {scene['label']} {transport} {executor} {index} {priority}").randrange(
        100, 230)
    log = work / f"{scene['label'].replace(' ', '_')}_{transport}_{executor}_rt{priority}_{index}.log"
    node = start_node(transport, domain, scene["config"], executor, args, log, priority)
    client = Client(domain, scene["names"], scene["topics"])
    try:
        end = time.monotonic() + START_TIMEOUT
        while not client.completed and node.poll() is None and time.monotonic() < end:
            client.send(scene["configs"][0])
            client.t.spin(timeout=0.05)
        if not client.completed:
            raise RuntimeError(f"the node answered nothing; its log ({log}):\n{log.read_text()[-3000:]}")
        drive(client, scene["configs"], args.rate, args.loop, args.warmup)
        cpu0, wall0, done0 = cpu_seconds(node.pid), time.time_ns(), len(client.completed)
        sends = drive(client, scene["configs"], args.rate, args.loop, args.duration)
        cpu1, wall1 = cpu_seconds(node.pid), time.time_ns()
        client.t.spin(timeout=0.2)  # the answers still on their way
        done = [w for _, w in client.completed[done0:] if w <= wall1]
        trips = [client.answered(sent, first) for sent, first in sends]
        ms = 1e-6 * np.array([a - s for (s, _), a in zip(sends, trips) if a is not None])
        windows = [v for t, v in client.diagnostics if wall0 + 1e9 < t <= wall1]
        node_ms = {k: float(np.nanmean([float(v[f"{k}_time_mean_ms"]) for v in windows])) if windows else np.nan
                   for k in PHASES}
        node_ms["step"] = float(np.mean([float(v["step_time_mean_ms"]) for v in windows])) if windows else np.nan
        return {"sent": len(sends), "rate": len(done) / ((wall1 - wall0) * 1e-9), "median": np.median(ms),
                "p99": np.percentile(ms, 99), "max": ms.max(), "missed": sum(a is None for a in trips),
                "cpu": 100 * (cpu1 - cpu0) / ((wall1 - wall0) * 1e-9), "node": node_ms,
                "misses": sum(int(v["deadline_misses_window"]) for v in windows),
                "longest": max((float(v["step_time_max_ms"]) for v in windows), default=np.nan)}
    finally:
        stop(node)
        client.t.close()


def scenes(work: Path) -> dict[str, dict]:
    """The scenes: configuration file, joint names, two configurations, and the node's sensor topics and types."""
    demo = yaml.safe_load(DEMO_YAML.read_text())
    demo["robot"] = {"urdf": str(DEMO_URDF)}
    (work / "demo.yaml").write_text(yaml.safe_dump(demo))
    demo["sensors"] = [s for s in demo["sensors"] if s["type"] == "KinematicTaxel"]
    (work / "demo_pads.yaml").write_text(yaml.safe_dump(demo))
    (work / "hand.urdf").write_text(hand_urdf())
    (work / "hand.yaml").write_text(yaml.safe_dump(hand_config(work / "hand.urdf")))
    gripper = ["slide", "finger_left_joint", "finger_right_joint"]
    hand = [f"f{f}_j{k}" for f in range(4) for k in range(4)]
    squeeze = (np.array([0.0, OPEN, OPEN]), np.array([0.0, SQUEEZE, SQUEEZE]))
    flex = (np.zeros(16), np.array([0.0 if n.endswith("j0") else 0.6 for n in hand]))
    out = {}
    for label, config, names, configs in (("demo pads", "demo_pads.yaml", gripper, squeeze),
                                          ("hand 368", "hand.yaml", hand, flex),
                                          ("demo", "demo.yaml", gripper, squeeze)):
        core = NodeCore(load_config(work / config), NodeParams(viz_rate=0.0))
        topics = [(t.name.replace("~", NODE, 1), t.message_type) for t in core.topics() if t.name.startswith("~")]
        out[label] = {"label": label, "config": work / config, "names": names, "configs": configs, "topics": topics}
    out["echo"] = {"label": "echo", "config": None, "names": gripper, "configs": squeeze,
                   "topics": [(ECHO_TOPIC, "std_msgs/msg/Header")]}
    return out


def span(values) -> str:
    """'low–high' of a figure over the runs ('-' where no run has it, e.g. the echo floor's node phases)."""
    values = np.asarray(values, dtype=float)
    if np.isnan(values).all():
        return "-"
    lo, hi = np.nanmin(values), np.nanmax(values)
    return f"{lo:.4g}–{hi:.4g}" if f"{lo:.4g}" != f"{hi:.4g}" else f"{lo:.4g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transports", nargs="+", choices=("dds", "rclpy"), default=["dds", "rclpy"],
                        help="the node's transport (rclpy: skipped where it is not importable)")
    parser.add_argument("--executors", nargs="+", choices=EXECUTORS, default=["auto"],
                        help="the rclpy node's executor parameter (one row set each)")
    parser.add_argument("--step-on", choices=("timer", "joint_states"), default="joint_states",
                        help="the node's step_on parameter")
    parser.add_argument("--rate", type=float, default=1000.0, help="Hz: joint states sent, and the node's update_rate")
    parser.add_argument("--loop", choices=("open", "closed"), default="closed",
                        help="open: send at --rate; closed: also wait for the previous answer")
    parser.add_argument("--duration", type=float, default=10.0, help="s measured per run")
    parser.add_argument("--warmup", type=float, default=2.0, help="s driven before each measurement")
    parser.add_argument("--runs", type=int, default=3, help="runs per scene (the table gives ranges over them)")
    parser.add_argument("--scenes", nargs="+", choices=("echo", "demo pads", "hand 368", "demo"),
                        default=["echo", "demo pads", "hand 368", "demo"])
    parser.add_argument("--realtime-priorities", nargs="+", type=int, default=[0], metavar="P",
                        help="the node's realtime_priority parameter (0: normal scheduling); several: runs "
                             "interleaved, a row set each (e.g. 0 50)")
    parser.add_argument("--echo-node", nargs=3, metavar=("TRANSPORT", "DOMAIN", "EXECUTOR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_node:
        echo_node(args.echo_node[0], int(args.echo_node[1]), args.echo_node[2])
        return
    rclpy = importlib.util.find_spec("rclpy") is not None
    with tempfile.TemporaryDirectory(prefix="bench_node_live_") as tmp:
        work = Path(tmp)
        table = scenes(work)
        print(f"node: step_on {args.step_on}, update_rate {args.rate:g} Hz; client: {args.loop} loop at "
              f"{args.rate:g} Hz; {args.duration:g} s per run after {args.warmup:g} s; ms unless marked")
        print(f"{'transport':>15} {'scene':>9} {'run':>3} | {'rate Hz':>7} {'median':>7} {'p99':>7} {'max':>7} "
              f"{'lost':>4} {'CPU %':>5} | {'decode':>6} {'world':>6} {'step':>6} {'encode':>6} {'publish':>7} "
              f"{'update':>6} {'miss':>4} {'longest':>7}")
        for transport in args.transports:
            if transport == "rclpy" and not rclpy:
                print(f"{'rclpy':>15} skipped: rclpy is not importable here (source a ROS 2 Jazzy setup with "
                      "rmw_cyclonedds_cpp and tactile_sim_msgs built)")
                continue
            for executor in args.executors if transport == "rclpy" else ["auto"]:
                name = f"rclpy/{executor}" if transport == "rclpy" else transport
                for label in args.scenes:
                    runs: dict[int, list[dict]] = {p: [] for p in args.realtime_priorities}
                    for k in range(args.runs):
                        for priority in args.realtime_priorities:  # interleaved: A, B, A, B, ...
                            r = run_once(table[label], transport, executor, args, work, k, priority)
                            runs[priority].append(r)
                            n = r["node"]
                            print(f"{row_name(name, priority):>15} {label:>9} {k:>3} | {r['rate']:7.1f} "
                                  f"{r['median']:7.3f} {r['p99']:7.3f} {r['max']:7.2f} {r['missed']:>4} "
                                  f"{r['cpu']:5.0f} | {n['decode']:6.3f} {n['world']:6.3f} {n['suite_step']:6.3f} "
                                  f"{n['encode']:6.3f} {n['publish']:7.3f} {n['step']:6.3f} {r['misses']:>4} "
                                  f"{r['longest']:7.2f}",
                                  flush=True)
                    for priority, done in runs.items():
                        print(f"{row_name(name, priority):>15} {label:>9} all | rate {span([r['rate'] for r in done])} "
                              f"Hz, round trip median {span([r['median'] for r in done])} / p99 "
                              f"{span([r['p99'] for r in done])} / max {span([r['max'] for r in done])} ms, CPU "
                              f"{span([r['cpu'] for r in done])} %, node update {span([r['node']['step'] for r in done])}"
                              f" ms + publish {span([r['node']['publish'] for r in done])} ms, deadline misses "
                              f"{span([r['misses'] for r in done])}, longest update "
                              f"{span([r['longest'] for r in done])} ms", flush=True)

if __name__ == "__main__":
    main()
