"""The one model interface: model names, prices (``pricing.yaml``), endpoints, routing, requests,
responses and typed tasks, the preflight. Imports ``run`` and ``planning``.
"""
