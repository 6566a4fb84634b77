"""The metrics APIs, computed from the simulated state (no sampling, no noise).

The messages carry a single number and no key (the document marks them TODO), so:

- ``ShowCloudletMetrics`` streams one ``CloudletMetrics`` per Cloudlet, in Cloudlet key order,
  with ``foo`` = the RAM in MB its ClusterInsts hold (its CloudletRefs ``used_ram``).
- ``ShowAppInstMetrics`` streams one ``AppInstMetrics`` per AppInst, in AppInst key order, with
  ``something`` = the RAM in MB of its flavor while it is READY, 0 otherwise.

As in every Show, non-empty request fields filter the results, and a tenant sees the metrics of
its own objects only.
"""

from __future__ import annotations

from collections.abc import Callable

from google.protobuf.message import Message

import app.services.edge.kinds as k
from app.services.edge import capacity
from app.services.edge.fields import matches
from app.services.edge.records import load_all
from app.store import Reader
from gen.edgeproto import app_inst_pb2, cloudlet_pb2, common_pb2

Visible = Callable[[Message], bool]  # by key: whether the caller may see the object


def _everything(key: Message) -> bool:
    return True


async def cloudlet_metrics(
    reader: Reader, wanted: cloudlet_pb2.CloudletMetrics, visible: Visible = _everything
) -> list[cloudlet_pb2.CloudletMetrics]:
    found = []
    for cloudlet in await load_all(reader, k.CLOUDLET):
        if not visible(cloudlet.key):
            continue
        refs = await capacity.cloudlet_refs(reader, cloudlet.key)
        metric = cloudlet_pb2.CloudletMetrics(foo=refs.used_ram)
        if matches(metric, wanted):
            found.append(metric)
    return found


async def app_inst_metrics(
    reader: Reader, wanted: app_inst_pb2.AppInstMetrics, visible: Visible = _everything
) -> list[app_inst_pb2.AppInstMetrics]:
    found = []
    for inst in await load_all(reader, k.APP_INST):
        if not visible(inst.key):
            continue
        ram = 0
        if inst.state == common_pb2.READY:
            ram = (await capacity.flavor_resources(reader, inst.flavor)).ram
        metric = app_inst_pb2.AppInstMetrics(something=ram)
        if matches(metric, wanted):
            found.append(metric)
    return found
