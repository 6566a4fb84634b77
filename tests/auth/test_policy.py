"""The authorization policy over every RPC the registry serves."""

from __future__ import annotations

import pytest

from app import catalog
from app.auth.policy import Access

REGISTRY = catalog.registry()
POLICY = catalog.policy(REGISTRY)
access, allows = POLICY.access, POLICY.allows
ALL = [m.full_name for m in REGISTRY]


def test_only_login_and_check_token_are_public():
    public = sorted(m for m in ALL if access(m) is Access.PUBLIC)
    assert public == ["services.auth.AuthService.CheckToken", "services.auth.AuthService.Login"]


def test_health_and_reflection_are_public_on_grpc():
    assert access("/grpc.health.v1.Health/Check") is Access.PUBLIC
    assert access("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo") is Access.PUBLIC


@pytest.mark.parametrize(
    ("role", "method", "allowed"),
    [
        ("viewer", "cnct.kaas.api.Cluster.GetCluster", True),
        ("viewer", "cnct.kaas.api.Cluster.CreateCluster", False),
        ("viewer", "cnct.kaas.api.Cluster.UpgradeCluster", False),
        ("viewer", "edgeproto.AppApi.ShowApp", True),
        ("viewer", "edgeproto.AppApi.DeleteApp", False),
        ("viewer", "v1alpha.PublicAPI.ListenEvents", True),
        ("viewer", "v1alpha.PublicAPI.GetLogs", True),
        ("viewer", "stats.StatsService.GetClusterRadar", True),
        ("viewer", "scheduler.NodeService.Register", False),
        ("viewer", "edgeproto.CloudletRefsApi.ShowCloudletRefs", False),
        ("viewer", "services.auth.AuthService.Logout", True),
        ("operator", "cnct.kaas.api.Cluster.CreateCluster", True),
        ("operator", "scheduler.InstanceService.Create", True),
        ("operator", "edgeproto.CloudletRefsApi.ShowCloudletRefs", False),
        ("operator", "edgeproto.ClusterRefsApi.ShowClusterRefs", False),
        ("operator", "edgeproto.CloudletInfoApi.InjectCloudletInfo", False),
        ("operator", "edgeproto.CloudletInfoApi.ShowCloudletInfo", True),
        ("operator", "edgeproto.NotifyApi.StreamNotice", False),
        ("admin", "edgeproto.NotifyApi.StreamNotice", True),
        ("admin", "edgeproto.CloudletInfoApi.EvictCloudletInfo", True),
        ("node", "scheduler.NodeService.Status", True),
        ("node", "scheduler.NodeService.Register", True),
        ("node", "scheduler.InstanceService.Create", False),
        ("node", "cnct.kaas.api.Cluster.GetCluster", False),
        ("node", "services.auth.AuthService.Logout", True),
        ("nobody", "cnct.kaas.api.Cluster.GetCluster", False),
    ],
)
def test_role_matrix(role, method, allowed):
    assert allows(role, method) is allowed


def test_every_rpc_has_a_decision_and_admins_reach_all():
    for method in ALL:
        assert allows("admin", method)
        if access(method) is Access.ROLES:
            assert not allows("unknown-role", method), method


def test_viewer_reaches_no_mutating_rpc():
    mutating = ("Create", "Delete", "Update", "Add", "Scale", "Upgrade", "Register", "Start")
    for method in ALL:
        if method.rsplit(".", 1)[1].startswith(mutating):
            assert not allows("viewer", method), method
