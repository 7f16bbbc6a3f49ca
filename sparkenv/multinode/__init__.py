"""More than one Spark (G10): the link each node has (environment/sysfs.py), and the agents the gate runs in
the workload's interpreter for the agreement of the nodes: through the launcher's own TCPStore
(store_agent.py) or a Ray cluster's key-value store (ray_agent.py). The agents are standalone scripts:
the gate runs them by path, never imports them."""

import os


def agent_path(name: str) -> str:
    """Where an agent script lives (next to this file), for the gate to run it."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
