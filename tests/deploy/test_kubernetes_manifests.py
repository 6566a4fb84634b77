"""deploy/kubernetes renders, every object is one the API server accepts, and what the pods are
told (image, ports, probes, settings, volumes) is what Portico serves and reads.

Every overlay is rendered with ``kubectl kustomize`` and each object validated offline against
the Kubernetes API's own schemas (kubernetes-validate, strict: an unknown field fails) for the
oldest Kubernetes the manifests support and the newest the package knows. The custom resources
(CloudNativePG's Cluster, the Prometheus Operator's ServiceMonitor) have no built-in schema:
they are checked against the schemas in ``schemas/``, written from those operators' CRDs.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from app import __version__
from app.gateway.routes import HEALTH_PATHS
from app.observe.exposition import METRICS_PATH
from app.settings.config import OTHER_VARIABLES, Settings, variable
from tests.conftest import ROOT
from tests.deploy.manifests import (
    KUBERNETES,
    OVERLAYS,
    Manifest,
    container,
    environment,
    one,
    ports,
    render,
    render_with,
)

# Since 1.30 a preStop hook may sleep without a binary in the image (the sleep action's beta,
# on by default); the newest is the newest kubernetes-validate carries.
KUBERNETES_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
SCHEMAS = Path(__file__).parent / "schemas"
CUSTOM_SCHEMAS = {
    ("postgresql.cnpg.io/v1", "Cluster"): SCHEMAS / "cnpg-cluster.yaml",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SCHEMAS / "servicemonitor.yaml",
}
# Test values of the Secrets the pods read: (Secret, key) -> value.
SECRETS = {
    ("portico", "jwt-secret"): "x" * 48,
    ("portico", "admin-password"): "a-first-admin-password",
    ("portico-db-app", "uri"): "postgresql://portico:pw@portico-db-rw.portico:5432/portico",
    ("portico-database", "url"): "postgresql://portico:pw@db.example:5432/portico",
}
# Settings that hold a secret: never a literal value in a manifest.
SECRET_SETTINGS = {"PORTICO_JWT_SECRET", "PORTICO_DATABASE_URL", "PORTICO_ADMIN_PASSWORD"}
# What Portico needs between SIGTERM's grace and its exit (the store closing, the leader
# stepping down): the kubelet's SIGKILL must not come sooner.
EXIT_MARGIN_SECONDS = 5
PRODUCTION_DOCS = ROOT / "docs" / "operations" / "production.md"


def _validate(manifest: Manifest, version: str) -> None:
    custom = CUSTOM_SCHEMAS.get((manifest["apiVersion"], manifest["kind"]))
    if custom is not None:
        jsonschema.Draft202012Validator(yaml.safe_load(custom.read_text())).validate(manifest)
        return
    kubernetes_validate.validate(manifest, version, strict=True)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_is_valid_for_the_api_server(overlay: str, version: str) -> None:
    manifests = render_with(overlay, "service-monitor")
    kinds = {m["kind"] for m in manifests}
    assert {"Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"} <= kinds
    assert "ServiceMonitor" in kinds
    for manifest in manifests:
        _validate(manifest, version)


def test_a_misspelt_field_fails_validation() -> None:
    # Strict means strict: what a typo would leave silently unset is refused, in the built-in
    # kinds and in the custom resources alike.
    manifests = render("replicas")
    deployment = one(manifests, "Deployment")
    container(manifests)["readinesProbe"] = container(manifests).pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError, match="readinesProbe"):
        _validate(deployment, KUBERNETES_VERSIONS[0])
    cluster = one(manifests, "Cluster")
    cluster["spec"]["storage"]["sise"] = cluster["spec"]["storage"].pop("size")
    with pytest.raises(jsonschema.ValidationError, match="sise"):
        _validate(cluster, KUBERNETES_VERSIONS[0])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_image_is_the_one_the_dockerfile_builds_at_this_version(overlay: str) -> None:
    portico = container(render(overlay))
    assert portico["image"] == f"portico:{__version__}"
    # The image's own CMD (portico serve) and user run, not a command of the manifests'.
    assert "command" not in portico and "args" not in portico
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["portico", "serve"]' in dockerfile
    user = re.findall(r"^USER (\d+):(\d+)$", dockerfile, re.MULTILINE)[-1]
    pod = one(render(overlay), "Deployment")["spec"]["template"]["spec"]["securityContext"]
    assert (str(pod["runAsUser"]), str(pod["runAsGroup"])) == user


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_portico_variable_is_a_setting_that_accepts_its_value(overlay: str) -> None:
    env = environment(render(overlay), SECRETS)
    settings = {variable(f.name) for f in dataclasses.fields(Settings)}
    for name in env:
        if name.startswith("PORTICO_"):
            assert name in settings, f"{name} is no setting of portico serve"
            assert name not in OTHER_VARIABLES
    # Settings.from_env checks every value as `portico serve` does at start.
    Settings.from_env(env)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_ports_are_the_ones_the_settings_serve(overlay: str) -> None:
    manifests = render(overlay)
    settings = Settings.from_env(environment(manifests, SECRETS))
    # uvicorn (the default server): REST on the HTTP port, native gRPC on grpc.aio's port.
    assert settings.server == "uvicorn" and settings.grpc_listener
    assert ports(manifests) == {
        "http": settings.http_port,
        "grpc": settings.grpc_port,
        "metrics": settings.metrics_port,
    }
    # Listening where the kubelet and the Service reach them, not on the loopback.
    assert settings.http_host == settings.grpc_host == "0.0.0.0"
    service = one(manifests, "Service", "portico")
    by_name = {port["name"]: port for port in service["spec"]["ports"]}
    assert set(by_name) == {"http", "grpc"}
    assert all(by_name[name]["targetPort"] == name for name in by_name)
    # A gateway in front must speak HTTP/2 with prior knowledge to the gRPC port: appProtocol
    # says so. The HTTP port is HTTP/1.1 under uvicorn, which h2c would not reach.
    assert by_name["grpc"]["appProtocol"] == "kubernetes.io/h2c"
    assert by_name["http"]["appProtocol"] == "http"
    selector = service["spec"]["selector"]
    pod_labels = one(manifests, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= pod_labels.items()


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_probes_ask_portico_s_health_endpoints(overlay: str) -> None:
    portico = container(render(overlay))
    probes = {
        kind: portico[f"{kind}Probe"]["httpGet"] for kind in ("startup", "readiness", "liveness")
    }
    assert all(
        probe["path"] in HEALTH_PATHS and probe["port"] == "http" for probe in probes.values()
    )
    # Readiness follows the store and the shutdown; liveness only the process, so that an
    # outage of the database does not get every pod restarted.
    assert probes["readiness"]["path"] == "/readyz"
    assert probes["liveness"]["path"] == probes["startup"]["path"] == "/healthz"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_termination_outlasts_portico_s_drain(overlay: str) -> None:
    manifests = render(overlay)
    pod = one(manifests, "Deployment")["spec"]["template"]["spec"]
    settings = Settings.from_env(environment(manifests, SECRETS))
    pre_stop = container(manifests)["lifecycle"]["preStop"]["sleep"]["seconds"]
    # The kubelet's clock runs from the preStop hook's start; SIGTERM comes after it.
    needed = pre_stop + settings.shutdown_grace_seconds + EXIT_MARGIN_SECONDS
    assert pod["terminationGracePeriodSeconds"] >= needed
    assert pre_stop >= 1  # endpoints drop the pod while it still serves


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pods_meet_the_restricted_pod_security_standard(overlay: str) -> None:
    manifests = render(overlay)
    pod = one(manifests, "Deployment")["spec"]["template"]["spec"]
    portico = container(manifests)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert portico["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert pod["automountServiceAccountToken"] is False
    # Service links would add PORTICO_METRICS_PORT=tcp://... for the portico-metrics Service.
    assert pod["enableServiceLinks"] is False
    assert (
        one(manifests, "Namespace")["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        == "restricted"
    )
    assert portico["resources"]["requests"] and portico["resources"]["limits"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_writable_volumes_are_where_portico_writes(overlay: str) -> None:
    manifests = render(overlay)
    settings = Settings.from_env(environment(manifests, SECRETS))
    mounts = {m["mountPath"]: m["name"] for m in container(manifests)["volumeMounts"]}
    # The data folder (SQLite, the workers' metrics, a generated secret) and /tmp.
    assert set(mounts) == {str(settings.data_dir), "/tmp"}
    volumes = one(manifests, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert {v["name"] for v in volumes} == set(mounts.values())


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_no_secret_is_written_in_the_manifests(overlay: str) -> None:
    manifests = render_with(overlay, "service-monitor")
    assert not [m for m in manifests if m["kind"] == "Secret"]
    for item in container(manifests)["env"]:
        if item["name"] in SECRET_SETTINGS or "TOKEN" in item["name"]:
            assert "value" not in item and "secretKeyRef" in item["valueFrom"], item["name"]


def test_single_never_runs_two_pods_on_one_sqlite_file() -> None:
    manifests = render("single")
    deployment = one(manifests, "Deployment")["spec"]
    assert deployment["replicas"] == 1
    # A rolling update would start the new pod beside the old one, on the same file.
    assert deployment["strategy"] == {"type": "Recreate"}
    assert not [m for m in manifests if m["kind"] == "HorizontalPodAutoscaler"]
    env = environment(manifests, SECRETS)
    assert "PORTICO_DATABASE_URL" not in env  # SQLite in the data folder
    data = {v["name"]: v for v in deployment["template"]["spec"]["volumes"]}["data"]
    assert set(data) == {"name", "persistentVolumeClaim"}
    claim = one(manifests, "PersistentVolumeClaim", data["persistentVolumeClaim"]["claimName"])
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]


@pytest.mark.parametrize("overlay", ["replicas", "replicas-external-database"])
def test_replicas_share_one_postgresql_and_one_signing_secret(overlay: str) -> None:
    manifests = render(overlay)
    deployment = one(manifests, "Deployment")["spec"]
    assert deployment["replicas"] == 3
    # One new pod at a time, none taken away before its successor is ready.
    assert deployment["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    env = {item["name"]: item for item in container(manifests)["env"]}
    assert not env["PORTICO_JWT_SECRET"]["valueFrom"]["secretKeyRef"].get("optional")
    database = env["PORTICO_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    assert not database.get("optional")
    autoscaler = one(manifests, "HorizontalPodAutoscaler")["spec"]
    assert autoscaler["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": one(manifests, "Deployment")["metadata"]["name"],
    }
    assert autoscaler["minReplicas"] == deployment["replicas"] <= autoscaler["maxReplicas"]
    if overlay == "replicas":
        # The operator's Secret for the database's owner, named after the Cluster.
        cluster = one(manifests, "Cluster")
        assert database == {"name": f"{cluster['metadata']['name']}-app", "key": "uri"}
        assert cluster["spec"]["instances"] >= 2  # a standby to fail over to
    else:
        assert not [m for m in manifests if m["kind"] == "Cluster"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_disruption_budget_and_network_policy_select_the_pods(overlay: str) -> None:
    manifests = render(overlay)
    labels = one(manifests, "Deployment")["spec"]["template"]["metadata"]["labels"]
    budget = one(manifests, "PodDisruptionBudget")["spec"]
    assert budget["selector"]["matchLabels"].items() <= labels.items()
    assert budget["maxUnavailable"] == 1  # a drain never waits on the single pod for ever
    policy = one(manifests, "NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= labels.items()
    admitted = {port["port"] for rule in policy["ingress"] for port in rule["ports"]}
    assert admitted == set(ports(manifests))


def test_the_metrics_port_is_ready_for_a_service_monitor() -> None:
    manifests = render_with("replicas", "service-monitor")
    monitor = one(manifests, "ServiceMonitor")["spec"]
    (endpoint,) = monitor["endpoints"]
    assert endpoint["path"] == METRICS_PATH
    selected = [
        m
        for m in manifests
        if m["kind"] == "Service"
        and monitor["selector"]["matchLabels"].items() <= m["metadata"]["labels"].items()
    ]
    assert [s["metadata"]["name"] for s in selected] == ["portico-metrics"]
    (port,) = selected[0]["spec"]["ports"]
    assert port["name"] == endpoint["port"] and port["targetPort"] == "metrics"


def test_the_production_page_creates_every_secret_the_pods_read() -> None:
    text = PRODUCTION_DOCS.read_text()
    created = set()
    # Each command with its continuation lines.
    commands = re.findall(r"kubectl [^\n]*create secret generic (\S+)((?:\\\n|[^\n])*)", text)
    for name, rest in commands:
        created |= {(name, key) for key in re.findall(r"--from-literal=([\w-]+)=", rest)}
    operator_made = {("portico-db-app", "uri")}
    for overlay in OVERLAYS:
        for item in container(render(overlay))["env"]:
            ref = item.get("valueFrom", {}).get("secretKeyRef")
            if ref and (ref["name"], ref["key"]) not in operator_made:
                assert (ref["name"], ref["key"]) in created, f"{overlay}: {ref}"
    assert "overlays/single" in text and "overlays/replicas" in text
    assert (KUBERNETES / "overlays" / "replicas-external-database").is_dir()


def test_the_restore_pod_mounts_the_single_layout_s_claim_as_portico_s_user() -> None:
    (restore,) = yaml.safe_load_all((KUBERNETES / "restore" / "pod.yaml").read_text())
    for version in KUBERNETES_VERSIONS:
        _validate(restore, version)
    single = render("single")
    (volume,) = restore["spec"]["volumes"]
    claim = one(single, "PersistentVolumeClaim")["metadata"]["name"]
    assert volume["persistentVolumeClaim"]["claimName"] == claim
    assert restore["metadata"]["namespace"] == one(single, "Namespace")["metadata"]["name"]
    assert restore["spec"]["containers"][0]["image"] == container(single)["image"]
    ours = one(single, "Deployment")["spec"]["template"]["spec"]["securityContext"]
    theirs = restore["spec"]["securityContext"]
    # The files it copies in must stay the server's: the same user, group and volume group.
    assert [theirs[k] for k in ("runAsUser", "runAsGroup", "fsGroup")] == [
        ours[k] for k in ("runAsUser", "runAsGroup", "fsGroup")
    ]
