"""ROS 2 names without ROS: validation, expansion of relative and private names, remapping, DDS topic names.

The rules are ROS 2's (rcl/rmw): a node name is one token; a namespace is absolute (``/`` or ``/a/b``); a token is
letters, digits and ``_``, not starting with a digit. A topic name is absolute (``/a/b``), relative (``a/b``,
resolved in the node's namespace) or private (``~`` or ``~/a``, resolved under the node's fully qualified name);
``{node}`` and ``{ns}`` / ``{namespace}`` are substituted. Remap rules are ``[node:]from:=to``; ``from`` and ``to``
are expanded like topic names and the first rule whose ``from`` equals the expanded name wins; ``__node:=name`` and
``__ns:=/namespace`` rename the node and move it. On the wire a ROS topic ``/a/b`` is the DDS topic ``rt/a/b``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""One name token (node names are one token)."""

ROS_TOPIC_PREFIX = "rt"
"""DDS topic name prefix of ROS topics (``rt/<fully qualified name>``)."""


def check_node_name(name: str) -> str:
    """``name`` when it is a valid node name; ValueError naming the value and the rule otherwise."""
    if not TOKEN.fullmatch(name or ""):
        raise ValueError(f"node name: got {name!r}; allowed: letters, digits and '_', not starting with a digit")
    return name


def check_namespace(namespace: str) -> str:
    """The namespace in canonical form (``""`` → ``/``, a missing leading ``/`` added); ValueError when a token is
    invalid or empty."""
    ns = "/" + namespace.strip("/") if namespace.strip("/") else "/"
    if ns != "/" and not all(TOKEN.fullmatch(t) for t in ns[1:].split("/")):
        raise ValueError(f"namespace: got {namespace!r}; allowed: '/' or '/token[/token...]' with tokens of "
                         "letters, digits and '_', not starting with a digit")
    return ns


def node_fqn(name: str, namespace: str) -> str:
    """Fully qualified node name ``<namespace>/<name>`` (``/name`` in the root namespace)."""
    return f"{namespace.rstrip('/')}/{name}"


def expand_topic(topic: str, name: str, namespace: str) -> str:
    """Fully qualified topic name of ``topic`` for the node ``name`` in ``namespace``; ValueError when invalid."""
    if not topic:
        raise ValueError("topic name: got ''; allowed: an absolute, relative or private (~) name")
    ns = namespace.rstrip("/")
    out = topic.replace("{node}", name).replace("{namespace}", ns).replace("{ns}", ns)
    if out == "~" or out.startswith("~/"):
        out = node_fqn(name, namespace) + out[1:]
    elif not out.startswith("/"):
        out = f"{ns}/{out}"
    tokens = out[1:].split("/")
    if not all(TOKEN.fullmatch(t) for t in tokens):
        raise ValueError(f"topic name {topic!r} (expanded {out!r}): every token must be letters, digits and '_', "
                         "not starting with a digit; '~' only at the start; no empty tokens or trailing '/'")
    return out


def dds_topic_name(fqn: str) -> str:
    """DDS topic name of a fully qualified ROS topic name: ``/a/b`` → ``rt/a/b``."""
    return ROS_TOPIC_PREFIX + fqn


@dataclass(frozen=True)
class RemapRule:
    """One ``[node:]from:=to`` rule; ``node`` None applies to every node."""

    source: str
    target: str
    node: str | None = None

    @classmethod
    def parse(cls, text: str) -> RemapRule:
        """Parse ``[node:]from:=to``; ValueError naming the text and the syntax when malformed."""
        lhs, sep, target = text.partition(":=")
        node, colon, source = lhs.partition(":")
        if not colon:
            node, source = None, lhs
        if not sep or not source or not target or (node is not None and not TOKEN.fullmatch(node)):
            raise ValueError(f"remap rule: got {text!r}; allowed: 'from:=to' or 'node:from:=to' (e.g. "
                             "'/joint_states:=/robot/joint_states', '__node:=skin', '__ns:=/left')")
        return cls(source, target, node)


@dataclass(frozen=True)
class NodeNames:
    """A node's name, namespace and remap rules; resolves the topic names it uses.

    ``rules`` apply in order, the first match wins (as in rcl); ``__node`` / ``__ns`` rules rename or move the node
    (an ``__ns`` rule for a node matches its new name). Raises ValueError for an invalid name, namespace or rule.
    """

    name: str
    namespace: str = "/"
    rules: tuple[RemapRule, ...] = ()

    @classmethod
    def create(cls, name: str, namespace: str = "/", remaps: tuple[str, ...] | list[str] = ()) -> NodeNames:
        """Names of a node called ``name`` in ``namespace`` with remap rules given as ``[node:]from:=to`` text."""
        rules = tuple(RemapRule.parse(r) for r in remaps)
        check_node_name(name)
        renames = [r.target for r in rules if r.source in ("__node", "__name") and r.node in (None, name)]
        if renames:
            name = check_node_name(renames[0])
        moves = [r.target for r in rules if r.source == "__ns" and r.node in (None, name)]
        if moves:
            namespace = moves[0]
        topic_rules = tuple(r for r in rules if r.source not in ("__node", "__name", "__ns"))
        return cls(name, check_namespace(namespace), topic_rules)

    @property
    def fqn(self) -> str:
        """Fully qualified node name."""
        return node_fqn(self.name, self.namespace)

    def resolve(self, topic: str) -> str:
        """Fully qualified name of ``topic`` after expansion and remapping."""
        expanded = expand_topic(topic, self.name, self.namespace)
        for rule in self.rules:
            if rule.node not in (None, self.name):
                continue
            if expand_topic(rule.source, self.name, self.namespace) == expanded:
                return expand_topic(rule.target, self.name, self.namespace)
        return expanded
