"""Simulated infrastructure: the clock, MaaS machines, kubeconfigs and a Ceph cluster."""
