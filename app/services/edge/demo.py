"""``portico serve --demo``: a small, consistent edge world, seeded once per database.

One operator with one cloudlet, one developer with an app, a flavor, a cluster instantiated on
the cloudlet and the app instantiated on it. They go through the ordinary create path, so the
resource manager brings the cloudlet, cluster instance and app instance to READY on the clock.
A marker (``edge.demo``/``seeded``) keeps deleted demo objects from coming back on restart.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import app.services.edge.kinds as k
from app.services.edge.objects import EdgeObjects
from app.services.edge.records import DEMO_MARKER
from app.services.status import Rejected
from gen.distributed_match_engine import loc_pb2
from gen.edgeproto import (
    app_inst_pb2,
    app_pb2,
    cloudlet_pb2,
    cluster_pb2,
    clusterinst_pb2,
    common_pb2,
    developer_pb2,
    flavor_pb2,
    operator_pb2,
)

log = logging.getLogger(__name__)

_OPERATOR = operator_pb2.OperatorKey(name="Demo Telecom")
_DEVELOPER = developer_pb2.DeveloperKey(name="Demo Games")
_FLAVOR = flavor_pb2.FlavorKey(name="x1.small")
_CLOUDLET = cloudlet_pb2.CloudletKey(operator_key=_OPERATOR, name="demo-cloudlet")
_CLUSTER = cluster_pb2.ClusterKey(name="demo-cluster")
_APP = app_pb2.AppKey(developer_key=_DEVELOPER, name="demo-app", version="1.0")
_CLUSTER_INST = clusterinst_pb2.ClusterInstKey(
    cluster_key=_CLUSTER, cloudlet_key=_CLOUDLET, developer=_DEVELOPER.name
)

DEMO_WORLD = (
    (k.OPERATOR, operator_pb2.Operator(key=_OPERATOR)),
    (k.DEVELOPER, developer_pb2.Developer(key=_DEVELOPER, email="dev@demo-games.example")),
    (k.FLAVOR, flavor_pb2.Flavor(key=_FLAVOR, ram=2048, vcpus=2, disk=20)),
    (
        k.CLOUDLET,
        cloudlet_pb2.Cloudlet(
            key=_CLOUDLET,
            location=loc_pb2.Loc(latitude=52.52, longitude=13.405),
            ip_support=common_pb2.IP_SUPPORT_DYNAMIC,
            num_dynamic_ips=10,
        ),
    ),
    (k.CLUSTER, cluster_pb2.Cluster(key=_CLUSTER, default_flavor=_FLAVOR)),
    (
        k.APP,
        app_pb2.App(
            key=_APP,
            image_path="docker.io/library/nginx:1.27",
            image_type=app_pb2.IMAGE_TYPE_DOCKER,
            access_ports="tcp:80,http:443",
            default_flavor=_FLAVOR,
        ),
    ),
    (k.CLUSTER_INST, clusterinst_pb2.ClusterInst(key=_CLUSTER_INST, num_masters=1, num_nodes=2)),
    (
        k.APP_INST,
        app_inst_pb2.AppInst(
            key=app_inst_pb2.AppInstKey(app_key=_APP, cluster_inst_key=_CLUSTER_INST)
        ),
    ),
)


async def seed_demo_world(objects: EdgeObjects) -> bool:
    """Create the demo objects unless this database was seeded before; whether it seeded."""
    store = objects.store
    if await store.get(*DEMO_MARKER) is not None:
        return False
    for kind, obj in DEMO_WORLD:
        try:
            await objects.create(kind, obj)
        except Rejected as rejected:  # a user's object of that name wins
            log.info("demo: %s not created: %s", kind.describe(obj), rejected.message)
    await store.create(*DEMO_MARKER, b"")
    log.info("demo: seeded the edge world")
    return True


def demo_job(objects: EdgeObjects) -> Callable[[], Awaitable[None]]:
    """A leader job seeding the demo world once, then idling."""

    async def seed_edge_demo() -> None:
        await seed_demo_world(objects)
        await asyncio.Event().wait()

    return seed_edge_demo
