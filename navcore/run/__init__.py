"""What every run is made of: artifacts, the budget ledger, token usage and decisions, code tools,
findings and citations, subagents, decision-log compression. Imports only ``planning``.
"""
