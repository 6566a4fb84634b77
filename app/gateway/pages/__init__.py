"""Static pages the gateway serves: Swagger UI at `/docs` and the dashboard at `/dashboard/`."""
