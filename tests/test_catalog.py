"""The catalog of Portico's APIs: every service of gen/ gets exactly one servicer, bound by the
generated class it derives from, and the APIs' access rules name only what is served."""

from __future__ import annotations

import dataclasses

import pytest

from app import catalog
from app.gateway.registry import Registry, implemented_service
from app.services.kaas.service import ClusterService
from gen.cnct.kaas.api import api_pb2
from gen.stats import stats_pb2_grpc


class _Stats(stats_pb2_grpc.StatsServiceServicer):
    pass


KAAS = Registry([api_pb2.DESCRIPTOR])


def test_a_servicer_is_bound_to_the_service_of_its_generated_class():
    assert implemented_service(_Stats()) == "stats.StatsService"
    with pytest.raises(ValueError, match="derives from no generated servicer class"):
        implemented_service(object())


def test_a_service_left_without_a_servicer_fails_the_binding():
    with pytest.raises(ValueError, match=r"no servicer for cnct\.kaas\.api\.Cluster"):
        KAAS.bind([])


def test_a_servicer_of_another_service_or_a_second_one_fails_the_binding():
    with pytest.raises(ValueError, match=r"implements stats\.StatsService, not served here"):
        KAAS.bind([_Stats()])
    cluster = object.__new__(ClusterService)
    with pytest.raises(ValueError, match="has two servicers"):
        KAAS.bind([cluster, cluster])


def test_access_rules_may_name_only_served_methods(monkeypatch):
    served = catalog.registry()
    assert catalog.policy(served).is_public("services.auth.AuthService.Login")
    misspelt = dataclasses.replace(
        catalog.ACCESS, admin_only_methods=frozenset({"edgeproto.CloudletInfoApi.InjectInfo"})
    )
    monkeypatch.setattr(catalog, "ACCESS", misspelt)
    with pytest.raises(ValueError, match=r"edgeproto\.CloudletInfoApi\.InjectInfo"):
        catalog.policy(served)
