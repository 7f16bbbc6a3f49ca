"""More than one Spark (G10): the launch a workload intends, the link each node has, and the agreement
of the nodes through the launcher's own key-value store."""
