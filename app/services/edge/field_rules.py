"""What the edge controller's request fields may hold (see :mod:`app.rules.rule_book`)."""

from __future__ import annotations

from app.rules.field_rule import Rule
from app.rules.named_rules import NOT_NEGATIVE, REQUIRED
from app.rules.rule_book import RuleBook
from app.rules.text_patterns import ACCESS_PORT, IP_ADDRESS, listed
from app.services.edge import update_fields

# Edge object names: organisations like "AT&T", so upstream's object-name rule, not DNS labels.
EDGE_NAME = Rule(
    pattern=r"^[0-9A-Za-z]([-_0-9A-Za-z .&,!]*[-_0-9A-Za-z.&,!])?$",
    says="must start with a letter or digit, contain only letters, digits, spaces and -_.&,! "
    "and not end in a space",
    max_length=63,
)
EDGE_TOKEN = Rule(
    pattern=r"^[0-9A-Za-z][-_0-9A-Za-z.]*$",
    says="must be letters, digits and -_., starting with a letter or digit",
    max_length=63,
)

_EDGE = "edgeproto."


def _calls() -> dict[str, dict[str, Rule]]:
    """Creating, updating or deleting an edge object names every part of its key."""
    keys = {
        "Developer": ("key.name",),
        "Operator": ("key.name",),
        "Flavor": ("key.name",),
        "Cluster": ("key.name",),
        "App": ("key.developer_key.name", "key.name"),
        "Cloudlet": ("key.operator_key.name", "key.name"),
        "ClusterInst": (
            "key.cluster_key.name",
            "key.cloudlet_key.operator_key.name",
            "key.cloudlet_key.name",
            "key.developer",
        ),
    }
    keys["AppInst"] = tuple(f"key.app_key.{p[4:]}" for p in keys["App"]) + tuple(
        f"key.cluster_inst_key.{p[4:]}" for p in keys["ClusterInst"]
    )
    calls: dict[str, dict[str, Rule]] = {}
    for kind, paths in keys.items():
        for verb in ("Create", "Update", "Delete"):
            rules = dict.fromkeys(paths, REQUIRED)
            if verb == "Update":
                rules["fields"] = Rule(
                    min_items=1,
                    pattern=update_fields.pattern(update_fields.UPDATED[kind]),
                    says=f"names no field of {kind} an update may change (by name or number, "
                    "dotted for nested fields; not the key nor a field the controller sets)",
                )
            calls[f"{_EDGE}{kind}Api.{verb}{kind}"] = rules
    calls[_EDGE + "FlavorApi.CreateFlavor"] |= {"ram": REQUIRED, "vcpus": REQUIRED}
    calls[_EDGE + "NotifyApi.StreamNotice"] = {
        "action": Rule(note="The first notice of a stream is VERSION.")
    }
    for verb in ("Create", "Update"):
        calls[f"{_EDGE}AppInstApi.{verb}AppInst"]["key.cluster_inst_key.developer"] = Rule(
            required=True,
            note="The App's developer: an AppInst runs on its developer's ClusterInst.",
        )
    calls[_EDGE + "AppApi.CreateApp"]["default_flavor.name"] = REQUIRED
    exec_rules = {p.replace("key.", "app_inst_key.", 1): REQUIRED for p in keys["AppInst"]}
    for method in ("RunCommand", "SendLocalRequest"):
        calls[f"{_EDGE}ExecApi.{method}"] = {**exec_rules, "command": REQUIRED}
    for method in ("InjectCloudletInfo", "EvictCloudletInfo"):
        calls[f"{_EDGE}CloudletInfoApi.{method}"] = dict.fromkeys(keys["Cloudlet"], REQUIRED)
    return calls


RULES = RuleBook(
    fields={
        **{
            _EDGE + name: EDGE_NAME
            for name in (
                "DeveloperKey.name",
                "OperatorKey.name",
                "ClusterKey.name",
                "AppKey.name",
                "CloudletKey.name",
                "ClusterInstKey.developer",
                "NodeKey.name",
            )
        },
        _EDGE + "FlavorKey.name": EDGE_TOKEN,
        _EDGE + "AppKey.version": EDGE_TOKEN,
        "distributed_match_engine.Loc.latitude": Rule(minimum=-90, maximum=90),
        "distributed_match_engine.Loc.longitude": Rule(minimum=-180, maximum=180),
        _EDGE + "Cloudlet.num_dynamic_ips": NOT_NEGATIVE,
        _EDGE + "Cloudlet.static_ips": Rule(
            pattern=listed(IP_ADDRESS),
            says="must be comma-separated IP addresses (IPv4, or IPv6 without a zone)",
        ),
        _EDGE + "App.access_ports": Rule(
            pattern=listed(ACCESS_PORT),
            says="must be comma-separated proto:port pairs, proto tcp, udp or http and port "
            "1-65535",
        ),
        _EDGE + "ClusterInst.num_masters": Rule(maximum=16),
        _EDGE + "ClusterInst.num_nodes": Rule(maximum=1000),
        _EDGE + "Notice.any": Rule(
            note="An object of a type this server knows (by its `@type` URL), with that type's "
            "fields."
        ),
    },
    calls=_calls(),
)
