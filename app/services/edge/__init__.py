"""The edge controller API (`edgeproto`): cloudlets, flavors, apps, instances and their
progress streams, over the store, with a simulated CRM."""
