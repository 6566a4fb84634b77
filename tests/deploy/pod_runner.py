"""Run Portico's container as the kubelet would, inside the mount and network namespaces that
``unshare`` made for it (tests/deploy/test_pod.py): every file system read-only but the pod's
volumes, the container's environment and ports, its probes asked, then SIGTERM.

Prints one JSON object: what each probe answered, the writes refused where no volume is, how
long the stop took and the server's log. Needs root in those namespaces (mount, ip).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import httpx
from grpc_health.v1 import health_pb2, health_pb2_grpc

START_SECONDS = 60.0


def main() -> None:
    job = json.loads(sys.argv[1])
    volumes = [Path(p) for p in job["volumes"]]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    # The volumes stay writable as mounts of their own; the rest goes read-only beneath them.
    for volume in volumes:
        subprocess.run(["mount", "--bind", str(volume), str(volume)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", "/"], check=True)
    report: dict[str, Any] = {"refused_writes": refused_writes(job["read_only"])}
    server = subprocess.Popen(
        [sys.executable, "-m", "app", "serve"],
        cwd=job["cwd"],
        env=job["env"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        report["probes"] = probe(job)
        stop_started = time.monotonic()
        server.send_signal(signal.SIGTERM)
        report["exit_code"] = server.wait(timeout=job["stop_seconds"])
        report["stop_seconds"] = time.monotonic() - stop_started
    except Exception as exc:  # reported with the server's log, which says why
        report["error"] = repr(exc)
    finally:
        if server.poll() is None:
            server.kill()
        report["log"] = server.communicate()[0]
    print(json.dumps(report))


def refused_writes(paths: list[str]) -> dict[str, str]:
    """What writing a file in each of ``paths`` gave: the error, or "written"."""
    found = {}
    for folder in paths:
        try:
            (Path(folder) / f".pod-runner-{os.getpid()}").write_text("x")
            found[folder] = "written"
        except OSError as exc:
            found[folder] = exc.strerror or str(exc)
    return found


def probe(job: dict[str, Any]) -> dict[str, Any]:
    """Each probe's answer once the startup probe passed; the gRPC health and /metrics too."""
    ports = job["ports"]
    base = f"http://127.0.0.1:{ports['http']}"
    answers: dict[str, Any] = {}
    with httpx.Client(timeout=5.0) as http:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                if http.get(base + job["startup"]).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"the startup probe never passed in {START_SECONDS} s")
            time.sleep(0.05)
        for kind in ("startup", "readiness", "liveness"):
            answers[kind] = http.get(base + job[kind]).status_code
        login = http.post(
            base + "/v1/auth:login",
            json={"username": "admin", "password": job["admin_password"]},
        )
        answers["login"] = login.status_code
        answers["metrics"] = http.get(f"http://127.0.0.1:{ports['metrics']}/metrics").status_code
    with grpc.insecure_channel(f"127.0.0.1:{ports['grpc']}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        reply = health.Check(health_pb2.HealthCheckRequest(), timeout=10)
        answers["grpc_health"] = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    return answers


if __name__ == "__main__":
    main()
