"""The container runtime API (`v1alpha.PublicAPI`): a read-only view of the scheduler's instances
as pods, with their images, events and logs."""
