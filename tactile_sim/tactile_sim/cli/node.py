"""``tactile-sim node``: run ``tactile_sim_node`` on rclpy or, without a ROS install, on DDS.

    tactile-sim node --transport dds --config my_sensors.yaml --robot robot.urdf -p update_rate:=200
    tactile-sim node --transport dds --loopback -r /joint_states:=/arm/joint_states --namespace /left

``--transport auto`` (the default) picks rclpy when it is importable, else DDS. Both run the same node
(:class:`~.node_runtime.NodeRuntime` over :class:`~.node_core.NodeCore`): same topics, QoS, parameters and
diagnostics. Parameters (``-p name:=value``, the value read as YAML) are those of :data:`~.node_params.PARAMETERS`;
``--config`` and ``--robot`` (a URDF file, read into ``robot_description``) are shortcuts. Under rclpy the
parameters travel in a temporary ``--params-file`` and run-time changes work through ROS parameter services; over
DDS they are fixed at start-up. DDS options: ``--domain-id`` (default ``ROS_DOMAIN_ID``), ``--loopback`` (traffic
on 127.0.0.1 only; otherwise Cyclone's configuration, ``CYCLONEDDS_URI`` when set), ``--use-sim-time``. SIGINT and
SIGTERM end the node cleanly (exit status 0); an invalid configuration or parameter exits with status 2.

The command line module imports neither the library nor a middleware; :func:`run_node_command` does.
"""

from __future__ import annotations

import argparse
import importlib.util
import signal
import tempfile
from pathlib import Path
from typing import Any

import yaml

from ..ros.node_params import SPECS, NodeParams
from .check import early_config

NODE_NAME = "tactile_sim_node"
TRANSPORTS = ("auto", "rclpy", "dds")


def add_node_command(commands: Any) -> None:
    """Register ``node`` on the sub-command parsers of the ``tactile-sim`` command line."""
    p = commands.add_parser("node", help="run tactile_sim_node (rclpy, or DDS without ROS)",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transport", choices=TRANSPORTS, default="auto",
                   help="rclpy, dds (no ROS install needed) or auto: rclpy when importable, else dds")
    p.add_argument("--config", help="sensor configuration YAML (path or package://); parameter config_file")
    p.add_argument("--robot", type=Path, help="URDF file of the robot; parameter robot_description")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME:=VALUE",
                   help=f"node parameter (repeatable); names: {', '.join(SPECS)}")
    p.add_argument("-r", "--remap", action="append", default=[], metavar="FROM:=TO",
                   help="ROS remap rule (repeatable), e.g. /joint_states:=/arm/joint_states")
    p.add_argument("--name", default=NODE_NAME, help="node name")
    p.add_argument("--namespace", default="/", help="node namespace")
    p.add_argument("--use-sim-time", action="store_true", help="node clock from /clock")
    p.add_argument("--domain-id", type=int, help="DDS domain (dds transport; default ROS_DOMAIN_ID or 0)")
    p.add_argument("--loopback", action="store_true", help="dds transport: keep all traffic on 127.0.0.1")
    p.add_argument("-v", "--verbose", action="store_true", help="also print Warp's own output")
    p.set_defaults(func=run_node_command)


def parse_params(args: argparse.Namespace) -> dict[str, Any]:
    """Parameter values of the command line (``-p``, ``--config``, ``--robot``); ValueError naming a bad one."""
    values: dict[str, Any] = {}
    for item in args.param:
        name, sep, text = item.partition(":=")
        if not sep:
            raise ValueError(f"-p {item!r}: allowed: NAME:=VALUE (e.g. update_rate:=200)")
        if name not in SPECS:
            from ..config.errors import suggest  # imports the config layer (torch): only on this error

            raise ValueError(f"-p {item!r}: unknown parameter {name!r}; allowed: {', '.join(SPECS)}"
                             + (f"; {suggest(name, SPECS)}" if suggest(name, SPECS) else ""))
        try:  # a value as ROS 2 reads one: YAML
            value = yaml.safe_load(text) if text else ""
        except yaml.YAMLError as exc:
            where = getattr(exc, "problem", None) or type(exc).__name__
            raise ValueError(f"-p {item!r}: the value is not valid YAML ({where}); allowed: NAME:=VALUE with a YAML "
                             "value (e.g. update_rate:=200, device:=cpu)") from None
        values[name] = tuple(value) if isinstance(value, list) else value
    if args.config is not None:
        if not args.config.strip():  # an empty value would leave the package's demo configuration in place
            raise ValueError(f"--config {args.config!r}: an empty path; allowed: a sensor YAML file (path or "
                             "package://)")
        values["config_file"] = args.config
    if args.robot is not None:
        from ..text_files import read_text_file

        try:
            values["robot_description"] = read_text_file(args.robot, "--robot")
        except OSError as exc:
            raise ValueError(f"--robot {str(args.robot)!r}: cannot read the URDF file ({exc.strerror})") from exc
    return values


def rclpy_available() -> bool:
    """True when rclpy is importable (a sourced ROS 2 installation)."""
    return importlib.util.find_spec("rclpy") is not None


def run_node_command(args: argparse.Namespace) -> int:
    """Run the node until SIGINT/SIGTERM; returns the exit status (2 for invalid parameters or configuration)."""
    try:
        values = parse_params(args)
        params = NodeParams(**values)
    except (ValueError, TypeError) as exc:
        print(f"tactile-sim node: {exc}", flush=True)
        return 2
    status = early_config("node", params.config_file, device=params.device)
    if status is not None:
        return status
    transport = args.transport
    if transport == "auto":
        transport = "rclpy" if rclpy_available() else "dds"
    if transport == "rclpy":
        return run_rclpy(values, args)
    return run_dds(params, args)


def run_rclpy(values: dict[str, Any], args: argparse.Namespace) -> int:
    """The rclpy node (:func:`tactile_sim.ros.node.main`) with the parameters in a temporary params file."""
    from ..geometry.warp_kernels import set_verbose
    from ..ros.node import main as rclpy_main  # imports rclpy

    set_verbose(args.verbose)

    params = {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}
    params["use_sim_time"] = bool(args.use_sim_time)
    with tempfile.TemporaryDirectory(prefix="tactile_sim_node_") as tmp:
        path = Path(tmp) / "params.yaml"
        path.write_text(yaml.safe_dump({"/**": {"ros__parameters": params}}), encoding="utf-8")
        ros_args = [NODE_NAME, "--ros-args", "--params-file", str(path), "-r", f"__node:={args.name}",
                    "-r", f"__ns:={args.namespace}"]
        for rule in args.remap:
            ros_args += ["-r", rule]
        return rclpy_main(args=ros_args)


def run_dds(params: NodeParams, args: argparse.Namespace) -> int:
    """The node on :class:`~tactile_sim.transport.dds.DdsTransport` until SIGINT/SIGTERM."""
    from ..config.loader import load_config  # the library (torch, warp): imported only to run a node
    from ..errors import ConfigError, SceneError
    from ..geometry.warp_kernels import set_verbose
    from ..transport.dds import LOOPBACK_CONFIG, DdsTransport  # cyclonedds
    from ..ros.node_core import NodeCore
    from ..ros.node_runtime import NodeRuntime

    set_verbose(args.verbose)
    try:
        transport = DdsTransport(args.name, args.namespace, remaps=tuple(args.remap), domain_id=args.domain_id,
                                 config=LOOPBACK_CONFIG if args.loopback else None, use_sim_time=args.use_sim_time)
    except ValueError as exc:
        print(f"tactile-sim node: {exc}", flush=True)
        return 2
    try:
        core = NodeCore(load_config(params.config_file), params, log=transport.log, name=transport.name)
    except (ConfigError, SceneError, ValueError, OSError) as exc:
        transport.log("error", f"cannot start: {exc}")
        transport.close()
        return 2
    NodeRuntime(core, transport)
    previous = {sig: signal.signal(sig, lambda *_: transport.shutdown()) for sig in (signal.SIGINT, signal.SIGTERM)}
    transport.log("info", f"DDS domain {transport.domain_id}"
                          f"{' (loopback only)' if args.loopback else ''}, node {transport.names.fqn}: "
                          + (f"{len(core.schedule)} sensors from {params.config_file} at {params.update_rate:g} Hz"
                             if core.ready else f"config {params.config_file} loaded; waiting for /robot_description"))
    try:
        transport.spin()
    finally:
        transport.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    transport.log("info", "shut down")
    return 0
