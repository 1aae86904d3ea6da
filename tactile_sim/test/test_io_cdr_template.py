"""CdrTemplate and WireMessage: bytes written through a template's views equal rosbags' serialisation of the message
with the same values (rosbags is the independent truth), for every message type the node publishes and every
channel combination; field values of a WireMessage read back as on the rosbags object."""

import dataclasses
import itertools
import struct

import numpy as np
import pytest

from tactile_sim.io.cdr_template import CdrTemplate
from tactile_sim.io.encode import JOINT_STATE, LINK_CONTACT, TAXEL_ARRAY, THERMAL_GRID, WRENCH_STAMPED
from tactile_sim.io.msg_types import deserialize_cdr, message_class, new_message, serialize_cdr, typestore
from tactile_sim.io.readings import TAXEL_CHANNELS
from tactile_sim.io.wire_message import WireMessage
from tactile_sim.ros.sensor_encoders import TAXEL_CHANNELS_OF

CHANNEL_SETS = sorted({tuple(c) for c in TAXEL_CHANNELS_OF.values()} | {("distance", "nearest_points")})


def stamp(sec, nanosec):
    return new_message("builtin_interfaces/msg/Time", sec=sec, nanosec=nanosec)


def header(frame, sec=0, nanosec=0):
    return new_message("std_msgs/msg/Header", stamp=stamp(sec, nanosec), frame_id=frame)


def random_channel(rng, name, n):
    dtype, width = TAXEL_CHANNELS[name]
    size = n * max(width, 1)
    return rng.random(size) < 0.5 if dtype is np.bool_ else (rng.standard_normal(size) * 10.0 ** rng.integers(-6, 3)).astype(np.float32)


def taxel_array(n, channels, frame="pad_link", **values):
    fields = {name: values.get(name, np.zeros(n * max(TAXEL_CHANNELS[name][1], 1), TAXEL_CHANNELS[name][0]))
              for name in channels}
    rest = {k: v for k, v in values.items() if k not in channels}
    return new_message(TAXEL_ARRAY, header=rest.pop("header", header(frame)), sensor_name="pad_é", sensor_type="KinematicTaxel",
                       rows=n, cols=1, positions=np.arange(3 * n), normals=-np.arange(3 * n), radii=np.full(n, 0.002),
                       world_frame_id="world" if "nearest_points" in channels else "", **fields, **rest)


@pytest.mark.parametrize("channels", CHANNEL_SETS)
@pytest.mark.parametrize("n", [0, 1, 5, 30])
def test_taxel_array_bytes_equal_rosbags_for_random_values(channels, n):
    rng = np.random.default_rng(n)
    template = CdrTemplate(taxel_array(n, channels), ("header.stamp", *channels, "valid", "ground_truth"))
    for sec, nanosec, valid, gt in [(0, 0, False, False), (-2, 300_000_000, True, False), (2**31 - 1, 999_999_999,
                                                                                          True, True)]:
        values = {name: random_channel(rng, name, n) for name in channels}
        template.buffer[template.span("header.stamp")] = struct.pack("<iI", sec, nanosec)
        for name, v in values.items():
            template.view(name)[:] = v
        template.view("valid")[0], template.view("ground_truth")[0] = valid, gt
        expected = taxel_array(n, channels, header=header("pad_link", sec, nanosec), valid=valid, ground_truth=gt,
                               **values)
        assert template.cdr() == serialize_cdr(expected)


def test_thermal_grid_and_joint_state_bytes_equal_rosbags():
    rng = np.random.default_rng(1)
    names = [f"link_{k}" for k in range(int(rng.integers(1, 5)))]
    pose = new_message("geometry_msgs/msg/Pose", position=new_message("geometry_msgs/msg/Point", x=-0.01))
    grid = dict(sensor_name="thermal", nx=2, ny=2, nz=3, origin=pose, link_names=names)
    base = new_message(THERMAL_GRID, header=header("tip"), temperatures=np.zeros(12),
                       link_temperatures=np.zeros(len(names)), **grid)
    template = CdrTemplate(base, ("header.stamp", "temperatures", "link_temperatures", "valid", "ground_truth"))
    temps, links = rng.normal(30.0, 5.0, 12).astype(np.float32), rng.normal(25.0, 1.0, len(names)).astype(np.float32)
    template.view("temperatures")[:], template.view("link_temperatures")[:] = temps, links
    template.view("valid")[0] = True
    template.buffer[template.span("header.stamp")] = struct.pack("<iI", 7, 11)
    assert template.cdr() == serialize_cdr(new_message(THERMAL_GRID, header=header("tip", 7, 11), temperatures=temps,
                                                       link_temperatures=links, valid=True, **grid))

    joints = ["slide", "finger_left_joint", "finger_right_joint"]
    template = CdrTemplate(new_message(JOINT_STATE, name=joints, effort=np.zeros(3)), ("header.stamp", "effort"))
    effort = rng.standard_normal(3)
    template.view("effort")[:] = effort
    assert template.cdr() == serialize_cdr(new_message(JOINT_STATE, name=joints, effort=effort))


def vectors(rows):
    return [new_message("geometry_msgs/msg/Vector3", x=float(r[0]), y=float(r[1]), z=float(r[2])) for r in rows]


@pytest.mark.parametrize("n_filters, points, air", list(itertools.product([0, 1, 3], [False, True], [False, True])))
def test_link_contact_and_wrench_bytes_equal_rosbags(n_filters, points, air):
    points = points and n_filters > 0
    rng = np.random.default_rng(n_filters)
    filters = [f"obj_{k}" for k in range(n_filters)]
    matrices = ("force_matrix", "normal_force_matrix", "friction_force_matrix") + ("contact_positions",) * points
    timers = ("current_air_time", "current_contact_time", "last_air_time", "last_contact_time") if air else ()
    zeros = {name: vectors(np.zeros((n_filters, 3))) for name in matrices}
    if points:
        zeros["contact_positions"] = [new_message("geometry_msgs/msg/Point") for _ in range(n_filters)]
    base = new_message(LINK_CONTACT, header=header("palm"), sensor_name="palm_contact", body_name="palm",
                       filter_names=filters, air_time_tracked=air, **zeros)
    changing = ("header.stamp", "wrench", "normal_force", "friction_force", *matrices, *timers, "valid")
    template = CdrTemplate(base, changing)
    wrench, normal, friction = rng.standard_normal(6), rng.standard_normal(3), rng.standard_normal(3)
    values = {name: rng.standard_normal((n_filters, 3)) for name in matrices}
    if points:
        values["contact_positions"][0] = np.nan  # a filter without contact
    times = rng.random(4)
    template.view("wrench")[:], template.view("normal_force")[:], template.view("friction_force")[:] = \
        wrench, normal, friction
    for name, v in values.items():
        template.view(name)[:] = v.reshape(-1)
    for name, v in zip(timers, times):
        template.view(name)[0] = v
    template.view("valid")[0] = True
    template.buffer[template.span("header.stamp")] = struct.pack("<iI", 3, 4)
    w = new_message("geometry_msgs/msg/Wrench", force=vectors([wrench[:3]])[0], torque=vectors([wrench[3:]])[0])
    fields = {name: vectors(v) for name, v in values.items()}
    if points:
        fields["contact_positions"] = [new_message("geometry_msgs/msg/Point", x=p[0], y=p[1], z=p[2])
                                       for p in values["contact_positions"]]
    expected = dataclasses.replace(base, header=header("palm", 3, 4), wrench=w, normal_force=vectors([normal])[0],
                                   friction_force=vectors([friction])[0], valid=True,
                                   **dict(zip(timers, times.tolist())), **fields)
    assert template.cdr() == serialize_cdr(expected)

    stamped = CdrTemplate(new_message(WRENCH_STAMPED, header=header("palm")), ("header.stamp", "wrench"))
    stamped.view("wrench")[:] = wrench
    assert stamped.cdr() == serialize_cdr(new_message(WRENCH_STAMPED, header=header("palm"), wrench=w))


def test_a_template_refuses_strings_unknown_fields_and_paths_through_primitives():
    msg = taxel_array(3, ("force",))
    with pytest.raises(ValueError, match="string"):
        CdrTemplate(msg, ("sensor_name",))
    with pytest.raises(ValueError, match="no field 'forces'"):
        CdrTemplate(msg, ("forces",))
    with pytest.raises(ValueError, match="not a message"):
        CdrTemplate(msg, ("force.x",))
    with pytest.raises(ValueError, match="string"):
        CdrTemplate(msg, ("header",))  # the frame id is part of the header


def test_an_element_of_a_message_sequence_changes_alone():
    """``channels[1].values``: the values of one named channel (its name is a string, so the whole channels field
    could not change); written and read back, equal to rosbags' serialisation of the edited message."""
    channel = message_class("sensor_msgs/msg/ChannelFloat32")
    point = message_class("geometry_msgs/msg/Point32")
    base = new_message("sensor_msgs/msg/PointCloud", header=header("pad"), points=[point(0.0, 0.0, 0.0)] * 2,
                       channels=[channel(name="a", values=np.zeros(3, np.float32)),
                                 channel(name="bé", values=np.zeros(2, np.float32))])
    template = CdrTemplate(base, ("channels[1].values", "points[1]"))
    template.view("channels[1].values")[:] = [1.5, -2.0]
    template.view("points[1]")[:] = [1.0, 2.0, 3.0]
    channels = [base.channels[0], channel(name="bé", values=np.array([1.5, -2.0], np.float32))]
    expected = dataclasses.replace(base, channels=channels, points=[point(0.0, 0.0, 0.0), point(1.0, 2.0, 3.0)])
    assert template.cdr() == serialize_cdr(expected)
    msg = template.wire()
    assert [c.name for c in msg.channels] == ["a", "bé"] and msg.channels[1].values.tolist() == [1.5, -2.0]
    assert msg.points[1].z == 3.0 and msg.points[0].z == 0.0
    assert bytes(typestore().serialize_cdr(msg.message, "sensor_msgs/msg/PointCloud")) == msg.cdr
    for path in ("channels[2].values", "channels[0].values[1]", "header[0]"):
        with pytest.raises(ValueError, match="not an element of a message sequence"):
            CdrTemplate(base, (path,))


def test_a_wire_message_reads_like_its_rosbags_message_and_serialises_to_its_bytes():
    force = np.arange(6, dtype=np.float32)
    template = CdrTemplate(taxel_array(2, ("force",)), ("header.stamp", "force", "valid"))
    template.view("force")[:] = force
    template.view("valid")[0] = True
    template.buffer[template.span("header.stamp")] = struct.pack("<iI", 5, 6)
    msg = template.wire({"header": header("pad_link", 5, 6), "force": force, "valid": True})
    assert isinstance(msg, WireMessage) and msg.__msgtype__ == TAXEL_ARRAY
    assert msg.valid is True and msg.header.stamp.sec == 5 and msg.sensor_name == "pad_é"
    np.testing.assert_array_equal(msg.force, force)
    assert serialize_cdr(msg) is msg.cdr and serialize_cdr(msg, "tactile_sim_msgs/TaxelArray") is msg.cdr
    assert bytes(typestore().serialize_cdr(msg.message, TAXEL_ARRAY)) == msg.cdr
    with pytest.raises(ValueError, match="cannot be serialised as"):
        serialize_cdr(msg, THERMAL_GRID)
    with pytest.raises(AttributeError, match="no field 'forces'"):
        msg.forces

    # fields left in the bytes come from deserialising them
    changed = template.wire({"header": header("pad_link", 5, 6)}, in_bytes=frozenset({"force", "valid"}))
    np.testing.assert_array_equal(changed.force, force)
    assert changed.valid is True
    assert changed.message.sensor_name == deserialize_cdr(changed.cdr, TAXEL_ARRAY).sensor_name


def _fields_equal(a, b):
    """Field-by-field equality of two rosbags messages (arrays elementwise, NaN equal to NaN)."""
    for name in a.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if hasattr(x, "__dataclass_fields__"):
            _fields_equal(x, y)
        elif isinstance(x, list) and x and hasattr(x[0], "__dataclass_fields__"):
            assert len(x) == len(y)
            for u, v in zip(x, y):
                _fields_equal(u, v)
        elif isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        else:
            assert x == y or (x != x and y != y), name


def test_a_wire_message_without_changes_reads_every_changing_field_from_its_bytes():
    rng = np.random.default_rng(3)
    filters = ["can", "cup"]
    base = new_message(LINK_CONTACT, header=header("palm"), sensor_name="palm_contact", body_name="palm",
                       filter_names=filters, air_time_tracked=True,
                       **{m: vectors(np.zeros((2, 3))) for m in ("force_matrix", "normal_force_matrix",
                                                                  "friction_force_matrix")})
    changing = ("header.stamp", "wrench", "normal_force", "force_matrix", "current_air_time", "valid")
    template = CdrTemplate(base, changing)
    template.buffer[template.span("header.stamp")] = struct.pack("<iI", -3, 7)
    for name in ("wrench", "normal_force", "force_matrix"):
        template.view(name)[:] = rng.standard_normal(template.view(name).size)
    template.view("current_air_time")[0], template.view("valid")[0] = 0.25, True
    msg = template.wire()
    truth = deserialize_cdr(msg.cdr, LINK_CONTACT)
    _fields_equal(msg.message, truth)
    assert msg.header.stamp.sec == -3 and msg.header.frame_id == "palm" and msg.valid is True
    assert msg.wrench.torque.z == truth.wrench.torque.z and msg.force_matrix[1].y == truth.force_matrix[1].y
    assert msg.current_air_time == 0.25 and msg.filter_names == filters
    template.view("valid")[0] = False  # later writes leave a taken message alone
    assert msg.valid is True and template.wire().valid is False

    force = np.arange(6, dtype=np.float32)
    taxels = CdrTemplate(taxel_array(2, ("force",)), ("header.stamp", "force", "valid"))
    taxels.view("force")[:] = force
    array = taxels.wire().force
    np.testing.assert_array_equal(array, force)
    assert array.dtype == np.float32 and not array.flags.writeable


def test_a_moved_template_writes_and_reads_in_its_new_memory():
    rng = np.random.default_rng(5)
    n, channels = 4, ("force", "contact")
    template = CdrTemplate(taxel_array(n, channels), ("header.stamp", *channels, "valid"))
    size = len(template.buffer)
    shared = bytearray(size + 16)
    with pytest.raises(ValueError, match="move_to"):
        template.move_to(memoryview(shared)[:size - 1])
    template.move_to(memoryview(shared)[8:8 + size])
    force, contact = random_channel(rng, "force", n), random_channel(rng, "contact", n)
    template.view("force")[:], template.view("contact")[:] = force, contact
    template.view("valid")[0] = True
    template.buffer[template.span("header.stamp")] = struct.pack("<iI", 9, 1)
    expected = serialize_cdr(taxel_array(n, channels, header=header("pad_link", 9, 1), force=force, contact=contact,
                                         valid=True))
    assert template.cdr() == expected == bytes(shared[8:8 + size]) and template.wire().cdr == expected
    assert shared[:8] == bytes(8) and shared[8 + size:] == bytes(8)
