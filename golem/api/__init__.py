"""The operator's HTTP surface: health, Prometheus metrics, the memory API, status,
decisions and a live dashboard, served by uvicorn inside the daemon's event loop.

Off unless ``[api] enabled = true``; loopback by default; every route but ``/healthz``
needs the bearer token (docs in README.md, "The operator API").
"""
