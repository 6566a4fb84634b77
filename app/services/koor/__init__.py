"""Storage data-control-center: statistics of a simulated Ceph cluster (``stats.StatsService``)."""
