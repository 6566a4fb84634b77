"""The Kubernetes manifests of deploy/kubernetes as ``kubectl kustomize`` renders them."""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import ROOT, require

KUBERNETES = ROOT / "deploy" / "kubernetes"
OVERLAYS = ("single", "replicas", "replicas-external-database")
# The manifests use kustomize's components and patches as kustomize v5 reads them (kubectl 1.27
# and newer embed it). Debian bookworm's kubernetes-client is kubectl 1.20 with kustomize v2.0.3,
# which knows neither: it renders nothing here.
MIN_KUSTOMIZE = (5, 0)

Manifest = dict[str, Any]


def kubectl() -> str:
    """The kubectl to render with; skipped (failed under CI=true) without a recent enough one."""
    found = shutil.which("kubectl")
    if found is None:
        require("kubectl", "apt-get install kubernetes-client, or any kubectl 1.27 or newer")
    assert found is not None
    version = _kustomize_version(found)
    if version < MIN_KUSTOMIZE:
        require(
            f"kustomize v{MIN_KUSTOMIZE[0]} in kubectl",
            f"{found} embeds kustomize v{'.'.join(map(str, version))}: kubectl 1.27 or newer",
        )
    return found


@functools.cache
def _kustomize_version(kubectl: str) -> tuple[int, ...]:
    out = subprocess.run(
        [kubectl, "version", "--client", "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    ).stdout
    try:
        text = json.loads(out).get("kustomizeVersion", "")
    except json.JSONDecodeError:
        text = ""
    match = re.match(r"v?(\d+)\.(\d+)", text)
    return tuple(int(part) for part in match.groups()) if match else (0, 0)


@functools.cache
def _render(path: str) -> tuple[Manifest, ...]:
    result = subprocess.run(
        [kubectl(), "kustomize", path], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, f"kubectl kustomize {path}: {result.stderr}"
    # kustomize warns on stderr about what it will stop reading (deprecated fields): none here.
    assert not result.stderr.strip(), result.stderr
    return tuple(item for item in yaml.safe_load_all(result.stdout) if item)


def render(overlay: str) -> list[Manifest]:
    """Every object of ``overlays/<overlay>``."""
    # A copy: a test may change what it got.
    return copy.deepcopy(list(_render(str(KUBERNETES / "overlays" / overlay))))


def render_with(overlay: str, *components: str) -> list[Manifest]:
    """``overlay`` with more of ``components/`` added, as a user's own kustomization would."""
    return copy.deepcopy(list(_render_with(overlay, components)))


@functools.cache
def _render_with(overlay: str, components: tuple[str, ...]) -> tuple[Manifest, ...]:
    with tempfile.TemporaryDirectory() as folder:
        # kustomize takes only relative paths to other kustomizations.
        root = os.path.relpath(KUBERNETES, Path(folder).resolve())
        listed = "".join(f"  - {root}/components/{name}\n" for name in components)
        (Path(folder) / "kustomization.yaml").write_text(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            f"resources:\n  - {root}/overlays/{overlay}\ncomponents:\n{listed}"
        )
        return _render.__wrapped__(folder)


def one(manifests: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    """The only object of ``kind`` (and ``name``)."""
    found = [m for m in manifests if m["kind"] == kind and name in {None, m["metadata"]["name"]}]
    assert len(found) == 1, f"{len(found)} {kind} objects named {name or 'anything'}"
    return found[0]


def container(manifests: list[Manifest]) -> Manifest:
    """Portico's container in the Deployment."""
    (portico,) = one(manifests, "Deployment")["spec"]["template"]["spec"]["containers"]
    return portico


def environment(manifests: list[Manifest], secrets: dict[tuple[str, str], str]) -> dict[str, str]:
    """The container's environment as the kubelet would give it, each ``secretKeyRef`` read
    from ``secrets`` by (Secret, key); an optional one that is absent is left out."""
    env = {}
    for item in container(manifests)["env"]:
        if "value" in item:
            env[item["name"]] = item["value"]
            continue
        ref = item["valueFrom"]["secretKeyRef"]
        if (ref["name"], ref["key"]) in secrets:
            env[item["name"]] = secrets[ref["name"], ref["key"]]
        else:
            assert ref.get("optional"), f"no test value for the Secret {ref['name']}/{ref['key']}"
    return env


def ports(manifests: list[Manifest]) -> dict[str, int]:
    """The container's ports by name."""
    return {port["name"]: port["containerPort"] for port in container(manifests)["ports"]}
