"""Plans and criteria: the navigator's stage plan, the investigation's stage plan, verdicts,
their prompts and parsers. The bottom layer of navcore: imports no other navcore subpackage.
"""
