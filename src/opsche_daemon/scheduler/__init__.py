"""The scheduler: the loop, the scheduling and binding cycles, and the watch's event handlers.

* ``cycle``: ``Scheduler``, its loop and ``schedule_one`` (scheduling cycle, binding cycle);
* ``events``: ``EventHandlers``, watch events into the cache and the queue;
* ``nominator``: preemptors nominated to a node;
* ``binder``: the ``Binder`` Protocol the kube layer implements.
"""

from __future__ import annotations

from opsche_daemon.scheduler.binder import Binder
from opsche_daemon.scheduler.cycle import AttemptResult, Scheduler
from opsche_daemon.scheduler.events import EventHandlers, node_may_help
from opsche_daemon.scheduler.nominator import Nominator

__all__ = ["AttemptResult", "Binder", "EventHandlers", "Nominator", "Scheduler", "node_may_help"]
