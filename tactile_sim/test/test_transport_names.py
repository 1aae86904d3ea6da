"""ROS 2 name resolution without ROS: the expansion table of the ROS 2 design article "Topic and Service name
mapping to DDS" (node ``my_node`` in ``/my_ns``), rcl's remapping rules, and the validation errors."""

import pytest

from tactile_sim.transport.names import NodeNames, RemapRule, check_namespace, dds_topic_name, expand_topic

# (input, expanded) for node my_node in /my_ns — the design article's table
EXPANSIONS = [
    ("ping", "/my_ns/ping"),
    ("/ping", "/ping"),
    ("~", "/my_ns/my_node"),
    ("~/ping", "/my_ns/my_node/ping"),
    ("{node}", "/my_ns/my_node"),
    ("{node}/ping", "/my_ns/my_node/ping"),
    ("{ns}/ping", "/my_ns/ping"),
    ("{namespace}/ping", "/my_ns/ping"),
    ("foo/bar", "/my_ns/foo/bar"),
]


@pytest.mark.parametrize("name,expanded", EXPANSIONS)
def test_expansion_follows_the_ros2_table(name, expanded):
    assert expand_topic(name, "my_node", "/my_ns") == expanded


def test_root_namespace_has_no_double_slash():
    assert expand_topic("ping", "n", "/") == "/ping"
    assert expand_topic("~/ping", "n", "/") == "/n/ping"
    assert NodeNames.create("n").fqn == "/n"


@pytest.mark.parametrize("bad", ["", "/", "a//b", "a/", "1abc", "a/2b", "a b", "~x", "a/~/b", "/{other}"])
def test_invalid_topic_names_are_rejected_with_the_rule(bad):
    with pytest.raises(ValueError, match="topic name"):
        expand_topic(bad, "n", "/")


@pytest.mark.parametrize("ns,canonical", [("", "/"), ("/", "/"), ("left", "/left"), ("/a/b/", "/a/b")])
def test_namespaces_are_canonical(ns, canonical):
    assert check_namespace(ns) == canonical


@pytest.mark.parametrize("bad", ["/a//b", "/1a", "/a-b"])
def test_invalid_namespaces_name_the_value(bad):
    with pytest.raises(ValueError, match=repr(bad)):
        check_namespace(bad)


def test_dds_topic_names_carry_the_rt_prefix():
    assert dds_topic_name("/tactile_sim_node/pad_left") == "rt/tactile_sim_node/pad_left"


def test_remap_rules_match_expanded_names_and_expand_their_target():
    names = NodeNames.create("my_node", "/my_ns", ["ping:=pong", "/joint_states:=/arm/joint_states",
                                                  "~/markers:=viz"])
    assert names.resolve("ping") == "/my_ns/pong"
    assert names.resolve("/my_ns/ping") == "/my_ns/pong"  # same expanded name as 'ping'
    assert names.resolve("/joint_states") == "/arm/joint_states"
    assert names.resolve("~/markers") == "/my_ns/viz"
    assert names.resolve("/ping") == "/ping"  # a different name: unchanged


def test_the_first_matching_rule_wins_and_node_rules_apply_only_to_their_node():
    names = NodeNames.create("a", "/", ["other:x:=y", "a:x:=first", "x:=second"])
    assert names.resolve("x") == "/first"
    assert NodeNames.create("b", "/", ["a:x:=first", "x:=second"]).resolve("x") == "/second"


def test_node_name_and_namespace_rules():
    names = NodeNames.create("tactile_sim_node", "/", ["__node:=skin", "__ns:=/left", "~/pad:=~/left_pad"])
    assert (names.name, names.namespace, names.fqn) == ("skin", "/left", "/left/skin")
    assert names.resolve("~/pad") == "/left/skin/left_pad"
    assert names.resolve("~/other") == "/left/skin/other"
    # a node-specific namespace rule matches the node's new name (rcl renames first)
    assert NodeNames.create("a", "/", ["__node:=b", "b:__ns:=/x"]).namespace == "/x"
    assert NodeNames.create("a", "/", ["__node:=b", "a:__ns:=/x"]).namespace == "/"


@pytest.mark.parametrize("bad", ["noassign", ":=x", "x:=", "1node:x:=y"])
def test_malformed_rules_show_the_syntax(bad):
    with pytest.raises(ValueError, match="from:=to"):
        RemapRule.parse(bad)


def test_invalid_node_names_are_rejected():
    with pytest.raises(ValueError, match="node name"):
        NodeNames.create("9lives")
    with pytest.raises(ValueError, match="node name"):
        NodeNames.create("ok", "/", ["__node:=not-ok"])
