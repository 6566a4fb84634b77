"""Running a server: the settings' checks that need the machine (TLS files, free ports), then
the backend ``PORTICO_SERVER`` names (:mod:`app.server.backends`) serving the application
(``portico serve``'s or ``portico proxy``'s, :mod:`app.server.application`)."""

from __future__ import annotations

import contextlib
import dataclasses

from app.observe.logs import configure_logging
from app.server.application import Application
from app.server.backends import backend
from app.server.data_lock import data_folder_held
from app.server.listeners import claimed_ports
from app.server.process import STARTUP_REFUSALS, warn_unread_variables
from app.server.tls import check_tls_files
from app.settings.config import Settings


def serve(settings: Settings, application: Application) -> None:
    """Serve ``application`` as the settings say until a signal stops it; a start refused says
    why in one line."""
    configure_logging(settings.log_format)
    warn_unread_variables()
    try:
        check_tls_files(settings)
        ports = settings if application.own_grpc_port else _http_port_only(settings)
        with contextlib.ExitStack() as held:
            # The ports first: an address this machine does not have creates no data folder.
            held.enter_context(claimed_ports(ports))
            if application.one_per_data_folder:
                held.enter_context(data_folder_held(settings.data_dir))
            backend(settings.server)(settings, application)
    except STARTUP_REFUSALS as exc:
        raise SystemExit(f"portico: {exc}") from None


def _http_port_only(settings: Settings) -> Settings:
    """The settings of a server that listens on its HTTP port only, whatever the gRPC ones say."""
    return dataclasses.replace(settings, grpc_server="off")
