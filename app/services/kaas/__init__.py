"""The KaaS API (`cnct.kaas.api`): clusters on simulated providers, their node pools and
kubeconfigs."""
