"""Many runs at once: batch jobs and their shared budget pool, ``explore --branches``.
Imports every layer below it.
"""
