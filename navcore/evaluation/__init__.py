"""``navigator eval``'s pure logic: which commits become tasks, their goals and gold lines, and scoring.

The git reads that feed these live in ``activities/evaluation``; the benchmarks (``bench/``) import
the same rules, so there is one copy.
"""
