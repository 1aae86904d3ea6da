"""JointState → TaxelArray round trip through a running ``tactile_sim_node``: over the DDS transport (no ROS) and,
where ROS 2 is sourced, through the rclpy node.

The node runs as its own process (``tactile-sim node --transport dds|rclpy``, update_rate 1 kHz, ground truth on,
markers off, one torch thread); this process is the controller and the consumer, over the DDS transport on
loopback. Each round trip: publish a joint state that flips the robot between two configurations, then wait for the
first ground-truth TaxelArray (of a pad whose forces differ between them) showing the new configuration; the time
between the two is the round trip: transport in, the wait for the next update tick (≤ 1 ms), the update (FK, suite
step, encoding, CDR), transport out and the decoding here. Baseline (``echo``): the same exchange with a process
that answers each joint state at once with a TaxelArray of the scene's size over the DDS transport (no sensor
computation, no timer), i.e. the transport's own share. Scenes (from ``bench/node_core.py``):

* ``demo pads``: the demo gripper with its two 30-taxel KinematicTaxel pads, open ↔ squeezed on the can;
* ``hand 368``: the Allegro-like hand with 15 KinematicTaxel pads (368 taxels), fingers straight ↔ flexed onto
  the sphere.

Reports median and p99 over ``--updates`` round trips (≥ 500), and the node's own mean update time and achieved
update rate (its ``/diagnostics``) for context. The rclpy rows need a sourced ROS 2 with rmw_cyclonedds and a built
``tactile_sim_msgs``; otherwise they are reported as skipped.

    python bench/transport.py [--updates 500] [--rate 1000] [--transports dds rclpy]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

from node_core import hand_config, hand_urdf  # bench/node_core.py: the same 368-taxel hand
from tactile_sim.demo_trajectory import DEMO_URDF, OPEN, SQUEEZE
from tactile_sim.io.msg_types import deserialize_cdr, new_message, serialize_cdr
from tactile_sim.io.stamps import time_msg, time_msg_to_ns
from tactile_sim.ros.node_runtime import TF_STATIC_QOS
from tactile_sim.transport.base import DEFAULT, QosProfile
from tactile_sim.transport.dds import LOOPBACK_CONFIG, DdsTransport

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tactile_sim"
DEMO_YAML = PACKAGE / "config" / "demo_sensors.yaml"
TAXEL_ARRAY = "tactile_sim_msgs/msg/TaxelArray"
START_TIMEOUT = 120.0


def node_process(transport: str, domain: int, config: Path, urdf: Path, rate: float, log: Path, topic: str,
                 taxels: int) -> subprocess.Popen:
    """The node under test (or the echo baseline) as a subprocess (its output in ``log``)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PACKAGE), os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", ROS_DOMAIN_ID=str(domain))
    args = [sys.executable, "-m", "tactile_sim", "node", "--transport", transport, "--config", str(config),
            "--robot", str(urdf), "-p", f"update_rate:={rate}", "-p", "viz_rate:=0", "-p", "publish_ground_truth:=true"]
    if transport == "echo":
        args = [sys.executable, str(Path(__file__).resolve()), "--echo", str(domain), topic, str(taxels)]
    elif transport == "dds":
        args += ["--loopback", "--domain-id", str(domain)]
    else:  # rmw_cyclonedds on the same loopback-only configuration
        uri = log.with_suffix(".xml")
        uri.write_text(LOOPBACK_CONFIG)
        env.update(RMW_IMPLEMENTATION="rmw_cyclonedds_cpp", CYCLONEDDS_URI=f"file://{uri}")
    return subprocess.Popen(args, cwd=PACKAGE, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)


def stop(node: subprocess.Popen) -> None:
    """End a node process: SIGTERM (it shuts down cleanly), SIGKILL after 20 s."""
    node.terminate()
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


class Client:
    """Controller and consumer: publishes joint states, records (arrival s, stamp ns, force signature) per message."""

    def __init__(self, domain: int, names: list[str], topic: str):
        self.t = DdsTransport("transport_bench", domain_id=domain, config=LOOPBACK_CONFIG, log=lambda *a: None)
        self.names = names
        self.joints = self.t.create_publisher("/joint_states", "sensor_msgs/msg/JointState", DEFAULT)
        self.arrivals: list[tuple[float, int, float]] = []
        self.t.create_subscription(topic, TAXEL_ARRAY, self._on_taxels, QosProfile(depth=100), raw=True)
        self.diagnostics: list = []
        self.t.create_subscription("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", self.diagnostics.append,
                                   DEFAULT)
        publish_demo_base(self.t)

    def _on_taxels(self, raw: bytes) -> None:
        arrival = time.perf_counter()
        msg = deserialize_cdr(raw, TAXEL_ARRAY)
        self.arrivals.append((arrival, time_msg_to_ns(msg.header.stamp), float(np.abs(msg.force).sum())))

    def send(self, q: np.ndarray) -> tuple[float, int]:
        """Publish a joint state; (perf_counter s, system time ns) when its bytes were handed to DDS."""
        now_ns = time.time_ns()
        head = new_message("std_msgs/msg/Header", stamp=time_msg(now_ns * 1e-9))
        data = serialize_cdr(new_message("sensor_msgs/msg/JointState", header=head, name=self.names, position=q,
                                         velocity=np.zeros(len(q))))
        sent = time.perf_counter()
        self.joints.publish_cdr(data)
        return sent, now_ns

    def settle(self, q: np.ndarray, seconds: float) -> float:
        """Hold ``q`` for ``seconds``; the force signature of the last message."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.send(q)
            self.t.spin(timeout=0.01)
        return self.arrivals[-1][2]

    def round_trip(self, q: np.ndarray, signature: float, timeout: float = 2.0) -> float | None:
        """Seconds from sending ``q`` to the first message with its force ``signature``; None on timeout."""
        start = len(self.arrivals)
        sent, sent_ns = self.send(q)

        def arrived():
            return any(stamp >= sent_ns and abs(sig - signature) <= 1e-6 * max(1.0, abs(signature))
                       for _, stamp, sig in self.arrivals[start:])

        if not self.t.spin(until=arrived, timeout=timeout):
            return None
        return next(t for t, stamp, sig in self.arrivals[start:]
                    if stamp >= sent_ns and abs(sig - signature) <= 1e-6 * max(1.0, abs(signature))) - sent

    def node_figures(self) -> tuple[str, str]:
        """(mean update ms, achieved update rate Hz) of the node's last /diagnostics ("-" without)."""
        for msg in reversed(self.diagnostics):
            values = {kv.key: kv.value for kv in msg.status[0].values}
            if "step_time_mean_ms" in values:
                return values["step_time_mean_ms"], values["update_rate_achieved_hz"]
        return "-", "-"


def echo(domain: int, topic: str, taxels: int) -> None:
    """Baseline server: answer every joint state at once with a TaxelArray of ``taxels`` taxels whose forces are the
    sum of the joint positions (stamped now), until SIGTERM."""
    t = DdsTransport("transport_echo", domain_id=domain, config=LOOPBACK_CONFIG)
    pub = t.create_publisher(topic, TAXEL_ARRAY, DEFAULT)
    zeros = np.zeros(3 * taxels, dtype=np.float32)
    template = new_message(TAXEL_ARRAY, positions=zeros, normals=zeros, radii=zeros[:taxels], force=zeros,
                           torque=zeros)

    def answer(msg) -> None:
        force = np.full(3 * taxels, float(np.sum(msg.position)), dtype=np.float32)
        pub.publish(replace(template, header=new_message("std_msgs/msg/Header", stamp=time_msg(time.time())),
                            force=force))

    t.create_subscription("/joint_states", "sensor_msgs/msg/JointState", answer, DEFAULT)
    signal.signal(signal.SIGTERM, lambda *_: t.shutdown())
    t.spin()
    t.close()


def bench_scene(transport: str, label: str, config: Path, urdf: Path, names: list[str], q_a, q_b, topic: str,
                taxels: int, args, work: Path) -> None:
    domain = random.Random(os.getpid() + hash(label) + hash(transport)).randrange(100, 230)
    log = work / f"{transport}_{label.replace(' ', '_')}.log"
    node = node_process(transport, domain, config, urdf, args.rate, log, topic, taxels)
    client = Client(domain, names, topic)
    try:
        end = time.monotonic() + START_TIMEOUT
        while not client.arrivals and node.poll() is None and time.monotonic() < end:
            client.send(q_a)  # the echo baseline answers joint states only
            client.t.spin(timeout=0.05)
        if not client.arrivals or node.poll() is not None:
            raise RuntimeError(f"{transport} node did not publish {topic}; its log ({log}):\n{log.read_text()[-3000:]}")
        sig_a, sig_b = client.settle(q_a, 0.5), client.settle(q_b, 0.5)
        if abs(sig_a - sig_b) <= 1e-6 * max(1.0, abs(sig_a)):
            raise RuntimeError(f"{label}: {topic} reads the same forces in both configurations")
        times, misses = [], 0
        for k in range(args.updates):  # the robot stands at q_b: the first round trip goes to q_a
            rt = client.round_trip(q_b if k % 2 else q_a, sig_b if k % 2 else sig_a)
            if rt is None:
                misses += 1
            else:
                times.append(rt)
        ms = 1e3 * np.array(times)
        update_ms, rate = client.node_figures()
        print(f"{transport:>6} {label:>10} {taxels:>6} {len(times):>7} {misses:>6} | {np.median(ms):9.3f} "
              f"{np.percentile(ms, 99):9.3f} {ms.min():8.3f} | {update_ms:>9} {rate:>9}", flush=True)
    finally:
        stop(node)
        client.t.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--updates", type=int, default=500, help="round trips per scene (>= 500 for p99)")
    parser.add_argument("--rate", type=float, default=1000.0, help="node update_rate, Hz")
    parser.add_argument("--transports", nargs="+", default=["echo", "dds", "rclpy"], choices=["echo", "dds", "rclpy"])
    parser.add_argument("--echo", nargs=3, metavar=("DOMAIN", "TOPIC", "TAXELS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo:
        echo(int(args.echo[0]), args.echo[1], int(args.echo[2]))
        return
    with tempfile.TemporaryDirectory(prefix="bench_transport_") as tmp:
        work = Path(tmp)
        demo = yaml.safe_load(DEMO_YAML.read_text())
        demo["sensors"] = [s for s in demo["sensors"] if s["type"] == "KinematicTaxel"]
        demo["robot"] = {"urdf": str(DEMO_URDF)}
        (work / "demo_pads.yaml").write_text(yaml.safe_dump(demo))
        (work / "hand.urdf").write_text(hand_urdf())
        (work / "hand.yaml").write_text(yaml.safe_dump(hand_config(work / "hand.urdf")))
        hand_names = [f"f{f}_j{k}" for f in range(4) for k in range(4)]
        straight = np.zeros(16)
        flexed = np.array([0.0 if n.endswith("j0") else 0.6 for n in hand_names])
        scenes = [
            ("demo pads", work / "demo_pads.yaml", DEMO_URDF, ["slide", "finger_left_joint", "finger_right_joint"],
             np.array([0.0, OPEN, OPEN]), np.array([0.0, SQUEEZE, SQUEEZE]), "/tactile_sim_node/pad_left/ground_truth",
             60),
            ("hand 368", work / "hand.yaml", work / "hand.urdf", hand_names, straight, flexed,
             "/tactile_sim_node/f1_medial_pad/ground_truth", 368),
        ]
        print(f"JointState -> TaxelArray round trip (ms), node update_rate {args.rate:g} Hz; the node's mean update "
              f"(ms) and achieved rate (Hz) from its /diagnostics; echo: transport-only baseline")
        print(f"{'node':>6} {'scene':>10} {'taxels':>6} {'updates':>7} {'missed':>6} | {'median':>9} {'p99':>9} "
              f"{'min':>8} | {'upd ms':>9} {'rate Hz':>9}")
        rclpy = importlib.util.find_spec("rclpy") is not None
        for transport in args.transports:
            if transport == "rclpy" and not rclpy:
                print(f"{'rclpy':>6}    skipped: rclpy is not importable here (source a ROS 2 Jazzy setup with "
                      "rmw_cyclonedds and tactile_sim_msgs built to measure the rclpy node)")
                continue
            for scene in scenes:
                bench_scene(transport, *scene, args, work)


if __name__ == "__main__":
    main()
