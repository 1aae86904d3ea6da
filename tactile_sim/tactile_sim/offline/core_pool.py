"""The node core kept between the replays of one process: the replay of the next recording with the same
configuration and parameters takes the previous one's core rewound (:meth:`~..ros.node_core.NodeCore.rewind`)
instead of building the sensors again, which is about half the time of replaying a recording of a few seconds. The
output is byte for byte that of a new core (the rewound suite steps exactly as a new one)."""

from __future__ import annotations

from ..config.schema import SuiteConfig
from ..ros.node_core import NodeCore
from ..ros.node_params import NodeParams
from ..ros.throttled_log import LogSink


class CorePool:
    """At most one idle core: that of the latest replay, for its configuration object and parameters. A replay takes
    a core (:meth:`take`) and hands it back when it is done (:meth:`give_back`)."""

    def __init__(self) -> None:
        self._idle: NodeCore | None = None

    def take(self, config: SuiteConfig, params: NodeParams, log: LogSink | None = None) -> NodeCore:
        """The idle core rewound when it was built for ``config`` (the same object) and equal ``params``, else a new
        :class:`NodeCore` (raises what its construction raises); ``log``: the replay's sink."""
        core, self._idle = self._idle, None
        if core is not None and core.config is config and core.params == params:
            core.rewind(log)
            return core
        return NodeCore(config, params, log=log)

    def give_back(self, core: NodeCore) -> None:
        """Keep ``core`` for the next :meth:`take` when it can be rewound (its suite was built from the parameters'
        or the configuration's robot description; one from ``/robot_description`` belongs to its recording)."""
        self._idle = core if core.rewindable else None
