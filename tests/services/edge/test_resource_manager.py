"""The simulated CRM on a manual clock: how long work takes scales with what is built."""

from __future__ import annotations

from pathlib import Path

from app.services.edge import kinds as k
from app.services.edge.objects import EdgeObjects
from app.services.edge.records import load
from app.services.edge.resource_manager import ResourceManager
from app.sim.clock import ManualClock
from app.store import ObjectStore
from gen.edgeproto import (
    cloudlet_pb2,
    cluster_pb2,
    clusterinst_pb2,
    common_pb2,
    developer_pb2,
    flavor_pb2,
    operator_pb2,
)
from tests.harness import run

CLOUDLET = cloudlet_pb2.CloudletKey(operator_key=operator_pb2.OperatorKey(name="op"), name="c1")


async def _steps_until_ready(
    objects: EdgeObjects, manager: ResourceManager, clock: ManualClock, flavor: str
) -> int:
    """Clock steps a two-node ClusterInst of ``flavor`` takes from create to READY."""
    inst = clusterinst_pb2.ClusterInst(flavor=flavor_pb2.FlavorKey(name=flavor), num_nodes=2)
    inst.key.cluster_key.name = "web"
    inst.key.cloudlet_key.CopyFrom(CLOUDLET)
    inst.key.developer = f"dev-{flavor}"
    await objects.create(k.CLUSTER_INST, inst)
    for steps in range(1, 100):
        clock.advance()
        await manager.advance_due()
        stored = await load(objects.store, k.CLUSTER_INST, inst.key)
        if stored.state == common_pb2.READY:
            return steps
    raise AssertionError("never READY")


def test_bigger_node_flavors_take_more_steps_per_node(tmp_path: Path):
    async def main() -> None:
        async with ObjectStore.open(f"sqlite:///{tmp_path / 'edge.db'}") as store:
            clock = ManualClock()
            objects = EdgeObjects(store, clock)
            manager = ResourceManager(store, clock)
            await objects.create(k.OPERATOR, operator_pb2.Operator(key=CLOUDLET.operator_key))
            await objects.create(k.CLUSTER, cluster_pb2.Cluster(key={"name": "web"}))
            for name, vcpus in (("small", 1), ("huge", 12)):
                flavor = flavor_pb2.Flavor(key={"name": name}, ram=1024, vcpus=vcpus, disk=10)
                await objects.create(k.FLAVOR, flavor)
                dev = developer_pb2.Developer(key={"name": f"dev-{name}"})
                await objects.create(k.DEVELOPER, dev)
            await objects.create(k.CLOUDLET, cloudlet_pb2.Cloudlet(key=CLOUDLET))
            for _ in range(10):
                clock.advance()
                await manager.advance_due()
            small = await _steps_until_ready(objects, manager, clock, "small")
            huge = await _steps_until_ready(objects, manager, clock, "huge")
            # Heat stack, two nodes, initialisation, ready; a node on the 16-vCPU node flavor takes
            # 4 steps, not 1.
            assert small == 5
            assert huge == small + 2 * 3

    run(main())
