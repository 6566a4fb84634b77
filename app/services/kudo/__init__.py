"""The container scheduler API (`scheduler.NodeService`, `scheduler.InstanceService`): nodes that
register and stream their status, instances placed on them, with simulated nodes."""
