"""What ``portico serve`` (:mod:`app.main`) and ``portico proxy`` (:mod:`app.proxy`) are both
built from: the store and the gate, the authenticate hook, the gateway's options and readiness.
Below both assemblies; it knows no API."""
